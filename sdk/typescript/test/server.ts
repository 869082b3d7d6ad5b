// Starts a real realsyncd (embedded store, or the redis-server of
// startRedis) for the tests, built from this repository, on a free loopback
// port (or the REALSYNC_ADDR given).
import { execFileSync, spawn } from "node:child_process";
import { renameSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { chromium, type Browser } from "playwright-core";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const bin = path.join(root, "sdk/typescript/.bin/realsyncd");

let built = "";

// build (re)builds the binary as the image does (scripts/build-realsyncd.sh),
// once per test file (go build, even with nothing to do, took about a
// second of CPU at each server's start): into a file of this process's
// own, then renamed over .bin/realsyncd, so that test files run at once
// (node --test-concurrency) cannot write it together (a binary another is
// running keeps its file). CI builds it once and names it in REALSYNC_BIN.
function build(): string {
  if (process.env.REALSYNC_BIN) return process.env.REALSYNC_BIN;
  if (!built) {
    const mine = `${bin}.${process.pid}`;
    execFileSync(path.join(root, "scripts/build-realsyncd.sh"), [mine], { cwd: root, stdio: "inherit" });
    renameSync(mine, bin);
    built = bin;
  }
  return built;
}

export interface Server {
  url: string;
  logs(): string;
  stop(): Promise<void>;
  /** kill ends the server with SIGKILL (no graceful shutdown) and waits for it. */
  kill(): Promise<void>;
}

/** freePort returns a loopback port free at the time of asking, below the
 * kernel's ephemeral range (32768 and up by default), where the ports of
 * servers bound to port 0 and of every outgoing connection come from: CI
 * runs the Go tests beside these, and a port from there could be taken
 * between this check and the server's bind. */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const free = await new Promise<boolean>((resolve) => {
      const l = createServer();
      l.on("error", () => resolve(false));
      l.listen(port, "127.0.0.1", () => l.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error("no free loopback port below 32000");
}

export interface Redis {
  url: string;
  stop(): Promise<void>;
}

/** startRedis starts a redis-server on a free loopback port, without persistence. */
export async function startRedis(): Promise<Redis> {
  const port = await freePort();
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: ["ignore", "pipe", "inherit"] });
  process.on("exit", () => child.kill("SIGKILL"));
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("redis-server did not start:\n" + out)), 10000);
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString();
      if (/Ready to accept connections/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on("exit", (code) => reject(new Error(`redis-server exited with ${code}:\n${out}`)));
  });
  child.stdout.resume();
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.on("exit", () => resolve());
      child.kill("SIGTERM");
    }),
  };
}

export async function startServer(env: Record<string, string> = {}): Promise<Server> {
  const child = spawn(build(), [], {
    env: { ...process.env, REALSYNC_ADDR: "127.0.0.1:0", REALSYNC_REDIS_URL: "", REALSYNC_REDIS_CLUSTER_ADDRS: "",
      // streams left open end at once on stop(), not over the default
      // 10 s spread (REALSYNC_SSE_SHUTDOWN_SPREAD)
      REALSYNC_JWT_SECRET: "sdk-test", REALSYNC_LOG_LEVEL: "debug", REALSYNC_SSE_SHUTDOWN_SPREAD: "0", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  // Never outlive the test process, even when it fails before stop().
  process.on("exit", () => child.kill("SIGKILL"));
  let logs = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("realsyncd did not start:\n" + logs)), 20000);
    child.stderr.on("data", (b: Buffer) => {
      logs += b.toString();
      const m = /msg=listening addr=(\S+)/.exec(logs);
      if (m && /msg=ready/.test(logs)) { // connected to its store
        clearTimeout(timer);
        resolve(`${env.REALSYNC_TLS_CERT ? "https" : "http"}://${m[1]}`);
      }
    });
    child.on("exit", (code) => reject(new Error(`realsyncd exited with ${code}:\n${logs}`)));
  });
  const end = (signal: NodeJS.Signals) => new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.on("exit", () => resolve());
    child.kill(signal);
  });
  return { url, logs: () => logs, stop: () => end("SIGTERM"), kill: () => end("SIGKILL") };
}

/** eventually polls cond until it holds (or fails after timeoutMs, default 10 s). */
export async function eventually(cond: () => boolean, what: string, timeoutMs = 10000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * patience bounds a browser test's every wait (a page's load, an element, a
 * navigation): how long before what must happen is taken not to happen. It
 * is no claim of speed: CI runs the browser tests beside two lanes of Go
 * tests on two cores, where a page that loads in a fraction of a second
 * alone has taken over 10 s.
 */
export const patience = 30_000;

/** launchChromium starts Debian's headless Chromium (CHROMIUM overrides the
 * path) with the flags this machine's closed network needs: no background
 * networking, no component updates, no sync; and the extra flags given. */
export function launchChromium(...extra: string[]): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync", ...extra],
  });
}

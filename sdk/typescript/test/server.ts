// Starts a real realsyncd (embedded store) for the tests, built once from
// this repository, on a free loopback port.
import { execFileSync, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const bin = path.join(root, "sdk/typescript/.bin/realsyncd");

// build (re)builds the binary: go's cache makes it quick when nothing changed.
function build(): string {
  if (process.env.REALSYNC_BIN) return process.env.REALSYNC_BIN;
  execFileSync("go", ["build", "-o", bin, "./cmd/realsyncd"], { cwd: root, stdio: "inherit" });
  return bin;
}

export interface Server {
  url: string;
  logs(): string;
  stop(): Promise<void>;
}

export async function startServer(env: Record<string, string> = {}): Promise<Server> {
  const child = spawn(build(), [], {
    env: { ...process.env, REALSYNC_ADDR: "127.0.0.1:0", REALSYNC_REDIS_URL: "", REALSYNC_REDIS_CLUSTER_ADDRS: "",
      REALSYNC_JWT_SECRET: "sdk-test", REALSYNC_LOG_LEVEL: "debug", ...env },
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
        resolve(`http://${m[1]}`);
      }
    });
    child.on("exit", (code) => reject(new Error(`realsyncd exited with ${code}:\n${logs}`)));
  });
  return {
    url,
    logs: () => logs,
    stop: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.on("exit", () => resolve());
      child.kill("SIGTERM");
    }),
  };
}

/** eventually polls cond until it holds (or fails after 10 s). */
export async function eventually(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

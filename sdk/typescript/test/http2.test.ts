// The browser's per-origin connection budget (docs/OPERATIONS.md, "HTTP/2:
// TLS and h2c"), in headless Chromium: over HTTP/1.1 a page gets 6
// connections to an origin, so only 6 of 10 EventSources open; over HTTP/2
// (realsyncd with REALSYNC_TLS_CERT and REALSYNC_TLS_KEY) all 10 open, as
// streams of one connection.
import { after, before, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser } from "playwright-core";
import { launchChromium, patience, startServer, type Server } from "./server.js";

let dir: string;
let browser: Browser;
const servers: Server[] = [];

before(async () => {
  // a self-signed certificate for 127.0.0.1; Chromium is told to accept it
  dir = mkdtempSync(path.join(tmpdir(), "realsync-h2-"));
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", path.join(dir, "key.pem"),
    "-out", path.join(dir, "cert.pem")], { stdio: "ignore" });
  browser = await launchChromium("--ignore-certificate-errors");
});
after(async () => {
  await browser?.close();
  await Promise.all(servers.map((s) => s.stop()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** streams opens 10 lobby EventSources from a page of server's origin and
 * returns how many opened and the protocol of the page's API calls. It
 * waits (up to `patience`) for `expected` of them to open and have their
 * first event, then 2 s more for any other to open: a slow server shows
 * as fewer opened than expected only past `patience`. */
async function streams(server: Server, expected: number): Promise<{ opened: number; firstEvents: number; protocol: string }> {
  const page = await browser.newPage();
  page.setDefaultTimeout(patience);
  try {
    await page.goto(`${server.url}/healthz`); // a page of the origin that opens nothing itself
    return await page.evaluate(async ({ expected, patience }) => {
      const post = async (path: string, token?: string, body?: unknown) => {
        const res = await fetch(path, {
          method: "POST",
          headers: { "Content-Type": "application/json", ...(token ? { Authorization: `Bearer ${token}` } : {}) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
        return res.json();
      };
      const { token } = await post("/v1/auth/guest", undefined, { name: "tabs" });
      const tokens: string[] = [];
      for (let i = 0; i < 10; i++) tokens.push((await post("/v1/lobby/stream-token", token)).token);
      const entry = performance.getEntriesByType("resource").find((e) => e.name.endsWith("/v1/auth/guest"));
      const protocol = (entry as PerformanceResourceTiming | undefined)?.nextHopProtocol ?? "";
      let opened = 0;
      let firstEvents = 0;
      const sources = tokens.map((t) => {
        const es = new EventSource(`/v1/lobby/events?mode=tabs&token=${encodeURIComponent(t)}`);
        es.onopen = () => opened++;
        es.addEventListener("rooms", () => firstEvents++);
        return es;
      });
      const until = async (done: () => boolean, ms: number) => {
        for (const deadline = Date.now() + ms; !done() && Date.now() < deadline;) {
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      await until(() => opened >= expected && firstEvents >= expected, patience);
      await until(() => opened >= 10, 2000); // the rest, if the browser lets them open
      await until(() => firstEvents >= opened, patience);
      sources.forEach((es) => es.close());
      return { opened, firstEvents, protocol };
    }, { expected, patience });
  } finally {
    await page.close();
  }
}

it("over HTTP/1.1 only 6 of a page's 10 event streams open", async () => {
  const server = await startServer({ REALSYNC_RATE_LIMITS: "off" });
  servers.push(server);
  const got = await streams(server, 6);
  assert.deepEqual(got, { opened: 6, firstEvents: 6, protocol: "http/1.1" });
});

it("over HTTP/2 (TLS) all 10 open, each with its rooms list", async () => {
  const server = await startServer({ REALSYNC_RATE_LIMITS: "off", REALSYNC_TLS_CERT: path.join(dir, "cert.pem"),
    REALSYNC_TLS_KEY: path.join(dir, "key.pem") });
  servers.push(server);
  assert.match(server.url, /^https:/);
  const got = await streams(server, 10);
  assert.deepEqual(got, { opened: 10, firstEvents: 10, protocol: "h2" });
});

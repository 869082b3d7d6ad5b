// The SDK's browser entry in headless Chromium (the demo's bundle,
// web/static/realsync.js, as realsyncd serves it), with the browser's own
// EventSource: what only a real browser can show about live streams.
import { after, before, it } from "node:test";
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { launchChromium, patience, startServer, type Server } from "./server.js";

let server: Server;
let browser: Browser;

before(async () => {
  server = await startServer();
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

/** What demoRoom leaves on its page, as globals. */
interface Demo {
  /** the guest's RealSync, of the bundle realsyncd serves */
  rs: any;
  room: { id: string };
  /** the test's record of what its stream did */
  seq: string[];
  /** polls cond every 20 ms; after patience (server.ts) it throws, naming what and seq */
  until(cond: () => boolean, what: string): Promise<void>;
}

/**
 * demoRoom opens a page of the demo, its uncaught errors gathered in problems, on which the guest "chromium"
 * created a room: the page's globals are those of Demo.
 */
async function demoRoom(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  page.setDefaultTimeout(patience);
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(e.message));
  await page.goto(`${server.url}/demo/`);
  await page.evaluate(async (patience) => {
    const { RealSync } = await import(`${location.origin}/demo/realsync.js`);
    const rs = new RealSync({ baseUrl: location.origin });
    await rs.guest("chromium");
    const { room } = await rs.createRoom({ name: "r", mode: "m", region: "r" });
    const seq: string[] = [];
    const until = async (cond: () => boolean, what: string) => {
      for (const deadline = Date.now() + patience; !cond();) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${seq.join(" ")}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const demo: Demo = { rs, room, seq, until };
    Object.assign(globalThis, demo);
  }, patience);
  return { page, problems };
}

it("a reconnect that missed nothing says resumed at once (the server's resumed event), and changes nothing", async () => {
  const { page, problems } = await demoRoom();
  const got = await page.evaluate(async () => {
    const { rs, room, seq, until } = globalThis as unknown as Demo;
    const live = rs.live(room.id);
    live.on("change", (e: { type: string }) => seq.push(e.type));
    live.on("resumed", (r: { snapshot: boolean }) => seq.push(`resumed(${r.snapshot})`));
    live.on("error", (e: Error) => seq.push(`error(${e.message})`));
    await live.ready;
    await rs.patchState(room.id, { n: 1 });
    await until(() => live.state.n === 1, "the patch");
    const before = { id: live.lastEventId, version: live.version };
    live.reconnect();
    await until(() => seq.includes("resumed(false)"), "resumed"); // no room event follows
    const after = { id: live.lastEventId, version: live.version };
    live.close();
    return { seq, before, after };
  });
  assert.deepEqual(got.seq, ["snapshot", "state", "resumed(false)"]);
  assert.deepEqual(got.after, got.before);
  assert.deepEqual(problems, []);
  await page.close();
});

it("the page's online event, and a page visible again after being hidden idleTimeoutMs, reconnect and resume", async () => {
  const { page, problems } = await demoRoom();
  const got = await page.evaluate(async () => {
    const { rs, room, seq, until } = globalThis as unknown as Demo;
    let visibility = "visible"; // what document.visibilityState says (headless pages never hide)
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => visibility });
    const show = (v: string) => {
      visibility = v;
      document.dispatchEvent(new Event("visibilitychange"));
    };
    const live = rs.live(room.id, { idleTimeoutMs: 300 });
    live.on("open", () => seq.push("open"));
    live.on("resumed", (r: { snapshot: boolean }) => seq.push(`resumed(${r.snapshot})`));
    live.on("error", (e: Error) => seq.push(`error(${e.message})`));
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    await live.ready;
    dispatchEvent(new Event("online"));
    await until(() => seq.includes("resumed(false)"), "resumed after online");
    show("hidden");
    show("visible"); // hidden a moment: nothing to do
    show("hidden");
    await sleep(400);
    show("visible"); // hidden longer than idleTimeoutMs: the connection may be dead
    await until(() => seq.filter((s) => s === "resumed(false)").length === 2, "resumed after visible");
    await sleep(300);
    live.close();
    dispatchEvent(new Event("online")); // a closed stream stays closed
    await sleep(300);
    return seq;
  });
  assert.deepEqual(got, ["open", "open", "resumed(false)", "open", "resumed(false)"]);
  assert.deepEqual(problems, []);
  await page.close();
});

it("two tabs of one user (reject-new): the second tab's personal stream says SESSION_EXISTS, waits its Retry-After, opens after the first", async () => {
  // A short lease: the Retry-After of a refusal is the seconds until the first tab's lease runs out (1–3 s here).
  const strict = await startServer({ REALSYNC_SESSION_POLICY: "reject-new", REALSYNC_PRESENCE_TTL: "3s" });
  const context = await browser.newContext();
  try {
    const { token } = await (await fetch(`${strict.url}/v1/auth/guest`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name: "tabs" }),
    })).json() as { token: string };
    type Tab = { me: { close(): void }; seq: string[] };
    const tabs: Page[] = [];
    for (let i = 0; i < 2; i++) {
      const page = await context.newPage();
      page.setDefaultTimeout(patience);
      await page.goto(`${strict.url}/demo/`);
      await page.evaluate(async (token) => {
        const { RealSync } = await import(`${location.origin}/demo/realsync.js`);
        const me = new RealSync({ baseUrl: location.origin, token }).me("web");
        const seq: string[] = [];
        me.on("open", () => seq.push("open"));
        me.on("reconnecting", (r: { delayMs: number; error: { status: number; code: string; retryAfterMs?: number } }) =>
          seq.push(`reconnecting(${r.error.status} ${r.error.code}, waits its Retry-After: ${r.delayMs >= (r.error.retryAfterMs ?? Infinity)})`));
        Object.assign(globalThis, { me, seq });
      }, token);
      await page.waitForFunction(() => (globalThis as unknown as Tab).seq.length >= 1); // open, or refused
      tabs.push(page);
    }
    const [first, second] = tabs;
    assert.deepEqual(await first.evaluate(() => (globalThis as unknown as Tab).seq), ["open"]);
    await first.evaluate(() => (globalThis as unknown as Tab).me.close()); // the first tab's session ends
    await second.waitForFunction(() => (globalThis as unknown as Tab).seq.includes("open"));
    const seq = await second.evaluate(() => (globalThis as unknown as Tab).seq);
    assert.equal(seq.at(-1), "open", seq.join(" "));
    assert.ok(seq.length >= 2, seq.join(" "));
    for (const s of seq.slice(0, -1)) assert.equal(s, "reconnecting(409 SESSION_EXISTS, waits its Retry-After: true)", seq.join(" "));
  } finally {
    await context.close();
    await strict.stop();
  }
});

it("a device clock a day ahead: a guest token is not renewed before every request and stream", async () => {
  const page = await browser.newPage();
  page.setDefaultTimeout(patience);
  try {
    await page.clock.install({ time: new Date(Date.now() + 24 * 3600 * 1000) }); // the page's clock; time flows
    const asked: string[] = [];
    page.on("request", (r) => { if (r.url().includes("/v1/")) asked.push(`${r.method()} ${new URL(r.url()).pathname}`); });
    await page.goto(`${server.url}/demo/`);
    await page.evaluate(async () => {
      const { RealSync } = await import(`${location.origin}/demo/realsync.js`);
      const rs = new RealSync({ baseUrl: location.origin });
      await rs.guest("ahead");
      const { room } = await rs.createRoom({ name: "r", mode: "m", region: "r" });
      for (let i = 0; i < 3; i++) await rs.getRoom(room.id);
      const live = rs.live(room.id);
      await live.ready;
      live.close();
      // The page reloaded with the token kept: its age is unknown, so the first request
      // renews it; the answer tells the server's clock.
      const again = new RealSync({ baseUrl: location.origin, token: rs.token });
      for (let i = 0; i < 3; i++) await again.getRoom(room.id);
    });
    // To this clock the guest token's 24 h look spent; the server's tokens tell its clock
    // (their iat, as the server issued them): nothing is renewed for that.
    assert.deepEqual(asked.map((a) => a.replace(/rooms\/[^/]+/, "rooms/ID")), [
      "POST /v1/auth/guest", "POST /v1/rooms", "GET /v1/rooms/ID", "GET /v1/rooms/ID", "GET /v1/rooms/ID",
      "POST /v1/rooms/ID/stream-token", "GET /v1/rooms/ID/events",
      "POST /v1/auth/refresh", "GET /v1/rooms/ID", "GET /v1/rooms/ID", "GET /v1/rooms/ID",
    ]);
  } finally {
    await page.close();
  }
});

it("a page opened in the background (hidden from its start) reconnects and resumes when shown after idleTimeoutMs", async () => {
  const { page, problems } = await demoRoom();
  const got = await page.evaluate(async () => {
    const { rs, room, seq, until } = globalThis as unknown as Demo;
    let visibility = "hidden"; // a tab opened with a middle click: hidden before the stream starts
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => visibility });
    const live = rs.live(room.id, { idleTimeoutMs: 300 });
    live.on("open", () => seq.push("open"));
    live.on("resumed", (r: { snapshot: boolean }) => seq.push(`resumed(${r.snapshot})`));
    await live.ready;
    await new Promise((r) => setTimeout(r, 400));
    visibility = "visible";
    document.dispatchEvent(new Event("visibilitychange")); // shown after idleTimeoutMs hidden
    await until(() => seq.includes("resumed(false)"), "resumed after visible");
    live.close();
    return seq;
  });
  assert.deepEqual(got, ["open", "open", "resumed(false)"]);
  assert.deepEqual(problems, []);
  await page.close();
});

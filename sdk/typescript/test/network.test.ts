// A player on a bad network (a phone that changes networks, sleeps, loses
// its seat): the heartbeat watchdog of Node streams against scripted
// servers (a connection that goes silent, one that only sends heartbeats),
// the REST request timeout against a server that never answers, and,
// against a real realsyncd, a personal stream refused while another
// session holds the platform (reject-new) and a room stream whose player
// was removed while it was away.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import v8 from "node:v8";
import vm from "node:vm";
import { RealSync, RealSyncError } from "../src/index.js";
import { startProxy, type Proxy } from "./proxy.js";
import { record, type Log } from "./record.js";
import { eventually, startServer, type Server } from "./server.js";

/** A scripted HTTP server: serve answers each request (the nth, from 0), ending the response when it likes. */
interface Scripted {
  url: string;
  requests: http.IncomingMessage[];
  stop(): Promise<void>;
}
async function scripted(serve: (n: number, req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Scripted> {
  const requests: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req);
    serve(requests.length - 1, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    requests,
    stop: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const snapshot = (roomId: string) => JSON.stringify({
  type: "snapshot", roomId, version: 3, ts: new Date().toISOString(), stateVersion: 1, state: {},
  room: { id: roomId, name: "r", mode: "m", region: "r", status: "waiting", maxPlayers: 4, playerCount: 1, version: 3,
    createdAt: new Date().toISOString(), updatedAt: new Date().toISOString(), players: [] },
});

describe("the heartbeat watchdog (Node)", () => {
  it("a connection silent for idleTimeoutMs is dropped (reconnecting, NETWORK) and resumed with Last-Event-ID", async () => {
    const s = await scripted((_n, req, res) => {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      // As realsyncd: a request without Last-Event-ID gets the snapshot. On a
      // loaded machine the first answer (the process's first fetch) may come
      // later than idleTimeoutMs, and that connection is dropped unanswered:
      // the next one must get the snapshot, not a resume of nothing.
      if (req.headers["last-event-id"] !== "3") {
        res.write(`id: 3\nevent: snapshot\ndata: ${snapshot("r1")}\n\n`); // then nothing: a half-open connection
        return;
      }
      // the resumed connection stays alive (heartbeats): on a loaded machine
      // the checks below may come more than idleTimeoutMs after it resumed,
      // and a silent one would have been dropped again meanwhile
      res.write("event: resumed\ndata: {\"type\":\"resumed\"}\n\n");
      const beat = setInterval(() => res.write(": ping\n\n"), 50);
      res.on("close", () => clearInterval(beat));
    });
    const rs = new RealSync({ baseUrl: s.url, token: "t" });
    const live = rs.live("r1", { idleTimeoutMs: 300, backoff: { initialMs: 10, maxMs: 20 } });
    const log = record(live);
    let snapshots = 0;
    live.on("snapshot", () => snapshots++);
    try {
      await live.ready;
      await eventually(() => log.resumed.length === 1, "resumed after the silent connection", 5000);
      // Unloaded: ["", "3"]. Any connection dropped before its answer is
      // retried as it was (before the snapshot: none; after: "3").
      const ids = s.requests.map((r) => r.headers["last-event-id"] ?? "");
      const resumedAt = ids.indexOf("3");
      assert.ok(resumedAt > 0, JSON.stringify(ids));
      assert.deepEqual(ids, ids.map((_, i) => (i < resumedAt ? "" : "3")), JSON.stringify(ids));
      // the snapshot came once: the stream resumed, it did not start over
      // (the ids and the reconnections said, should a loaded machine ever
      // show otherwise: CI once saw 3 with load 35)
      assert.equal(snapshots, 1, JSON.stringify({ ids, reconnecting: log.reconnecting.map((e) => e.error.message), resumed: log.resumed }));
      // one reconnection a dropped connection; the last may not have sent
      // its request yet (CI once saw the resumed connection dropped too,
      // its event loop held past idleTimeoutMs by load, read between the
      // "reconnecting" and the request 10 to 20 ms later)
      const pending = log.reconnecting.length - (s.requests.length - 1);
      assert.ok(pending === 0 || pending === 1, JSON.stringify({ ids, reconnecting: log.reconnecting.length }));
      for (const { error: err } of log.reconnecting) {
        assert.equal(err.code, "NETWORK");
        assert.match(err.message, /no byte \(event or heartbeat\) for 300 ms/);
      }
      assert.deepEqual(log.closed, []);
    } finally {
      live.close();
      await s.stop();
    }
  });

  it("heartbeats (comments) keep a quiet connection; an answer that never comes is dropped too", async () => {
    let beats = 0;
    const s = await scripted((n, _req, res) => {
      if (n === 1) return; // no answer at all
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write(`id: 3\nevent: snapshot\ndata: ${snapshot("r2")}\n\n`);
      const beat = setInterval(() => {
        if (beats++ === 30) { // then the server's side of the connection is gone
          clearInterval(beat);
          res.destroy();
          return;
        }
        res.write(": ping\n\n");
      }, 100);
      res.on("close", () => clearInterval(beat));
    });
    const rs = new RealSync({ baseUrl: s.url, token: "t" });
    // 1.5 s: a stall of this one process (server and client alike) under a loaded
    // machine's CI must not pass for a silent connection
    const live = rs.live("r2", { idleTimeoutMs: 1500, backoff: { initialMs: 10, maxMs: 20 } });
    const log = record(live);
    try {
      await live.ready;
      await eventually(() => s.requests.length >= 3, "the attempt after the unanswered one", 15000);
      assert.ok(beats >= 30, `heartbeats sent: ${beats}`);
      // 30 heartbeats 100 ms apart, 3 s > idleTimeoutMs: the first connection
      // was not dropped until the server cut it; then the unanswered request was.
      assert.equal(log.reconnecting.length, 2, JSON.stringify(log.reconnecting.map((r) => r.error.message)));
      assert.doesNotMatch(log.reconnecting[0].error.message, /heartbeat/);
      assert.match(log.reconnecting[1].error.message, /no byte \(event or heartbeat\) for 1500 ms/);
    } finally {
      live.close();
      await s.stop();
    }
  });
});

describe("a room's state", () => {
  it("keeps a key __proto__ as a key, not its object's prototype", async () => {
    const s = await scripted((_n, _req, res) => {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write(`id: 3\nevent: snapshot\ndata: ${snapshot("r3")}\n\n`);
      const state = { type: "state", roomId: "r3", version: 4, ts: new Date().toISOString(), stateVersion: 2, playerId: 1,
        set: JSON.parse('{"__proto__":{"player_1_ready":true},"hp":1}'), del: [] };
      res.write(`id: 4\nevent: state\ndata: ${JSON.stringify(state)}\n\n`);
      const del = { ...state, version: 5, stateVersion: 3, set: {}, del: ["__proto__"] };
      res.write(`id: 5\nevent: state\ndata: ${JSON.stringify(del)}\n\n`);
    });
    const rs = new RealSync({ baseUrl: s.url, token: "t" });
    const live = rs.live("r3", { backoff: { initialMs: 10, maxMs: 20 } });
    const seen: unknown[] = [];
    live.on("state", () => seen.push(Object.getPrototypeOf(live.state), Object.keys(live.state).sort().join(","),
      (live.state as Record<string, unknown>).player_1_ready));
    try {
      await live.ready;
      await eventually(() => seen.length === 6, "both state events", 5000);
      assert.deepEqual(seen, [Object.prototype, "__proto__,hp", undefined, Object.prototype, "hp", undefined]);
    } finally {
      live.close();
      await s.stop();
    }
  });
});

describe("REST requests", () => {
  it("time out after requestTimeoutMs (NETWORK, the limit in the message), not the socket's minutes", { timeout: 20000 }, async () => {
    const s = await scripted(() => undefined); // accepts, reads, never answers
    try {
      const rs = new RealSync({ baseUrl: s.url, token: "t", requestTimeoutMs: 300 });
      // The garbage collector runs meanwhile: the limit must not depend on an object only it could take.
      v8.setFlagsFromString("--expose-gc");
      const gc = vm.runInNewContext("gc") as () => void;
      const collecting = setInterval(gc, 50);
      try {
        for (const call of [() => rs.getRoom("x"), () => rs.patchState("x", { a: 1 })]) {
          await assert.rejects(call(), (e) => e instanceof RealSyncError && e.code === "NETWORK" && e.status === 0 &&
            /no answer within 300 ms/.test(e.message));
        }
      } finally {
        clearInterval(collecting);
      }
      // The default is 30 s; 0 turns it off (the request is still waiting when the test gives up on it).
      const off = new RealSync({ baseUrl: s.url, token: "t", requestTimeoutMs: 0 });
      const pending = off.getRoom("x").then(() => "answered", () => "failed");
      const first = await Promise.race([pending, new Promise((r) => setTimeout(() => r("waiting"), 600))]);
      assert.equal(first, "waiting");
    } finally {
      await s.stop();
    }
  });
});

describe("REST requests through the app's own fetch", () => {
  it("time out after requestTimeoutMs whether or not that fetch passes the signal on; an aborted signal sends nothing", { timeout: 20000 }, async () => {
    const s = await scripted(() => undefined); // accepts, reads, never answers
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    const collecting = setInterval(gc, 50);
    try {
      const fetches: [string, typeof fetch][] = [
        // A logging wrapper as in auth.test.ts: Node's fetch loses the signal of a Request built with one.
        ["new Request(input, init)", (input, init) => fetch(new Request(input, init))],
        // A wrapper that keeps only the Request (openapi-fetch's has every header and the body).
        ["the Request alone", (input) => fetch(input)],
      ];
      for (const [name, f] of fetches) {
        const rs = new RealSync({ baseUrl: s.url, token: "t", requestTimeoutMs: 300, fetch: f });
        const outcome = await Promise.race([
          rs.getRoom("x").then(() => "answered", (e) => e instanceof RealSyncError && e.code === "NETWORK" &&
            /no answer within 300 ms/.test(e.message) ? "timed out" : `failed: ${String(e)}`),
          new Promise((r) => setTimeout(() => r("still waiting"), 5000)),
        ]);
        assert.equal(outcome, "timed out", name);
      }
      // A caller's signal aborted already: nothing is sent.
      const sent = s.requests.length;
      const rs = new RealSync({ baseUrl: s.url, token: "t", requestTimeoutMs: 300 });
      const aborted = AbortSignal.abort();
      await assert.rejects(rs.api.GET("/v1/rooms/{roomId}", { params: { path: { roomId: "x" } }, signal: aborted }),
        (e) => e instanceof Error && e.name === "AbortError");
      assert.equal(s.requests.length, sent);
    } finally {
      clearInterval(collecting);
      await s.stop();
    }
  });
});

describe("limits past setTimeout's longest delay (2^31-1 ms, 24.8 days; it runs a longer one at once)", () => {
  it("a requestTimeoutMs or idleTimeoutMs of Infinity, or past that delay, waits, rather than failing at once", async () => {
    const s = await scripted((_n, req, res) => {
      if (req.url?.includes("/events")) {
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        res.write(`id: 3\nevent: snapshot\ndata: ${snapshot("r4")}\n\n`); // then quiet
        return;
      }
      res.writeHead(200, { "Content-Type": "application/json" });
      setTimeout(() => res.end(JSON.stringify({ id: "r4" })), 50);
    });
    try {
      for (const ms of [Infinity, 2 ** 31]) {
        const rs = new RealSync({ baseUrl: s.url, token: "t", requestTimeoutMs: ms });
        assert.equal((await rs.getRoom("r4")).id, "r4", `requestTimeoutMs ${ms}`);
        const live = rs.live("r4", { idleTimeoutMs: ms, backoff: { initialMs: 10, maxMs: 20 } });
        const log = record(live);
        try {
          await live.ready;
          await new Promise((r) => setTimeout(r, 300)); // a watchdog run at once would have dropped it many times
          assert.deepEqual(log.reconnecting.map((r) => r.error.message), [], `idleTimeoutMs ${ms}`);
        } finally {
          live.close();
        }
      }
    } finally {
      await s.stop();
    }
  });
});

describe("against realsyncd", () => {
  let server: Server;
  let proxy: Proxy;
  before(async () => {
    server = await startServer({ REALSYNC_SESSION_POLICY: "reject-new", REALSYNC_DISCONNECT_GRACE: "300ms",
      REALSYNC_RATE_LIMITS: "off" }); // the test polls the room
    proxy = await startProxy(server.url);
  });
  after(async () => {
    await proxy.stop();
    await server.stop();
  });

  it("reject-new: a personal stream refused 409 SESSION_EXISTS retries until the other session ends, then opens", async () => {
    const first = new RealSync({ baseUrl: proxy.url });
    await first.guest("ann");
    const one = first.me("mobile");
    await one.ready;
    const second = new RealSync({ baseUrl: proxy.url, token: first.token }).me("mobile", { backoff: { initialMs: 50, maxMs: 200 } });
    const log = record(second);
    try {
      await eventually(() => log.reconnecting.length >= 2, "two refusals retried");
      for (const r of log.reconnecting) assert.equal(r.error.code, "SESSION_EXISTS");
      assert.deepEqual(log.closed, []);
      one.close(); // the phone's old session ends (or its lease lapses)
      await second.ready;
      assert.deepEqual(log.closed, []);
      assert.equal(typeof second.session, "string");
    } finally {
      one.close();
      second.close();
    }
  });

  /**
   * bobAway sets up a room stream cut off from the server (bob's phone call): the guests alice and bob
   * (through the proxy), a room alice created and bob joined, and bob's room stream, open, then dropped,
   * its attempts answered 503 by the proxy until back(); it resolves once the stream is reconnecting.
   * end(), for a finally, takes the proxy's interception off and closes the stream.
   */
  async function bobAway() {
    const alice = new RealSync({ baseUrl: proxy.url });
    await alice.guest("alice");
    const bob = new RealSync({ baseUrl: proxy.url });
    await bob.guest("bob");
    const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
    await bob.joinRoom(room.id);
    let away = false;
    proxy.intercept = (req) => away && req.url.startsWith(`/v1/rooms/${room.id}/events`) && req.headers.authorization === `Bearer ${bob.token}`
      ? { status: 503, body: "" } : undefined;
    const live = bob.live(room.id, { backoff: { initialMs: 50, maxMs: 100 } });
    const log = record(live);
    const end = () => {
      proxy.intercept = undefined;
      live.close();
    };
    try {
      await live.ready;
      away = true;
      proxy.drop();
      await eventually(() => log.reconnecting.length >= 1, "bob's stream reconnecting");
    } catch (e) {
      end();
      throw e;
    }
    return { alice, room, live, log, back: () => { away = false; }, end };
  }

  /** closedOnce fails unless log holds one close, for reason, with the error's status and code. */
  function closedOnce(log: Log, reason: string, status: number, code: string) {
    assert.equal(log.closed.length, 1);
    assert.equal(log.closed[0].reason, reason);
    assert.equal(log.closed[0].error?.status, status);
    assert.equal(log.closed[0].error?.code, code);
  }

  it("a room stream whose player was removed while away (grace ran out) ends as left, with the 403 NOT_A_MEMBER", async () => {
    const { alice, room, live, log, back, end } = await bobAway();
    try {
      // The grace (300 ms) runs out: bob is removed from the room.
      for (const deadline = Date.now() + 10000; (await alice.getRoom(room.id)).playerCount !== 1;) {
        assert.ok(Date.now() < deadline, "bob was not removed after the grace");
        await new Promise((res) => setTimeout(res, 100));
      }
      back();
      await eventually(() => live.closed, "bob's stream closed");
      closedOnce(log, "left", 403, "NOT_A_MEMBER");
    } finally {
      end();
    }
  });

  it("a public room's stream that finds the room deleted while away ends as room_closed, with the 404", async () => {
    const { alice, room, live, log, back, end } = await bobAway();
    try {
      assert.equal(room.visibility, "public");
      await alice.deleteRoom(room.id); // its room_closed goes to bob's personal stream; his room stream misses it
      back();
      await eventually(() => live.closed, "bob's stream closed");
      closedOnce(log, "room_closed", 404, "ROOM_NOT_FOUND");
    } finally {
      end();
    }
  });
});

describe("reconnect() from a listener", () => {
  // e.g. an app that retries at once on its own network signal: the failed attempt's retry is
  // superseded by reconnect(): no timer drops the new connection later to connect a third time.
  for (const [on, want] of [
    ["error", ["connecting", "error", "connecting", "open"]],
    ["reconnecting", ["connecting", "error", "reconnecting", "connecting", "open"]],
  ] as const) {
    it(`called by a listener of ${on} after a failed attempt, it replaces the retry`, async () => {
      const s = await scripted((n, _req, res) => {
        if (n === 0) {
          res.writeHead(503, { "Content-Type": "application/problem+json" });
          res.end(JSON.stringify({ type: "about:blank", title: "Unavailable", status: 503, code: "STORE_UNAVAILABLE" }));
          return;
        }
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        res.write(`id: 3\nevent: snapshot\ndata: ${snapshot("r3")}\n\n`); // then open for good
      });
      const rs = new RealSync({ baseUrl: s.url, token: "t" });
      const live = rs.live("r3", { backoff: { initialMs: 50, maxMs: 50 } });
      const seq: string[] = [];
      for (const k of ["connecting", "open", "reconnecting", "error", "closed"] as const) live.on(k, () => seq.push(k));
      live.on(on, () => live.reconnect());
      try {
        await live.ready;
        await new Promise((r) => setTimeout(r, 300)); // six backoff delays: a stale retry would have run
        assert.deepEqual(seq, want);
        assert.equal(s.requests.length, 2);
      } finally {
        live.close();
        await s.stop();
      }
    });
  }
});

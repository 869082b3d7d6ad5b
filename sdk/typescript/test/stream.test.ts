// Live streams that behave, against a real realsyncd behind a recording
// proxy: permanent errors end a stream with a typed error and no more
// requests; transient ones reconnect with growing, jittered delays (at
// least Retry-After, and a retry: line a stream ended with) and resume
// without losing or repeating an event, also across a killed and restarted
// server on a real Redis; in Node the identity token travels in a header,
// never in the URL.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { EventSource } from "eventsource";
import {
  backoffDelay, RealSync, RealSyncError, type EventSourceLike, type LiveOptions, type LiveStream,
} from "../src/index.js";
import { retryFields } from "../src/node.js";
import { startProxy, problem, type Canned, type Proxy, type Seen } from "./proxy.js";
import { record } from "./record.js";
import { eventually, freePort, startRedis, startServer, type Redis, type Server } from "./server.js";

let server: Server;
let proxy: Proxy;
before(async () => {
  server = await startServer();
  proxy = await startProxy(server.url);
});
after(async () => {
  await proxy.stop();
  await server.stop();
});

/** A "url" transport (as in browsers: stream tokens in the URL) over the eventsource package. */
const urlMode: LiveOptions = { eventSource: (url) => new EventSource(url) as unknown as EventSourceLike };

async function player(name: string, baseUrl = proxy.url): Promise<RealSync> {
  const c = new RealSync({ baseUrl });
  await c.guest(name);
  return c;
}

/** requests counts the proxy's requests on paths that end with suffix, from index from. */
function requests(suffix: string, from = 0): Seen[] {
  return proxy.seen.slice(from).filter((s) => new URL(s.url, "http://x").pathname.endsWith(suffix));
}

/** quiet waits past the delays a retry would take (bounded; then the test looks at what happened). */
const quiet = () => new Promise((r) => setTimeout(r, 1500));

describe("permanent errors end the stream", () => {
  for (const [mode, opts] of [["Node", {}], ["url", urlMode]] as const) {
    it(`${mode}: a room deleted before the stream opens: 404 ROOM_NOT_FOUND, ready rejects, no retry`, async () => {
      const alice = await player("alice");
      const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
      await alice.deleteRoom(room.id);
      const from = proxy.seen.length;
      const live = alice.live(room.id, { playerId: 1, ...opts });
      const log = record(live);
      await assert.rejects(live.ready, (e) => e instanceof RealSyncError && e.status === 404 && e.code === "ROOM_NOT_FOUND");
      assert.equal(live.closed, true);
      assert.equal(log.closed.length, 1);
      assert.equal(log.closed[0].reason, "error");
      assert.equal(log.closed[0].error?.code, "ROOM_NOT_FOUND");
      assert.deepEqual(log.reconnecting, []);
      await quiet();
      const path = mode === "Node" ? "/events" : "/stream-token";
      assert.equal(requests(path, from).length, 1, `requests after the 404: ${JSON.stringify(proxy.seen.slice(from))}`);
    });

    it(`${mode}: a kicked player's stream ends with its own player_left (left), whether or not it knows who it is`, async () => {
      const alice = await player("alice");
      const bob = await player("bob");
      const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
      const { playerId } = await bob.joinRoom(room.id);
      const knows = bob.live(room.id, { playerId, ...opts });
      const remembered = bob.live(room.id, opts); // bob's client remembers its playerId from joinRoom
      // Clients that never joined (the same identities): they cannot tell whose player_left it is.
      const anon = new RealSync({ baseUrl: proxy.url, token: bob.token }).live(room.id, opts);
      const owner = new RealSync({ baseUrl: proxy.url, token: alice.token }).live(room.id, opts);
      const [kl, rl, al, ol] = [knows, remembered, anon, owner].map((s) => record(s));
      await Promise.all([knows.ready, remembered.ready, anon.ready, owner.ready]);
      assert.equal(remembered.playerId, playerId);
      assert.equal(anon.playerId, undefined);
      const from = proxy.seen.length;
      await alice.kick(room.id, playerId);
      await eventually(() => knows.closed && remembered.closed && anon.closed, "bob's streams closed");
      assert.deepEqual(kl.closed, [{ reason: "left" }]);
      assert.deepEqual(rl.closed, [{ reason: "left" }]);
      // The anonymous stream reconnected once, was refused (403 NOT_A_MEMBER): its own player_left.
      assert.deepEqual(al.closed, [{ reason: "left" }]);
      assert.deepEqual(kl.reconnecting.concat(rl.reconnecting), []);
      await quiet();
      const path = mode === "Node" ? "/events" : "/stream-token";
      assert.equal(requests(path, from).length, 1, `requests after the kick: ${JSON.stringify(proxy.seen.slice(from))}`);
      // Someone else's player_left followed by a reconnection that is not refused: the owner's stream goes on.
      owner.reconnect();
      await alice.patchState(room.id, { after: 1 });
      await eventually(() => owner.state.after === 1, "the owner's stream after the kick");
      assert.equal(owner.closed, false);
      assert.deepEqual(ol.closed, []);
      owner.close();
    });

    it(`${mode}: a player that leaves ends its stream (left) without saying its playerId`, async () => {
      const bob = await player("bob");
      const { room } = await bob.quickJoin({ mode: `leave-${mode.toLowerCase()}`, regions: ["r"], create: { name: "q", maxPlayers: 2 } });
      const live = bob.live(room.id, opts);
      const log = record(live);
      await live.ready;
      await bob.leaveRoom(room.id);
      await eventually(() => live.closed, "closed");
      assert.deepEqual(log.closed, [{ reason: "left" }]);
      assert.deepEqual(log.reconnecting, []);
      assert.deepEqual(log.error, []);
    });
  }

  it("a 401 renews the token once, then ends the stream (401 UNAUTHENTICATED)", async () => {
    const c = new RealSync({ baseUrl: proxy.url, token: "not-a-token" });
    const from = proxy.seen.length;
    const lobby = c.lobby();
    const log = record(lobby);
    await assert.rejects(lobby.ready, (e) => e instanceof RealSyncError && e.status === 401 && e.code === "UNAUTHENTICATED");
    await quiet();
    assert.deepEqual(proxy.seen.slice(from).map((s) => `${s.method} ${new URL(s.url, "http://x").pathname}`),
      ["GET /v1/lobby/events", "POST /v1/auth/refresh"]);
    assert.equal(log.closed[0].reason, "error");
  });
});

it("Node: a 200 that is not an event stream is permanent, naming its content type", async () => {
  const alice = await player("alice");
  const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
  proxy.intercept = (s) => s.url.includes(`/v1/rooms/${room.id}/events`)
    ? { status: 200, headers: { "Content-Type": "text/html; charset=utf-8" }, body: "<html>captive portal</html>" }
    : undefined;
  const from = proxy.seen.length;
  const live = alice.live(room.id, { backoff: { initialMs: 5, maxMs: 50 } });
  const log = record(live);
  try {
    await eventually(() => live.closed, "the stream's end", 5000);
    await assert.rejects(live.ready, (e) => e instanceof RealSyncError && e.status === 200 &&
      /200 with content type text\/html; charset=utf-8, not an event stream/.test(e.message));
    assert.equal(log.closed.length, 1);
    assert.equal(log.closed[0].reason, "error");
    assert.equal(log.closed[0].error?.status, 200);
    assert.deepEqual(log.reconnecting, []);
    await quiet();
    assert.equal(requests("/events", from).length, 1);
  } finally {
    proxy.intercept = undefined;
    live.close();
  }
});

describe("listeners that throw", () => {
  for (const [mode, opts] of [["Node", {}], ["url", urlMode]] as const) {
    it(`${mode}: are reported as error events (LISTENER); the other listeners run, the stream goes on and ends`, async () => {
      const alice = await player("alice");
      const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
      const live = alice.live(room.id, opts);
      const log = record(live);
      const seen: unknown[] = [];
      live.on("state", () => {
        throw new Error("a bug in a state listener");
      });
      live.on("state", () => seen.push(live.state.n));
      // an async listener's rejection (the README's invite handler, a 409 to
      // acceptInvite): unhandled, it ended the Node process
      live.on("state", async () => {
        await Promise.resolve();
        throw new Error("an async state listener rejected");
      });
      live.on("room_closed", () => {
        throw new Error("a bug in a room_closed listener");
      });
      live.on("room_closed", (e) => seen.push(e.reason));
      try {
        await live.ready;
        await alice.patchState(room.id, { n: 1 });
        await alice.patchState(room.id, { n: 2 });
        await eventually(() => seen.length === 2, "both patches");
        await alice.deleteRoom(room.id);
        await eventually(() => live.closed, "closed on room_closed");
      } finally {
        live.close(); // a no-op once closed
      }
      assert.deepEqual(seen, [1, 2, "closed"]);
      assert.deepEqual(log.closed, [{ reason: "room_closed" }]);
      const thrown = log.error.filter((e) => e.code === "LISTENER");
      assert.deepEqual(thrown.map((e) => e.message).sort(), [
        'a "room_closed" listener threw: a bug in a room_closed listener',
        'a "state" listener threw: a bug in a state listener',
        'a "state" listener threw: a bug in a state listener',
        'a "state" listener threw: an async state listener rejected',
        'a "state" listener threw: an async state listener rejected',
      ]);
      assert.ok(thrown.every((e) => e.cause instanceof Error && e.status === 0));
      assert.equal(log.error.length, thrown.length, "no other error");
    });
  }
});

describe("transient errors reconnect", () => {
  it("Node: 429 waits Retry-After, then opens; the token goes in a header, never in the URL", async () => {
    const alice = await player("alice");
    const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
    let refused = 0;
    proxy.intercept = (s) => s.url.includes(`/v1/rooms/${room.id}/events`) && refused++ === 0
      ? { status: 429, headers: { "Retry-After": "1" }, body: problem(429, "STREAM_OPENS_LIMITED", "Slow down.") }
      : undefined;
    const from = proxy.seen.length;
    const live = alice.live(room.id, { playerId: 1, backoff: { random: () => 0 } });
    const log = record(live);
    try {
      await live.ready;
      assert.equal(log.reconnecting.length, 1);
      const r = log.reconnecting[0];
      assert.equal(r.delayMs, 1000); // the jitter alone would have said 0
      assert.equal(r.attempt, 2);
      assert.equal(r.error.status, 429);
      assert.equal(r.error.code, "STREAM_OPENS_LIMITED");
      assert.deepEqual(log.connecting, [{ attempt: 1 }, { attempt: 2 }]);
      assert.deepEqual(log.open, [{}]);

      await alice.patchState(room.id, { n: 1 });
      await eventually(() => live.state.n === 1, "the patch");
      const seenId = live.lastEventId;
      live.reconnect();
      await alice.patchState(room.id, { n: 2 });
      await eventually(() => live.state.n === 2, "the patch after the reconnect");

      const opens = requests("/events", from);
      assert.equal(opens.length, 3);
      for (const o of opens) {
        const q = new URL(o.url, "http://x").searchParams;
        assert.equal(q.get("token"), null, `a token in ${o.url}`);
        assert.equal(q.get("access_token"), null, `a token in ${o.url}`);
        assert.equal(o.headers.authorization, `Bearer ${alice.token}`);
      }
      assert.equal(opens[2].headers["last-event-id"], seenId);
      assert.equal(requests("/stream-token", from).length, 0, "Node needs no stream token");
    } finally {
      proxy.intercept = undefined;
      live.close();
    }
  });

  it("url: 429 on the stream token waits Retry-After; the stream token goes in the URL", async () => {
    const alice = await player("alice");
    let refused = 0;
    proxy.intercept = (s) => s.url.startsWith("/v1/lobby/stream-token") && refused++ === 0
      ? { status: 429, headers: { "Retry-After": "1" }, body: problem(429, "RATE_LIMITED", "Slow down.") }
      : undefined;
    const from = proxy.seen.length;
    const lobby = alice.lobby({}, { ...urlMode, backoff: { random: () => 0 } });
    const log = record(lobby);
    try {
      await lobby.ready;
      assert.deepEqual(log.reconnecting.map((r) => [r.delayMs, r.error.code]), [[1000, "RATE_LIMITED"]]);
      const [open] = requests("/events", from);
      const token = new URL(open.url, "http://x").searchParams.get("token");
      assert.ok(token && token !== alice.token, "a stream token in the URL");
      assert.equal(open.headers.authorization, undefined);
    } finally {
      proxy.intercept = undefined;
      lobby.close();
    }
  });

  it("url: a stream refused with a status (EventSource hides it) reports the server's code and waits its Retry-After", async () => {
    const alice = await player("alice");
    const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
    // The server refuses every open with the first stream token, as it would
    // a user past REALSYNC_MAX_STREAMS_PER_USER until one of theirs ends.
    let first: string | null | undefined;
    proxy.intercept = (s) => {
      const u = new URL(s.url, "http://x");
      if (!u.pathname.endsWith("/events")) return undefined;
      first ??= u.searchParams.get("token");
      return u.searchParams.get("token") === first
        ? { status: 429, headers: { "Retry-After": "1" }, body: problem(429, "STREAM_LIMIT", "Too many streams.") }
        : undefined;
    };
    const live = alice.live(room.id, { ...urlMode, playerId: 1, backoff: { random: () => 0 } });
    const log = record(live);
    try {
      await live.ready;
      assert.deepEqual(log.reconnecting.map((r) => [r.delayMs, r.error.status, r.error.code]), [[1000, 429, "STREAM_LIMIT"]]);
      assert.deepEqual(log.open, [{}]);
    } finally {
      proxy.intercept = undefined;
      live.close();
    }
  });

  it("url: a personal stream refused, then opened by the request that reads why, loses none of the messages waiting for it", async () => {
    // The refusal lifts between EventSource's refused open and the request
    // that reads why (eventSourceTransport), which then opens the stream:
    // the messages written to it count as delivered, so they must reach the
    // client through it, not be dropped with it.
    const bob = new RealSync({ baseUrl: proxy.url });
    const { userId } = await bob.guest("bob");
    const sender = await player("sender");
    const sent = 5;
    for (let i = 0; i < sent; i++) await sender.sendDirectMessage(userId, { type: "chat", data: { i } });
    let refused = 0;
    proxy.intercept = (s) => new URL(s.url, "http://x").pathname.endsWith("/v1/me/events") && refused++ === 0
      ? { status: 409, headers: { "Retry-After": "1" }, body: problem(409, "SESSION_EXISTS", "A session of this platform is open.") }
      : undefined;
    const me = bob.me("web", { ...urlMode, backoff: { random: () => 0 } });
    const got: number[] = [];
    me.on("message", (m) => got.push((m.message.data as { i: number }).i));
    try {
      await me.ready;
      await eventually(() => got.length >= sent, `the ${sent} messages (got ${JSON.stringify(got)})`);
      assert.deepEqual([...new Set(got)].sort(), [0, 1, 2, 3, 4]);
    } finally {
      proxy.intercept = undefined;
      me.close();
    }
  });

  it("url: a stream token refused 401 (it expired while the connection waited) is replaced at once, the identity token kept", async () => {
    const alice = await player("alice");
    const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
    // The first connection is refused, and so is the request that reads why (eventSourceTransport).
    let refused = 0;
    proxy.intercept = (s) => new URL(s.url, "http://x").pathname.endsWith("/events") && refused++ < 2
      ? { status: 401, body: problem(401, "UNAUTHENTICATED", "Invalid stream token (expired).") }
      : undefined;
    const token = alice.token;
    const from = proxy.seen.length;
    const live = alice.live(room.id, { ...urlMode, playerId: 1, backoff: { random: () => 0 } });
    const log = record(live);
    try {
      await live.ready;
      assert.deepEqual(log.reconnecting.map((r) => [r.delayMs, r.error.status, r.error.code]), [[0, 401, "UNAUTHENTICATED"]]);
      assert.equal(alice.token, token);
      assert.deepEqual(requests("/v1/auth/refresh", from), []);
    } finally {
      proxy.intercept = undefined;
      live.close();
    }
  });

  it("url: a caller-supplied stream token is asked for before every connection", async () => {
    const alice = await player("alice");
    const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
    const issued: string[] = [];
    const streamToken = async () => {
      const t = (await alice.roomStreamToken(room.id)).token; // as a game's backend would hand it out
      issued.push(t);
      return t;
    };
    const from = proxy.seen.length;
    const live = alice.live(room.id, { ...urlMode, playerId: 1, streamToken });
    try {
      await live.ready;
      live.reconnect();
      await eventually(() => issued.length === 2 && requests("/events", from).length === 2, "the second connection");
      assert.deepEqual(requests("/events", from).map((s) => new URL(s.url, "http://x").searchParams.get("token")), issued);
    } finally {
      live.close();
    }
  });

  for (const [stableMs, after] of [[0, 10], [60000, 80]]) {
    it(`backoff starts over after a stream stayed open stableMs (${stableMs}): ${after} ms after the drop`, async () => {
      const alice = await player("alice");
      let refused = 0;
      proxy.intercept = (s) => s.url.startsWith("/v1/lobby/events") && refused++ < 3
        ? { status: 503, body: problem(503, "STORE_UNAVAILABLE", "The store cannot be reached; retry later.") }
        : undefined;
      const lobby = alice.lobby({}, { backoff: { initialMs: 10, maxMs: 1000, stableMs, random: () => 1 } });
      const log = record(lobby);
      try {
        await lobby.ready;
        proxy.drop(); // the stream ends under the client: a transient error
        await eventually(() => log.open.length === 2, "open again");
        // 503 three times (10, 20, 40), open, dropped: 10 when the open
        // stream counted as stable, else the next doubling (80).
        assert.deepEqual(log.reconnecting.map((r) => r.delayMs), [10, 20, 40, after]);
        assert.deepEqual(log.reconnecting.map((r) => r.error.status), [503, 503, 503, 0]);
        assert.deepEqual(log.resumed, [{ snapshot: true }]);
      } finally {
        proxy.intercept = undefined;
        lobby.close();
      }
    });
  }

  it("backoff delays double to the cap, with full jitter", async () => {
    // The table: cap = min(max, initial·2^(n−1)), the delay random·cap.
    const o = { initialMs: 500, maxMs: 30000 };
    for (const [n, random, want] of [[1, 1, 500], [2, 1, 1000], [3, 0.5, 1000], [7, 1, 30000], [20, 1, 30000], [4, 0, 0]]) {
      assert.equal(backoffDelay(n, { ...o, random: () => random }), want, `failure ${n}, random ${random}`);
    }
    // A server that is not there: the delays a stream reports.
    const c = new RealSync({ baseUrl: `http://127.0.0.1:${await freePort()}` });
    const caps = [10, 20, 40, 80, 80, 80, 80, 80];
    const top = c.lobby({}, { backoff: { initialMs: 10, maxMs: 80, random: () => 1 } });
    const jittered = c.lobby({}, { backoff: { initialMs: 10, maxMs: 80 } });
    const tl = record(top);
    const jl = record(jittered);
    try {
      await eventually(() => tl.reconnecting.length >= caps.length && jl.reconnecting.length >= caps.length, "reconnects");
      assert.deepEqual(tl.reconnecting.slice(0, caps.length).map((r) => r.delayMs), caps);
      assert.deepEqual(tl.reconnecting.slice(0, 3).map((r) => r.attempt), [2, 3, 4]);
      assert.ok(tl.reconnecting.every((r) => r.error.code === "NETWORK" && r.error.status === 0));
      const delays = jl.reconnecting.slice(0, caps.length).map((r) => r.delayMs);
      delays.forEach((d, i) => assert.ok(d >= 0 && d <= caps[i], `delay ${i} ${d} over its cap ${caps[i]}`));
      assert.notDeepEqual(delays, caps, "no jitter");
      assert.equal(top.closed, false);
    } finally {
      top.close();
      jittered.close();
    }
    assert.deepEqual(tl.closed, [{ reason: "closed" }]);
    await assert.rejects(top.ready, (e) => e instanceof RealSyncError && e.code === "CLOSED");
  });
});

describe("resumed", () => {
  for (const [mode, opts] of [["Node", {}], ["url", urlMode]] as const) {
    it(`${mode}: comes at once after a reconnect that missed nothing (the server's resumed event), and changes nothing`, async () => {
      const alice = await player("alice");
      const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
      const live = alice.live(room.id, opts);
      const log = record(live);
      const seq: string[] = [];
      live.on("change", (e) => seq.push((e as { type: string }).type));
      live.on("resumed", (r) => seq.push(`resumed(${r.snapshot})`));
      try {
        await live.ready;
        await alice.patchState(room.id, { n: 1 });
        await eventually(() => live.state.n === 1, "the patch");
        const [id, version] = [live.lastEventId, live.version];
        live.reconnect();
        // No room event follows: the resumed event alone says the reconnection lost nothing.
        await eventually(() => log.resumed.length === 1, "resumed");
        assert.deepEqual(log.resumed, [{ snapshot: false }]);
        assert.deepEqual(seq, ["snapshot", "state", "resumed(false)"]);
        assert.equal(live.lastEventId, id);
        assert.equal(live.version, version);
        await alice.patchState(room.id, { n: 2 });
        await eventually(() => live.state.n === 2, "the patch after the reconnect");
        assert.deepEqual(seq, ["snapshot", "state", "resumed(false)", "state"]);
        assert.notEqual(live.lastEventId, id);
        // The next reconnect resumes from the last room event, not from the resumed event.
        const from = proxy.seen.length;
        const last = live.lastEventId;
        live.reconnect();
        await eventually(() => log.resumed.length === 2, "resumed again");
        assert.deepEqual(log.resumed[1], { snapshot: false });
        const [again] = requests("/events", from);
        const sent = mode === "Node" ? again.headers["last-event-id"] : new URL(again.url, "http://x").searchParams.get("lastEventId");
        assert.equal(sent, last);
        assert.deepEqual(log.error, []);
      } finally {
        live.close();
      }
    });
  }

  it("says snapshot when the server could not replay", async () => {
    const alice = await player("alice");
    const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
    const live = alice.live(room.id, { playerId: 1 });
    const log = record(live);
    try {
      await live.ready;
      await alice.patchState(room.id, { n: 1 });
      await eventually(() => live.state.n === 1, "the patch");
      live.reconnect(); // nothing missed: replayed from the log
      await alice.patchState(room.id, { n: 2 });
      await eventually(() => log.resumed.length === 1, "resumed");
      assert.deepEqual(log.resumed, [{ snapshot: false }]);
      live.lastEventId = "999999"; // a history the server does not have: it must start over
      live.reconnect();
      await eventually(() => log.resumed.length === 2, "resumed again");
      assert.deepEqual(log.resumed[1], { snapshot: true });
      assert.equal(live.state.n, 2);
      assert.deepEqual(log.reconnecting, [], "a reconnect() is not a failure");
    } finally {
      live.close();
    }
  });
});

describe("a killed server", () => {
  let redis: Redis;
  before(async () => (redis = await startRedis()));
  after(async () => redis.stop());

  it("reconnects with growing delays, resumes from the log, loses and repeats nothing", async () => {
    const addr = `127.0.0.1:${await freePort()}`;
    const env = { REALSYNC_REDIS_URL: redis.url, REALSYNC_ADDR: addr };
    let srv = await startServer(env);
    try {
      const alice = await player("alice", srv.url);
      const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r", statePolicy: "open" });
      const live = alice.live(room.id, { playerId: 1, backoff: { random: () => 1 } });
      const log = record(live);
      const versions: number[] = [];
      const types: string[] = [];
      live.on("change", (e) => {
        versions.push((e as { version: number }).version);
        types.push((e as { type: string }).type);
      });
      await live.ready;
      for (let i = 1; i <= 5; i++) await alice.patchState(room.id, { n: i });
      await eventually(() => live.state.n === 5, "the patches");

      await srv.kill();
      await eventually(() => log.reconnecting.length >= 3, "three reconnects");
      srv = await startServer(env);
      // Missed while away: replayed on resume, not a snapshot.
      for (let i = 6; i <= 10; i++) await alice.patchState(room.id, { n: i, [`k${i}`]: i });
      const last = (await alice.getRoom(room.id)).version;
      // The next attempt may be 8 s away when the restart was slow.
      await eventually(() => live.version >= last, "the last version after the restart", 40000);

      const delays = log.reconnecting.map((r) => r.delayMs);
      assert.deepEqual(delays.slice(0, 3), [500, 1000, 2000], `delays ${delays}`);
      for (let i = 1; i < delays.length; i++) assert.ok(delays[i] >= delays[i - 1], `delays ${delays}`);
      assert.deepEqual(log.resumed, [{ snapshot: false }]);
      // An attempt that reached the new server while it was still connecting
      // to its store (it listens before) was answered 200 with a 5 s retry:
      // and the end (an open with nothing after it), and said so in its log.
      const early = srv.logs().match(/event stream refused: store unavailable.* err="the instance is not connected to the store yet/g) ?? [];
      assert.equal(log.open.length, 2 + early.length, `opens: the first server's, the new one's, and ${early.length} refused while it started`);
      assert.deepEqual(log.closed, []);
      assert.deepEqual(types.filter((t) => t === "snapshot"), ["snapshot"]);
      assert.equal(types[0], "snapshot");
      for (let i = 1; i < versions.length; i++) assert.equal(versions[i], versions[i - 1] + 1, `gap or repeat: ${versions}`);
      const got = await alice.getState(room.id);
      assert.deepEqual(live.state, got.state);
      assert.equal(live.stateVersion, got.stateVersion);
      live.close();
    } finally {
      await srv.stop();
    }
  });
});

describe("the stream's retry: field", () => {
  it("Node: a shutdown's last retry: (0.5–2 s) is the least delay, for room, lobby and personal streams", async () => {
    const srv = await startServer();
    const alice = await player("alice", srv.url);
    const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
    const o = { backoff: { random: () => 0 } }; // the backoff alone would say 0
    const streams = [alice.live(room.id, { playerId: 1, ...o }), alice.lobby({}, o), alice.me("web", o)];
    const logs = streams.map((s) => record(s as LiveStream<object>));
    try {
      await Promise.all(streams.map((s) => s.ready));
      await srv.stop(); // SIGTERM: each stream ends with a retry: line
      await eventually(() => logs.every((l) => l.reconnecting.length > 0), "the reconnects");
      for (const [i, l] of logs.entries()) {
        const d = l.reconnecting[0].delayMs;
        assert.ok(d >= 500 && d < 2000, `stream ${i}: ${d} ms, not the shutdown's retry:`);
      }
      // the attempts after it, refused, wait as long
      await eventually(() => logs.every((l) => l.reconnecting.length > 1), "the next reconnects");
      for (const l of logs) assert.equal(l.reconnecting[1].delayMs, l.reconnecting[0].delayMs);
    } finally {
      for (const s of streams) s.close();
      await srv.stop();
    }
  });

  it("Node: a server that cannot reach its store (200, a retry: and the end) is asked again after its retry:", async () => {
    const alice = await player("alice");
    let refused = 0;
    proxy.intercept = (s) => s.url.startsWith("/v1/lobby/events") && refused++ === 0
      ? { status: 200, headers: { "Content-Type": "text/event-stream" }, body: "retry: 1234\n: store unavailable, retry later\n\n" }
      : undefined;
    const lobby = alice.lobby({}, { backoff: { random: () => 0 } });
    const log = record(lobby);
    try {
      await lobby.ready;
      assert.deepEqual(log.reconnecting.map((r) => r.delayMs), [1234]);
    } finally {
      proxy.intercept = undefined;
      lobby.close();
    }
  });

  for (const [what, canned] of [
    ["a retry: past setTimeout's 2^31−1 ms", {
      status: 200, headers: { "Content-Type": "text/event-stream" }, body: "retry: 2147483648\n: store unavailable, retry later\n\n",
    }],
    ["a Retry-After of 31 years", {
      status: 503, headers: { "Retry-After": "999999999" }, body: problem(503, "STORE_UNAVAILABLE", "Retry later."),
    }],
  ] as [string, Canned][]) {
    it(`Node: ${what} waits the backoff's maxMs (10 s by default), once`, async () => {
      const alice = await player("alice");
      proxy.intercept = (s) => s.url.startsWith("/v1/lobby/events") ? canned : undefined;
      const from = proxy.seen.length;
      const lobby = alice.lobby({}, { backoff: { random: () => 0 } });
      const log = record(lobby);
      lobby.ready.catch(() => undefined);
      try {
        await eventually(() => log.reconnecting.length > 0, "the reconnect");
        assert.equal(log.reconnecting[0].delayMs, 10000);
        await quiet();
        assert.equal(requests("/v1/lobby/events", from).length, 1, "the attempts in 1.5 s");
        assert.equal(log.reconnecting.length, 1);
      } finally {
        proxy.intercept = undefined;
        lobby.close();
      }
    });
  }

  it("retryFields reports each retry:, then 0 at the next event's data, whatever the chunks, and passes the bytes on", async () => {
    const text = "retry: 3000\n: ok\n\nid: 1\nevent: state\ndata: retry: 9\n\n: retry: 8\r\n" +
      "retry:7\r\nretry: 6x\nretry:  5\nretryx: 4\ndatax: 3\ndata: " + "x".repeat(5000) + "\n\n" +
      "retry: 11\ndata\n\nretry: 1234\rretry: 42\r\nretry: 99";
    const bytes = new TextEncoder().encode(text);
    for (const size of [1, 2, 7, bytes.length]) {
      const got: number[] = [];
      const chunks: Uint8Array[] = [];
      for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.slice(i, i + size));
      const out = await new Response(new ReadableStream({
        start(c) {
          for (const b of chunks) c.enqueue(b);
          c.close();
        },
      }).pipeThrough(retryFields((ms) => got.push(ms)))).text();
      assert.equal(out, text, `chunks of ${size}`);
      // 99 has no line end: an unfinished line is no field
      assert.deepEqual(got, [3000, 0, 7, 0, 11, 0, 1234, 42], `chunks of ${size}`);
    }
  });
});

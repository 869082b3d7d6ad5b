// Identity and stream tokens through the SDK, against a real realsyncd:
// stream URLs carry stream tokens only, and a stream whose identity token
// expires soon ends with token_expiring, after which the SDK renews the
// token (POST /v1/auth/refresh, or the game's callback for a studio's
// token) and resumes with no gap.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHmac, generateKeyPairSync, sign } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { EventSource } from "eventsource";
import { RealSync, RealSyncError, type EventSourceLike } from "../src/index.js";
import { eventually, startServer, type Server } from "./server.js";

const b64u = (b: Buffer | string) => Buffer.from(b).toString("base64url");

/** jwt signs header.claims with signer. */
function jwt(header: object, claims: object, signer: (data: Buffer) => Buffer): string {
  const data = `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(claims))}`;
  return `${data}.${b64u(signer(Buffer.from(data)))}`;
}

const now = () => Math.floor(Date.now() / 1000);

/** serverToken is a token signed with the test server's secret (as its own are), expiring in ttl s. */
function serverToken(sub: string, name: string, ttl: number): string {
  return jwt({ alg: "HS256", typ: "JWT", kid: "realsync" }, { sub, name, exp: now() + ttl, iat: now() },
    (d) => createHmac("sha256", "sdk-test").update(d).digest());
}

// A studio's login: an Ed25519 key pair, the public half in the server's JWKS file.
const studio = generateKeyPairSync("ed25519");
function studioToken(sub: string, ttl: number): string {
  return jwt({ alg: "EdDSA", typ: "JWT", kid: "studio-1" },
    { sub, name: "stu", exp: now() + ttl, iat: now(), iss: "https://login.studio.test", aud: "realsync" },
    (d) => sign(null, d, studio.privateKey));
}

let server: Server;
let studioServer: Server;
let dir: string; // the JWKS file's, removed after
before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "realsync-jwks-"));
  const file = path.join(dir, "jwks.json");
  writeFileSync(file, JSON.stringify({ keys: [{ ...studio.publicKey.export({ format: "jwk" }), kid: "studio-1", use: "sig" }] }));
  [server, studioServer] = await Promise.all([
    startServer(),
    startServer({ REALSYNC_JWT_KEYS_FILE: file, REALSYNC_JWT_ISSUER: "https://login.studio.test", REALSYNC_JWT_AUDIENCE: "realsync" }),
  ]);
});
after(async () => {
  await Promise.all([server.stop(), studioServer.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

/** recording is an EventSource factory that remembers the URLs it opened. */
function recording(urls: string[]) {
  return (url: string) => {
    urls.push(url);
    return new EventSource(url) as unknown as EventSourceLike;
  };
}

/** counting is a fetch that records "METHOD path Authorization" of every request. */
function counting(log: string[]): typeof fetch {
  return (input, init) => {
    const req = new Request(input, init);
    log.push(`${req.method} ${new URL(req.url).pathname} ${req.headers.get("Authorization") ?? ""}`);
    return fetch(req);
  };
}

/**
 * patchThroughRenewal patches the room's state every 100 ms (n: 1, 2, …)
 * until renewed() and 10 patches are made (at most max), then checks that
 * the live room saw every version once, in order, up to the last, and the
 * last n.
 */
async function patchThroughRenewal(owner: RealSync, roomId: string, live: { version: number; state: Record<string, unknown> },
  seen: number[], renewed: () => boolean, max: number): Promise<void> {
  let n = 0;
  while (!renewed() || n < 10) {
    await owner.patchState(roomId, { n: ++n });
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(n < max, `no renewal within ${max / 10} s`);
  }
  const last = (await owner.getRoom(roomId)).version;
  await eventually(() => live.version >= last, "the last version after the resume");
  for (let i = 1; i < seen.length; i++) assert.equal(seen[i], seen[i - 1] + 1, `gap or repeat at ${seen}`);
  assert.equal(live.state.n, n);
}

describe("identity and stream tokens", () => {
  it("opens event streams with stream tokens only", async () => {
    const alice = new RealSync({ baseUrl: server.url });
    await alice.guest("alice");
    const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
    const urls: string[] = [];
    const live = alice.live(room.id, { playerId: 1, eventSource: recording(urls) });
    const lobby = alice.lobby({}, { eventSource: recording(urls) });
    try {
      await eventually(() => live.room !== undefined && lobby.rooms.size > 0, "snapshot and lobby list");
      assert.equal(urls.length, 2);
      for (const u of urls) {
        const q = new URL(u).searchParams;
        assert.ok(q.get("token") && q.get("token") !== alice.token, `no stream token in ${u}`);
        assert.equal(q.get("access_token"), null);
      }
      const res = await fetch(`${server.url}/v1/rooms/${room.id}/events?access_token=${alice.token}`);
      assert.equal(res.status, 401);
      assert.equal((await res.json()).code, "STREAM_TOKEN_REQUIRED");
    } finally {
      live.close();
      lobby.close();
    }
  });

  it("renews a guest's token before it expires and resumes without a gap", async () => {
    const owner = new RealSync({ baseUrl: server.url });
    const g = await owner.guest("alice");
    const { room } = await owner.createRoom({ name: "r", mode: "m", region: "r" });
    // The same user with a token expiring in 6 s: its stream ends about 3 s in.
    const tokens: string[] = [];
    const c = new RealSync({ baseUrl: server.url, token: serverToken(g.userId, "alice", 6), refreshMarginMs: 1000,
      onToken: (t) => tokens.push(t) });
    const live = c.live(room.id, { playerId: 1 });
    const seen: number[] = [];
    let expiring = 0;
    live.on("change", (e) => seen.push((e as { version: number }).version));
    live.on("token_expiring", () => expiring++);
    try {
      await eventually(() => live.room !== undefined, "snapshot");
      // Changes keep coming while the stream ends and resumes.
      await patchThroughRenewal(owner, room.id, live, seen, () => tokens.length > 0, 150);
      assert.equal(expiring, 1);
      assert.equal(tokens.length, 1);
      assert.ok((c.tokenExpiresAt() ?? 0) > Date.now() + 23 * 3600 * 1000, "the renewed token lasts a day");
    } finally {
      live.close();
    }
  });

  it("ends a stream whose studio token cannot be renewed, instead of reopening ever shorter streams", async () => {
    const log: string[] = [];
    const c = new RealSync({ baseUrl: studioServer.url, token: studioToken("player-9", 6), refreshMarginMs: 1000,
      fetch: counting(log) });
    const lobby = c.lobby();
    let expiring = 0;
    const errors: RealSyncError[] = [];
    const closed: { reason: string; error?: RealSyncError }[] = [];
    lobby.on("token_expiring", () => expiring++);
    lobby.on("error", (e) => errors.push(e));
    lobby.on("closed", (e) => closed.push(e));
    await lobby.ready;
    await eventually(() => lobby.closed, "the stream ended"); // about 3 s in, with token_expiring
    assert.equal(expiring, 1);
    assert.equal(closed.length, 1);
    assert.equal(closed[0].reason, "error");
    assert.equal(closed[0].error?.status, 401);
    assert.equal(closed[0].error?.code, "UNAUTHENTICATED");
    assert.ok(errors.some((e) => e.code === "REFRESH_NOT_ALLOWED"), `errors: ${errors.map((e) => e.code)}`);
    assert.deepEqual(log.map((l) => l.split(" ").slice(0, 2).join(" ")), ["GET /v1/lobby/events", "POST /v1/auth/refresh"]);
  });

  it("ends a stream whose refreshToken callback fails, once, not as a network error retried", async () => {
    // A tester's login outage: the callback's error read as NETWORK (status
    // 0), retried at each token_expiring, streams reopened ever shorter.
    // 40 s: token_expiring comes 30 s before the expiry, time enough for
    // the retry it got (one under 5 s is not retried either way).
    let asked = 0;
    const c = new RealSync({ baseUrl: studioServer.url, token: studioToken("player-10", 40), refreshMarginMs: 1000,
      refreshToken: async () => {
        asked++;
        throw new Error("login server says no");
      } });
    const lobby = c.lobby();
    const errors: RealSyncError[] = [];
    const closed: { reason: string; error?: RealSyncError }[] = [];
    let expiring = 0;
    lobby.on("token_expiring", () => expiring++);
    lobby.on("error", (e) => errors.push(e));
    lobby.on("closed", (e) => closed.push(e));
    await lobby.ready;
    await eventually(() => lobby.closed, "the stream ended", 30000); // about 10 s in
    assert.equal(expiring, 1);
    assert.equal(asked, 1);
    assert.equal(closed.length, 1);
    assert.equal(closed[0].error?.code, "UNAUTHENTICATED");
    assert.match(closed[0].error?.message ?? "", /its renewal failed: login server says no/);
    assert.deepEqual(errors.filter((e) => e.code === "NETWORK"), []);
  });

  it("does not ask a failing refreshToken again at every REST call within the renewal margin", async () => {
    let asked = 0;
    const c = new RealSync({ baseUrl: studioServer.url, token: studioToken("player-11", 60),
      refreshToken: async () => {
        asked++;
        throw new Error("login server says no");
      } });
    for (let i = 0; i < 5; i++) assert.deepEqual(await c.myRooms(), []); // the token still serves
    // one ask, then a backoff of 1 s (2 should five calls take longer on a loaded machine)
    assert.ok(asked >= 1 && asked <= 2, `refreshToken asked ${asked} times for 5 calls`);
  });

  it("asks a token provider again while it still gives the expiring token, and resumes without a gap", async () => {
    // A provider that mints a new token only when under 8 s are left (an
    // abuse tester's game: the stream ended for good at the first
    // token_expiring, 30 s before the expiry, as the provider still gave
    // the old token).
    const owner = new RealSync({ baseUrl: server.url });
    const g = await owner.guest("alice");
    const { room } = await owner.createRoom({ name: "r", mode: "m", region: "r" });
    let current = serverToken(g.userId, "alice", 20); // its stream ends halfway, 10 s in
    let minted = 0;
    const c = new RealSync({ baseUrl: server.url, getToken: () => {
      const exp = JSON.parse(Buffer.from(current.split(".")[1], "base64url").toString()).exp * 1000;
      if (exp - Date.now() < 8000) {
        current = serverToken(g.userId, "alice", 3600);
        minted++;
      }
      return current;
    } });
    const live = c.live(room.id, { playerId: 1 });
    const seen: number[] = [];
    const closed: unknown[] = [];
    let expiring = 0;
    live.on("change", (e) => seen.push((e as { version: number }).version));
    live.on("token_expiring", () => expiring++);
    live.on("closed", (e) => closed.push(e));
    try {
      await eventually(() => live.room !== undefined, "snapshot");
      await patchThroughRenewal(owner, room.id, live, seen, () => minted > 0, 250);
      assert.deepEqual(closed, []);
      assert.ok(expiring >= 2, `token_expiring ${expiring} times: the old token is given at the first`);
      assert.equal(minted, 1);
    } finally {
      live.close();
    }
  });

  it("retries a renewal that failed on the way, while the token has time left", async () => {
    // The first POST /v1/auth/refresh is cut (a network error): before, the
    // stream ended for good at that token_expiring, with 10 s left.
    const owner = new RealSync({ baseUrl: server.url });
    const g = await owner.guest("alice");
    const { room } = await owner.createRoom({ name: "r", mode: "m", region: "r" });
    let cut = 0;
    const flaky: typeof fetch = (input, init) => {
      const req = new Request(input, init);
      if (new URL(req.url).pathname === "/v1/auth/refresh" && cut++ === 0) return Promise.reject(new TypeError("fetch failed"));
      return fetch(req);
    };
    const tokens: string[] = [];
    const c = new RealSync({ baseUrl: server.url, token: serverToken(g.userId, "alice", 20), refreshMarginMs: 1000, fetch: flaky,
      onToken: (t) => tokens.push(t) });
    const live = c.live(room.id, { playerId: 1 });
    const seen: number[] = [];
    const closed: unknown[] = [];
    const errors: string[] = [];
    live.on("change", (e) => seen.push((e as { version: number }).version));
    live.on("closed", (e) => closed.push(e));
    live.on("error", (e) => errors.push(e.code));
    try {
      await eventually(() => live.room !== undefined, "snapshot");
      await patchThroughRenewal(owner, room.id, live, seen, () => tokens.length > 0, 250);
      assert.deepEqual(closed, []);
      assert.ok(errors.includes("NETWORK"), `errors: ${errors}`);
      assert.equal(cut, 2, "the renewal tried twice");
    } finally {
      live.close();
    }
  });

  it("asks the token provider before every connection", async () => {
    const a = await new RealSync({ baseUrl: server.url }).guest("first");
    const b = await new RealSync({ baseUrl: server.url }).guest("second");
    let current = a.token;
    let calls = 0;
    const log: string[] = [];
    const c = new RealSync({ baseUrl: server.url, fetch: counting(log), getToken: async () => (calls++, current) });
    const lobby = c.lobby();
    const resumed: boolean[] = [];
    lobby.on("resumed", (e) => resumed.push(e.snapshot));
    try {
      await lobby.ready;
      const before = calls;
      current = b.token;
      lobby.reconnect();
      await eventually(() => resumed.length === 1, "resumed");
      assert.equal(calls, before + 1);
      assert.deepEqual(resumed, [true], "a lobby starts over from its list");
      const opens = log.filter((l) => l.startsWith("GET /v1/lobby/events"));
      assert.deepEqual(opens, [`GET /v1/lobby/events Bearer ${a.token}`, `GET /v1/lobby/events Bearer ${b.token}`]);
      assert.equal(c.token, b.token);
    } finally {
      lobby.close();
    }
  });

  it("a REST call refused 401 (its token's key was removed) renews the token once and is sent again", async () => {
    // A token of a key the server no longer has (a compromised key removed from the JWKS file).
    const revoked = jwt({ alg: "EdDSA", typ: "JWT", kid: "studio-0" },
      { sub: "player-10", name: "stu", exp: now() + 3600, iat: now(), iss: "https://login.studio.test", aud: "realsync" },
      (d) => sign(null, d, studio.privateKey));
    let renewals = 0;
    const log: string[] = [];
    const c = new RealSync({
      baseUrl: studioServer.url, token: revoked, fetch: counting(log),
      refreshToken: async () => {
        renewals++;
        return studioToken("player-10", 3600);
      },
    });
    const { room } = await c.createRoom({ name: "sent again", mode: "m", region: "r" }); // its body too
    assert.equal(room.name, "sent again");
    assert.equal(renewals, 1);
    assert.deepEqual(await c.myRooms().then((rs) => rs.map((r) => r.id)), [room.id]);
    assert.equal(renewals, 1);
    assert.deepEqual(log.map((l) => l.split(" ")[0] + " " + (l.includes(revoked) ? "revoked" : "renewed")),
      ["POST revoked", "POST renewed", "GET renewed"]);

    // A callback that has nothing better: the 401 stands, and the next call asks it no more.
    let asked = 0;
    const stuck = new RealSync({ baseUrl: studioServer.url, token: revoked, refreshToken: async () => (asked++, revoked) });
    for (let i = 0; i < 2; i++) {
      await assert.rejects(stuck.getRoom(room.id), (e) => e instanceof RealSyncError && e.status === 401 && e.code === "UNAUTHENTICATED");
    }
    assert.equal(asked, 1);
  });

  it("renews a studio's token through the game's callback", async () => {
    let renewals = 0;
    const c = new RealSync({
      baseUrl: studioServer.url, token: studioToken("player-7", 6), refreshMarginMs: 1000,
      refreshToken: async () => {
        renewals++;
        return studioToken("player-7", 3600);
      },
    });
    await assert.rejects(c.refresh(), (e) => e instanceof RealSyncError && e.status === 403 && e.code === "REFRESH_NOT_ALLOWED");
    // Without the callback, a studio's token near its expiry still serves
    // until it expires (the server will not renew it).
    const bare = new RealSync({ baseUrl: studioServer.url, token: studioToken("player-8", 60) });
    assert.deepEqual(await bare.myRooms(), []);
    assert.deepEqual(await bare.myRooms(), []);
    const lobby = c.lobby();
    let lists = 0;
    lobby.on("rooms", () => lists++);
    try {
      await eventually(() => lists >= 1, "the first list");
      await eventually(() => renewals === 1 && lists >= 2, "the renewal and the list after the resume");
      const { room } = await c.createRoom({ name: "studio room", mode: "m", region: "r" });
      await eventually(() => lobby.rooms.has(room.id), "the new room in the resumed lobby");
    } finally {
      lobby.close();
    }
  });
});

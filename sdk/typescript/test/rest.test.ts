import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { RealSync, RealSyncError } from "../src/index.js";
import { startServer, type Server } from "./server.js";

let server: Server;
before(async () => (server = await startServer()));
after(async () => server.stop());

async function player(name: string): Promise<RealSync> {
  const c = new RealSync({ baseUrl: server.url });
  await c.guest(name);
  return c;
}

async function rejects(p: Promise<unknown>, status: number, code: string): Promise<RealSyncError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof RealSyncError, `not a RealSyncError: ${e}`);
    assert.equal(e.status, status);
    assert.equal(e.code, code);
    return e;
  }
  assert.fail(`expected ${status} ${code}`);
}

describe("REST through the SDK", () => {
  it("runs a room's whole life", async () => {
    const alice = await player("alice");
    const bob = await player("bob");
    const { room, playerId } = await alice.createRoom({ name: "Arena", mode: "battle", region: "eu", maxPlayers: 2,
      attributes: { map: "dust2", rank: 1500 } });
    assert.equal(playerId, 1);
    assert.equal((await bob.joinRoom(room.id)).playerId, 2);
    await rejects((await player("carol")).joinRoom(room.id), 409, "ROOM_FULL");

    const v = await alice.patchState(room.id, { score: 10, turn: 1 }, 0);
    assert.equal(v.stateVersion, 1);
    await rejects(alice.patchState(room.id, { score: 11 }, 0), 412, "VERSION_MISMATCH");
    await rejects(bob.patchState(room.id, { score: 11 }), 403, "STATE_KEY_FORBIDDEN");
    assert.deepEqual((await bob.getState(room.id)).state, { score: 10, turn: 1 });

    await bob.sendMessage(room.id, { type: "chat", data: { text: "gg" } });
    await alice.sendMessage(room.id, { type: "dm", data: "psst", to: [1] });
    assert.equal((await bob.messages(room.id)).length, 1);
    assert.equal((await alice.messages(room.id, { limit: 1 }))[0].type, "dm");

    const updated = await alice.updateRoom(room.id, { status: "playing" });
    assert.equal(updated.status, "playing");
    assert.equal((await bob.myRooms())[0].playerId, 2);
    const stats = await bob.lobbyStats();
    assert.equal(stats.rooms.playing, 1);

    await bob.leaveRoom(room.id);
    await alice.deleteRoom(room.id);
    await rejects(alice.getRoom(room.id), 404, "ROOM_NOT_FOUND");
  });

  it("pages the caller's rooms, and myRooms follows the pages", async () => {
    const dana = await player("dana");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.unshift((await dana.createRoom({ name: `R${i}`, mode: "paging", region: "eu" })).room.id);
    }
    const first = await dana.myRoomsPage({ limit: 2 });
    assert.deepEqual(first.rooms.map((r) => r.id), ids.slice(0, 2));
    assert.ok(first.nextCursor);
    const second = await dana.myRoomsPage({ limit: 2, cursor: first.nextCursor! });
    assert.deepEqual(second.rooms.map((r) => r.id), ids.slice(2));
    assert.equal(second.nextCursor, null);
    assert.deepEqual((await dana.myRooms()).map((r) => r.id), ids);
    await rejects(dana.myRoomsPage({ limit: 2, cursor: "nope" }), 422, "VALIDATION_FAILED");
  });

  it("finds rooms by filters and quick-joins them", async () => {
    const alice = await player("alice");
    await alice.createRoom({ name: "a", mode: "ctf", region: "us", attributes: { map: "dust2", rank: 1500 } });
    await alice.createRoom({ name: "b", mode: "ctf", region: "us", attributes: { map: "nuke", rank: 1500 } });
    const page = await alice.listRooms({ mode: "ctf", joinable: true, sort: "fill", attributes: { map: "dust2", rank: { gte: 1400, lte: 1600 } } });
    assert.equal(page.rooms.length, 1);
    assert.equal(page.rooms[0].name, "a");
    const bob = await player("bob");
    const q = await bob.quickJoin({ mode: "ctf", regions: ["us"], attributes: { map: "nuke" } });
    assert.equal(q.created, false);
    assert.equal(q.room.name, "b");
    await rejects(bob.quickJoin({ mode: "ctf", regions: ["eu"] }), 404, "NO_MATCH");
    const made = await bob.quickJoin({ mode: "ctf", regions: ["eu"], create: { name: "new" } });
    assert.equal(made.created, true);
  });

  it("sends an Idempotency-Key with createRoom, quickJoin, sendMessage and sendDirectMessage: the same key and body, the first answer", async () => {
    const alice = await player("alice");
    const body = { name: "keyed", mode: "idem", region: "eu", maxPlayers: 4 };
    const first = await alice.createRoom(body, "create-k1");
    assert.equal((await alice.createRoom(body, "create-k1")).room.id, first.room.id, "replayed: no second room");
    await rejects(alice.createRoom({ ...body, name: "other" }, "create-k1"), 422, "IDEMPOTENCY_KEY_REUSED");
    assert.equal((await alice.myRooms()).length, 1);
    const bob = await player("bob");
    const q = { mode: "idem2", regions: ["eu"], create: { name: "q" } };
    const q1 = await bob.quickJoin(q, "qj-k1");
    const q2 = await bob.quickJoin(q, "qj-k1");
    assert.equal(q1.created, true);
    assert.equal(q2.created, true, "the first answer replayed (run again it would say created: false)");
    assert.equal(q2.room.id, q1.room.id);
    const m1 = await bob.sendMessage(q1.room.id, { type: "chat", data: "gg" }, "msg-k1");
    assert.equal((await bob.sendMessage(q1.room.id, { type: "chat", data: "gg" }, "msg-k1")).version, m1.version);
    await rejects(bob.sendMessage(q1.room.id, { type: "chat", data: "GG" }, "msg-k1"), 422, "IDEMPOTENCY_KEY_REUSED");
    assert.equal((await bob.messages(q1.room.id)).length, 1, "sent once");
    const carol = new RealSync({ baseUrl: server.url });
    const carolId = (await carol.guest("carol")).userId;
    const dm = await bob.sendDirectMessage(carolId, { type: "chat", data: "gg" }, "dm-k1");
    assert.equal((await bob.sendDirectMessage(carolId, { type: "chat", data: "gg" }, "dm-k1")).ts, dm.ts);
    await rejects(bob.sendDirectMessage(carolId, { type: "chat", data: "GG" }, "dm-k1"), 422, "IDEMPOTENCY_KEY_REUSED");
  });

  it("handles private rooms, invite codes and kicks", async () => {
    const alice = await player("alice");
    const bob = await player("bob");
    const { room } = await alice.createRoom({ name: "secret", mode: "m", region: "r", visibility: "private" });
    assert.ok(room.inviteCode);
    await rejects(bob.getRoom(room.id), 404, "ROOM_NOT_FOUND");
    const j = await bob.joinByCode(room.inviteCode!.toLowerCase());
    assert.equal(j.room.id, room.id);
    await rejects(bob.kick(room.id, 1), 403, "NOT_OWNER");
    await alice.kick(room.id, j.playerId);
    await rejects(bob.getRoom(room.id), 404, "ROOM_NOT_FOUND");
    await rejects(alice.kick(room.id, 99), 404, "PLAYER_NOT_FOUND");
  });

  it("reports validation errors field by field", async () => {
    const alice = await player("alice");
    const e = await rejects(alice.createRoom({ name: "", mode: "Battle", region: "eu" }), 422, "VALIDATION_FAILED");
    assert.deepEqual(e.errors.map((f) => f.field).sort(), ["mode", "name"]);
    await rejects(new RealSync({ baseUrl: server.url }).myRooms(), 401, "UNAUTHENTICATED");
    await rejects(new RealSync({ baseUrl: "http://127.0.0.1:1" }).guest(), 0, "NETWORK");
  });
});

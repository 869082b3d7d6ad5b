import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { RealSync, type LiveRoom } from "../src/index.js";
import { eventually, startServer, type Server } from "./server.js";

let server: Server;
before(async () => (server = await startServer()));
after(async () => server.stop());

async function player(name: string): Promise<RealSync> {
  const c = new RealSync({ baseUrl: server.url });
  await c.guest(name);
  return c;
}

/** versions records the versions of the events a live room applied. */
function versions(live: LiveRoom): number[] {
  const seen: number[] = [];
  live.on("change", (e) => seen.push((e as { version: number }).version));
  return seen;
}

describe("live rooms", () => {
  it("converge: one patches, the other's local state follows", async () => {
    const alice = await player("alice");
    const bob = await player("bob");
    const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r", statePolicy: "open" });
    await bob.joinRoom(room.id);
    const a = alice.live(room.id, { playerId: 1 });
    const b = bob.live(room.id, { playerId: 2 });
    try {
      await eventually(() => a.room !== undefined && b.room !== undefined, "snapshots");
      await alice.patchState(room.id, { hp: 10, pos: { x: 1 } });
      await bob.patchState(room.id, { hp: null, turn: 2 });
      await alice.updateRoom(room.id, { name: "renamed", locked: true });
      const last = (await alice.getRoom(room.id)).version;
      await eventually(() => a.version >= last && b.version >= last, "both streams at the last version");
      assert.deepEqual(b.state, { pos: { x: 1 }, turn: 2 });
      assert.deepEqual(a.state, b.state);
      assert.equal(b.room?.name, "renamed");
      assert.equal(b.room?.locked, true);
      assert.ok(b.room?.players?.every((p) => p.connected));
      assert.deepEqual(b.room, await bob.getRoom(room.id).then((r) => ({ ...r, players: b.room?.players })));
    } finally {
      a.close();
      b.close();
    }
  });

  it("resumes after a drop without gaps or repeats", async () => {
    const alice = await player("alice");
    const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
    const live = alice.live(room.id, { playerId: 1 });
    const seen = versions(live);
    try {
      await eventually(() => live.room !== undefined, "snapshot");
      for (let i = 0; i < 30; i++) {
        await alice.patchState(room.id, { n: i });
        if (i === 10 || i === 20) live.reconnect(); // drop: resume from the last event id
      }
      const last = (await alice.getRoom(room.id)).version;
      await eventually(() => live.version >= last, "the last version");
      for (let i = 1; i < seen.length; i++) assert.equal(seen[i], seen[i - 1] + 1, `gap or repeat at ${seen}`);
      assert.equal(live.state.n, 29);
    } finally {
      live.close();
    }
  });

  it("ends when the room closes", async () => {
    const alice = await player("alice");
    const { room } = await alice.createRoom({ name: "r", mode: "m", region: "r" });
    const live = alice.live(room.id, { playerId: 1 });
    let reason = "";
    live.on("room_closed", (e) => (reason = e.reason));
    await eventually(() => live.room !== undefined, "snapshot");
    await alice.deleteRoom(room.id);
    await eventually(() => live.closed, "closed");
    assert.equal(reason, "closed");
  });
});

describe("live lobby", () => {
  it("keeps the joinable rooms of a mode", async () => {
    const alice = await player("alice");
    const bob = await player("bob");
    const lobby = bob.lobby({ mode: "lobbytest" });
    try {
      await eventually(() => lobby.lastEventId === "" && lobby.rooms.size === 0, "empty lobby");
      const { room } = await alice.createRoom({ name: "open", mode: "lobbytest", region: "eu", maxPlayers: 2 });
      await eventually(() => lobby.rooms.has(room.id), "room added");
      await bob.joinRoom(room.id); // full now
      await eventually(() => !lobby.rooms.has(room.id), "room removed when full");
      await bob.leaveRoom(room.id);
      await eventually(() => lobby.rooms.get(room.id)?.playerCount === 1, "room back");
    } finally {
      lobby.close();
    }
  });
});

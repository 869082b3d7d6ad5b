// A small Node game against the packed SDK, type-checked strictly and run
// against a real realsyncd (REALSYNC_URL): two players, a live room, the
// lobby, and the typed errors.
import { RealSync, RealSyncError, type State } from "@realsync/sdk";
import { checkLive, checkRoom } from "./types.js";

const baseUrl = process.env.REALSYNC_URL ?? "http://localhost:8080";

const alice = new RealSync({ baseUrl });
await alice.guest("alice");
const { room, playerId } = await alice.createRoom({ name: "Consumer", mode: "battle", region: "eu", maxPlayers: 4,
  statePolicy: "open" });
const live = alice.live(room.id, { playerId });
checkLive(live);
const lobby = alice.lobby({ mode: "battle" });
await Promise.all([live.ready, lobby.ready]);

const bob = new RealSync({ baseUrl });
await bob.guest("bob");
await bob.joinRoom(room.id);
const patch: State = { turn: 1 };
await bob.patchState(room.id, patch);
const last = (await alice.getRoom(room.id)).version;
const deadline = Date.now() + 10000;
while (live.version < last) {
  if (Date.now() > deadline) throw new Error(`the live room stayed at ${live.version}, not ${last}`);
  await new Promise((r) => setTimeout(r, 20));
}
if (!live.room || live.room.playerCount !== 2 || live.state.turn !== 1) {
  throw new Error(`unexpected live room: ${JSON.stringify({ room: live.room, state: live.state })}`);
}
console.log(checkRoom(live.room));

try {
  await bob.joinRoom("nope");
  throw new Error("joined a room that does not exist");
} catch (e) {
  if (!(e instanceof RealSyncError) || e.code !== "ROOM_NOT_FOUND") throw e;
}
live.close();
lobby.close();
console.log("consumer game: ok");

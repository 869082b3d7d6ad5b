// Type checks shared by the Node and browser games: each line fails to
// compile if the SDK's types degrade to any (a missing declaration module).
import type { LiveRoom, Player, RealSyncError, Room, StreamEvents } from "@realsync/sdk";

export function checkRoom(room: Room): string {
  const n: number = room.playerCount;
  const name: string = room.name;
  // @ts-expect-error a Room has no such property
  room.playersCount;
  // @ts-expect-error playerCount is a number
  const s: string = room.playerCount;
  const players: Player[] = room.players ?? [];
  return `${name} ${n}/${room.maxPlayers} ${players.map((p) => p.name).join(",")} ${s}`;
}

export function checkLive(live: LiveRoom): void {
  live.on("closed", (e: StreamEvents["closed"]) => {
    // @ts-expect-error not a reason a stream ends with
    const wrong: typeof e.reason = "kicked";
    const code: RealSyncError["code"] | undefined = e.error?.code;
    void wrong;
    void code;
  });
  live.on("reconnecting", (e) => {
    const ms: number = e.delayMs;
    void ms;
  });
  live.on("state", (e) => {
    const by: number = e.by;
    // @ts-expect-error a state event has no player
    e.player;
    void by;
  });
}

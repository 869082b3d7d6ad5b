// A browser game against the packed SDK's browser entry (no Node types).
import { RealSync, RealSyncError } from "@realsync/sdk/browser";
import { checkLive, checkRoom } from "./types.js";

export async function play(el: HTMLElement): Promise<void> {
  const rs = new RealSync({ baseUrl: location.origin, getToken: () => sessionStorage.getItem("token") ?? undefined });
  try {
    const { room, playerId } = await rs.quickJoin({ mode: "battle", regions: ["eu"], create: { name: "Quick", maxPlayers: 4 } });
    const live = rs.live(room.id, { playerId });
    checkLive(live);
    await live.ready;
    el.textContent = live.room ? checkRoom(live.room) : "";
  } catch (e) {
    if (e instanceof RealSyncError) el.textContent = `${e.status} ${e.code}`;
  }
}

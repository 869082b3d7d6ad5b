// Type checks shared by the Node and browser games: each line fails to
// compile if the SDK's types degrade to any (a missing declaration module).
import type { LiveLobby, LiveRoom, LobbyEvents, Player, RealSync, RealSyncError, Room, RoomEvents, StreamEvents } from "@realsync/sdk";

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

// No public type is any: a method's parameters or result, a field of a room,
// a player, an error, a stream event or a live room. Each check names what
// degraded (e.g. `Type 'true' is not assignable to type '"quickJoin"'`).
type IsAny<T> = 0 extends 1 & T ? true : false;
/** AnyKeys is the union of T's keys whose type is any (never when none). */
export type AnyKeys<T> = { [K in keyof T]-?: IsAny<T[K]> extends true ? K : never }[keyof T];
/** NoAny is true when no key of T is any, else the keys that are. */
export type NoAny<T> = [AnyKeys<T>] extends [never] ? true : AnyKeys<T>;
type Fn = (...args: never[]) => unknown;
/** Results maps each method of T to its awaited result; Params to its parameters. */
export type Results<T> = { [K in keyof T]: T[K] extends Fn ? Awaited<ReturnType<T[K]>> : T[K] };
export type Params<T> = { [K in keyof T as T[K] extends Fn ? K : never]: T[K] extends Fn ? (IsAny<Parameters<T[K]>[number]> extends true ? false : true) : never };
/** AllTrue is true when every value of T is true, else the keys that are not. */
export type AllTrue<T> = [{ [K in keyof T]-?: T[K] extends true ? never : K }[keyof T]] extends [never] ? true : { [K in keyof T]-?: T[K] extends true ? never : K }[keyof T];

export const clientResults: NoAny<Results<RealSync>> = true;
export const clientParams: AllTrue<Params<RealSync>> = true;
export const room: NoAny<Room> = true;
export const player: NoAny<Player> = true;
export const error: NoAny<RealSyncError> = true;
export const events: NoAny<StreamEvents> = true;
export const eventFields: AllTrue<{ [K in keyof StreamEvents]: NoAny<StreamEvents[K]> }> = true;
export const liveRoom: NoAny<Results<LiveRoom>> = true;
export const lobby: NoAny<Results<LiveLobby>> = true;
export const lobbyEvents: AllTrue<{ [K in keyof LobbyEvents]: NoAny<LobbyEvents[K]> }> = true;
export const roomEvents: AllTrue<{ [K in keyof RoomEvents]: NoAny<RoomEvents[K]> }> = true;

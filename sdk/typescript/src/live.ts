// Live clients over Server-Sent Events: a room kept in sync with its event
// stream, and the lobby's list of joinable rooms.
import { EventSource as NodeEventSource } from "eventsource";
import type { RealSync, Room, Player, State } from "./client.js";

interface EventBase {
  roomId: string;
  version: number;
  ts: string;
}

/** The events of a room stream, by type (see openapi.yaml, streamRoomEvents). */
export interface RoomEvents {
  snapshot: EventBase & { type: "snapshot"; room: Room; state: State; stateVersion: number };
  state: EventBase & { type: "state"; by: number; set: State; del: string[]; stateVersion: number };
  player_joined: EventBase & { type: "player_joined"; player: Player };
  player_left: EventBase & { type: "player_left"; playerId: number; reason: "left" | "kicked" | "disconnected" };
  player_connected: EventBase & { type: "player_connected"; playerId: number };
  player_disconnected: EventBase & { type: "player_disconnected"; playerId: number };
  room_updated: EventBase & { type: "room_updated"; changes: Partial<Room> & { inviteCode?: string | null } };
  message: EventBase & { type: "message"; message: { from: number; type: string; data: unknown; to?: number[] } };
  room_closed: EventBase & { type: "room_closed"; reason: "closed" | "empty" | "expired" | "gone" };
}
export type RoomEvent = RoomEvents[keyof RoomEvents];

/** The events of the lobby stream. */
export interface LobbyEvents {
  rooms: { type: "rooms"; rooms: Room[] };
  room_added: { type: "room_added"; version: number; room: Room };
  room_updated: { type: "room_updated"; version: number; room: Room };
  room_removed: { type: "room_removed"; version: number; room: Partial<Room> & { id: string } };
}

/** The part of EventSource the live clients use (browsers' and the eventsource package's). */
export interface EventSourceLike {
  readonly readyState: number;
  addEventListener(type: string, listener: (e: { data: string; lastEventId: string }) => void): void;
  onerror: ((e: unknown) => void) | null;
  close(): void;
}
export type EventSourceFactory = (url: string) => EventSourceLike;

export interface LiveOptions {
  /** Opens an EventSource; default: the browser's, else the eventsource package's. */
  eventSource?: EventSourceFactory;
  /** The caller's playerId in the room: its own player_left ends the stream. */
  playerId?: number;
  /** Delay before reopening a stream the EventSource gave up on; default 2000 ms. */
  reopenDelayMs?: number;
}

const CLOSED = 2;

const defaultEventSource: EventSourceFactory = (url) => {
  const ES = (globalThis as { EventSource?: new (url: string) => EventSourceLike }).EventSource;
  return ES ? new ES(url) : (new NodeEventSource(url) as unknown as EventSourceLike);
};

type Listener<T> = (e: T) => void;

/** Emitter is a tiny typed event emitter. */
class Emitter<E> {
  private listeners = new Map<keyof E, Set<Listener<never>>>();

  /** on calls fn for every event of type; returns a function that stops it. */
  on<K extends keyof E>(type: K, fn: Listener<E[K]>): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(fn as Listener<never>);
    return () => set.delete(fn as Listener<never>);
  }

  protected emit<K extends keyof E>(type: K, e: E[K]): void {
    for (const fn of this.listeners.get(type) ?? []) (fn as Listener<E[K]>)(e);
  }
}

/** A stream that resumes: the EventSource reconnects by itself with
 * Last-Event-ID; when it gives up (closed), the stream is reopened with the
 * last id as lastEventId. */
abstract class LiveStream<E> extends Emitter<E & { change: unknown; error: unknown; closed: unknown }> {
  /** The id of the last event received. */
  lastEventId = "";
  /** True once closed by close(), room_closed or the caller's own player_left. */
  closed = false;
  private es?: EventSourceLike;
  private timer?: ReturnType<typeof setTimeout>;

  constructor(
    protected readonly client: RealSync,
    private readonly path: string,
    private readonly types: string[],
    protected readonly opts: LiveOptions,
    private readonly query: Record<string, string | undefined> = {},
  ) {
    super();
  }

  protected open(): void {
    const url = this.client.streamUrl(this.path, { ...this.query, lastEventId: this.lastEventId || undefined });
    const es = (this.opts.eventSource ?? defaultEventSource)(url);
    for (const t of this.types) {
      es.addEventListener(t, (e) => {
        if (this.es !== es || this.closed) return;
        if (e.lastEventId) this.lastEventId = e.lastEventId;
        this.receive(t, JSON.parse(e.data));
      });
    }
    es.onerror = (err) => {
      if (this.es !== es || this.closed) return;
      this.emit("error", err as never);
      if (es.readyState === CLOSED) this.timer = setTimeout(() => this.reconnect(), this.opts.reopenDelayMs ?? 2000);
    };
    this.es = es;
  }

  /** reconnect drops the connection and resumes after the last event received. */
  reconnect(): void {
    if (this.closed) return;
    this.es?.close();
    this.open();
  }

  /** close ends the stream for good. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    this.es?.close();
    this.emit("closed", undefined as never);
  }

  protected abstract receive(type: string, data: unknown): void;
}

/** LiveRoom keeps a local copy of a room, its players and its state, applying
 * the snapshot and every event of its stream. Listen with on("state", …),
 * on("player_joined", …), …, or on("change", …) for any applied event. */
export class LiveRoom extends LiveStream<RoomEvents> {
  room?: Room;
  state: State = {};
  stateVersion = 0;
  /** The room version of the last event applied. */
  version = 0;

  constructor(client: RealSync, readonly roomId: string, opts: LiveOptions = {}) {
    super(client, `/v1/rooms/${encodeURIComponent(roomId)}/events`,
      ["snapshot", "state", "player_joined", "player_left", "player_connected", "player_disconnected",
        "room_updated", "message", "room_closed"], opts);
    this.open();
  }

  protected receive(type: string, data: unknown): void {
    const e = data as RoomEvent;
    if (e.type !== "snapshot" && e.version <= this.version) return; // already applied
    this.apply(e);
    this.version = e.version;
    if (this.room && e.type !== "snapshot") {
      this.room.version = e.version;
      this.room.updatedAt = e.ts; // every event stamps the room
    }
    this.emit(e.type, e as never);
    this.emit("change", e);
    if (e.type === "room_closed" || (e.type === "player_left" && e.playerId === this.opts.playerId)) this.close();
  }

  private apply(e: RoomEvent): void {
    if (e.type === "snapshot") {
      this.room = e.room;
      this.state = { ...e.state };
      this.stateVersion = e.stateVersion;
      return;
    }
    const room = this.room;
    if (!room) return;
    const players = (room.players ??= []);
    switch (e.type) {
      case "state":
        for (const k of e.del) delete this.state[k];
        Object.assign(this.state, e.set);
        this.stateVersion = e.stateVersion;
        break;
      case "player_joined":
        if (!players.some((p) => p.playerId === e.player.playerId)) {
          players.push(e.player);
          room.playerCount = players.length;
        }
        break;
      case "player_left":
        room.players = players.filter((p) => p.playerId !== e.playerId);
        room.playerCount = room.players.length;
        break;
      case "player_connected":
      case "player_disconnected":
        for (const p of players) if (p.playerId === e.playerId) p.connected = e.type === "player_connected";
        break;
      case "room_updated":
        for (const [k, v] of Object.entries(e.changes)) {
          if (v === null) delete (room as Record<string, unknown>)[k];
          else (room as Record<string, unknown>)[k] = v;
        }
        break;
    }
  }
}

/** LiveLobby keeps the list of joinable rooms of a mode and region. */
export class LiveLobby extends LiveStream<LobbyEvents> {
  /** The joinable rooms by id. */
  readonly rooms = new Map<string, Room>();

  constructor(client: RealSync, filter: { mode?: string; region?: string }, opts: LiveOptions = {}) {
    super(client, "/v1/lobby/events", ["rooms", "room_added", "room_updated", "room_removed"], opts, filter);
    this.open();
  }

  /** list returns the rooms fullest first, then oldest (the fill order). */
  list(): Room[] {
    return [...this.rooms.values()].sort((a, b) => b.playerCount - a.playerCount || a.createdAt.localeCompare(b.createdAt));
  }

  protected receive(type: string, data: unknown): void {
    const e = data as LobbyEvents[keyof LobbyEvents];
    if (e.type === "rooms") {
      this.rooms.clear();
      for (const r of e.rooms) this.rooms.set(r.id, r);
    } else {
      const known = this.rooms.get(e.room.id);
      if (known && known.version >= e.version) return; // older than what we show
      if (e.type === "room_removed") this.rooms.delete(e.room.id);
      else this.rooms.set(e.room.id, { ...(e.room as Room), version: e.version });
    }
    this.emit(e.type, e as never);
    this.emit("change", e);
  }
}

// Live clients over Server-Sent Events: a room kept in sync with its event
// stream, and the lobby's list of joinable rooms.
import { EventSource as NodeEventSource } from "eventsource";
import { RealSyncError, type RealSync, type Room, type Player, type State } from "./client.js";

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
  room_closed: EventBase & { type: "room_closed"; reason: "closed" | "empty" | "expired" | "finished" | "gone" };
}
export type RoomEvent = RoomEvents[keyof RoomEvents];

/** The events of the lobby stream. */
export interface LobbyEvents {
  rooms: { type: "rooms"; rooms: Room[] };
  room_added: { type: "room_added"; version: number; room: Room };
  room_updated: { type: "room_updated"; version: number; room: Room };
  room_removed: { type: "room_removed"; version: number; room: Partial<Room> & { id: string } };
}

/** The last event of a stream whose identity token expires soon: the SDK
 * renews the token and resumes by itself; listen to it to know. */
export interface TokenExpiring {
  type: "token_expiring";
  expiresAt: string;
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

/** How long EventSource may retry with the stream token it has (they last 60 s). */
const streamTokenReuseMs = 45000;

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

/** A stream that resumes. Each connection opens with a fresh stream token
 * (valid 60 s, for this stream only). The EventSource reconnects by itself
 * with Last-Event-ID while its stream token is young; when it gives up
 * (closed), or its token has aged, the stream is reopened with a new stream
 * token and the last id as lastEventId. A token_expiring event (the identity
 * token expires soon) renews the identity token first, then resumes. */
abstract class LiveStream<E> extends Emitter<E & { change: unknown; error: unknown; closed: unknown; token_expiring: TokenExpiring }> {
  /** The id of the last event received. */
  lastEventId = "";
  /** True once closed by close(), room_closed or the caller's own player_left. */
  closed = false;
  private es?: EventSourceLike;
  private timer?: ReturnType<typeof setTimeout>;
  private opening = 0; // counts open() calls: a late stream token of an older one is dropped
  private tokenAt = 0; // when the current connection's stream token was issued (ms)

  constructor(
    protected readonly client: RealSync,
    private readonly path: string,
    private readonly types: string[],
    protected readonly opts: LiveOptions,
    private readonly streamToken: () => Promise<{ token: string }>,
    private readonly query: Record<string, string | undefined> = {},
  ) {
    super();
  }

  protected open(): void {
    const n = ++this.opening;
    this.streamToken().then(
      (st) => {
        if (this.closed || n !== this.opening) return;
        this.tokenAt = Date.now();
        this.connect(this.client.streamUrl(this.path, st.token, { ...this.query, lastEventId: this.lastEventId || undefined }));
      },
      (err) => {
        if (this.closed || n !== this.opening) return;
        this.emit("error", err as never);
        // Not a member (any more), or the room is gone: the stream is over.
        if (err instanceof RealSyncError && (err.status === 403 || err.status === 404)) this.close();
        else this.later(this.opts.reopenDelayMs ?? 2000);
      },
    );
  }

  private connect(url: string): void {
    const es = (this.opts.eventSource ?? defaultEventSource)(url);
    for (const t of this.types) {
      es.addEventListener(t, (e) => {
        if (this.es !== es || this.closed) return;
        if (e.lastEventId) this.lastEventId = e.lastEventId;
        this.receive(t, JSON.parse(e.data));
      });
    }
    es.addEventListener("token_expiring", (e) => {
      if (this.es !== es || this.closed) return;
      es.close();
      const data = JSON.parse(e.data) as TokenExpiring;
      this.emit("token_expiring", data as never);
      this.client.freshToken(Date.parse(data.expiresAt)).then(
        () => this.reconnect(),
        (err) => {
          this.emit("error", err as never);
          this.later(this.opts.reopenDelayMs ?? 2000);
        },
      );
    });
    es.onerror = (err) => {
      if (this.es !== es || this.closed) return;
      this.emit("error", err as never);
      if (es.readyState === CLOSED) {
        this.later(this.opts.reopenDelayMs ?? 2000);
      } else if (Date.now() - this.tokenAt > streamTokenReuseMs) {
        // EventSource would retry with a stream token about to expire.
        es.close();
        this.later(500 + Math.random() * 1500);
      }
    };
    this.es = es;
  }

  private later(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.reconnect(), ms);
  }

  /** reconnect drops the connection and resumes after the last event received, with a new stream token. */
  reconnect(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
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
        "room_updated", "message", "room_closed"], opts, () => client.roomStreamToken(roomId));
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
    super(client, "/v1/lobby/events", ["rooms", "room_added", "room_updated", "room_removed"], opts,
      () => client.lobbyStreamToken(), filter);
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

// Live clients over Server-Sent Events: a room kept in sync with its event
// stream, and the lobby's list of joinable rooms.
import { RealSyncError, tokenExpiry, type RealSync, type Room, type Player, type State } from "./client.js";
import type { components } from "./schema.js";
import { backoffDelay, backoffMaxMs, type BackoffOptions } from "./backoff.js";
import {
  eventSourceTransport, type EventSourceFactory, type StreamConnection, type StreamRequest, type Transport,
} from "./transport.js";

type Schemas = components["schemas"];

/** The events of a room stream, by type: openapi.yaml's RoomEvent, whose
 * schemas are generated from the server's event types. */
export interface RoomEvents {
  snapshot: Schemas["SnapshotEvent"];
  state: Schemas["StateEvent"];
  player_joined: Schemas["PlayerJoinedEvent"];
  player_left: Schemas["PlayerLeftEvent"];
  player_connected: Schemas["PlayerConnectedEvent"];
  player_disconnected: Schemas["PlayerDisconnectedEvent"];
  room_updated: Schemas["RoomUpdatedEvent"];
  message: Schemas["MessageEvent"];
  room_closed: Schemas["RoomClosedEvent"];
  seats_reserved: Schemas["SeatsReservedEvent"];
  reservation_expired: Schemas["ReservationExpiredEvent"];
}
export type RoomEvent = RoomEvents[keyof RoomEvents];

/** The events of the lobby stream (openapi.yaml's LobbyEvent). */
export interface LobbyEvents {
  rooms: Schemas["LobbyRoomsEvent"];
  room_added: Schemas["LobbyRoomAddedEvent"];
  room_updated: Schemas["LobbyRoomUpdatedEvent"];
  room_removed: Schemas["LobbyRoomRemovedEvent"];
}

/** The events of the personal stream (openapi.yaml's UserEvent). */
export interface MeEvents {
  snapshot: Schemas["UserSnapshotEvent"];
  presence: Schemas["UserPresenceEvent"];
  session_replaced: Schemas["UserSessionReplacedEvent"];
  /** A ticket of the user was matched: join roomId before seatHeldUntil (a seat is held for the user till then). */
  match_found: Schemas["UserMatchFoundEvent"];
  /** A direct message to the user (sendDirectMessage). */
  message: Schemas["UserMessageEvent"];
  /** An invite to a room (invite); acceptInvite joins it. */
  invite: Schemas["UserInviteEvent"];
  /** The user was removed from a room. */
  kicked: Schemas["UserKickedEvent"];
  /** The user was removed from a room for good. */
  banned: Schemas["UserBannedEvent"];
  /** A room the user was in was closed by its owner or the server. */
  room_closed: Schemas["UserRoomClosedEvent"];
}

/** The last event of a stream whose identity token expires soon: the SDK
 * renews the token and resumes by itself; listen to it to know. */
export type TokenExpiring = Schemas["TokenExpiringEvent"];

export type { EventSourceFactory, EventSourceLike } from "./transport.js";

/** Why a live stream ended: closed by the caller (close()), the room closed
 * (room_closed; also a public room's reconnection refused 404 ROOM_NOT_FOUND
 * after it was open: it was deleted meanwhile, that error as `error`), the
 * caller's own player_left (left or kicked) — or a room stream's
 * reconnection refused with 403 NOT_A_MEMBER, or a private room's with 404
 * ROOM_NOT_FOUND, after it was open (removed while away, e.g.
 * REALSYNC_DISCONNECT_GRACE ran out, or the room is gone; that error as
 * `error`) — or a permanent error (see LiveStream). */
export interface Closed {
  reason: "closed" | "room_closed" | "left" | "error";
  error?: RealSyncError;
}

/** The connection events of every live stream. */
export interface StreamEvents {
  /** A connection attempt starts: attempt 1 is the first since the stream was last open. */
  connecting: { attempt: number };
  /** The server accepted the connection. */
  open: Record<string, never>;
  /** A connection failed with a transient error; the next attempt starts after delayMs. */
  reconnecting: { attempt: number; delayMs: number; error: RealSyncError };
  /** A reconnect caught up: snapshot is false when the server replayed every event
   * missed (its resumed event, at once even in a quiet room), true when it had to send a
   * snapshot (a lobby: its list) instead. */
  resumed: { snapshot: boolean };
  /** The stream is over; nothing reconnects. */
  closed: Closed;
  /** Every error, transient or not, and every exception a listener threw (code LISTENER). */
  error: RealSyncError;
  /** The server ended the stream because the identity token expires soon: the SDK renews it and resumes. */
  token_expiring: TokenExpiring;
}

export interface LiveOptions {
  /** How to connect; default: the client's transport (see RealSyncOptions.transport). */
  transport?: Transport;
  /** Opens an EventSource (a "url" transport with stream tokens): for tests and other runtimes. */
  eventSource?: EventSourceFactory;
  /**
   * Supplies the stream token of every (re)connection of a "url" transport,
   * e.g. from your own backend; default: POST …/stream-token with the
   * client's identity token.
   */
  streamToken?: () => Promise<string>;
  /**
   * The caller's playerId in the room: its own player_left ends the stream
   * (closed, reason "left"). Default: the playerId this client got from
   * createRoom, joinRoom, joinByCode, quickJoin or myRooms for the room.
   * Without either, a player_left (left or kicked) followed by a refused
   * reconnection (403 NOT_A_MEMBER or 404) ends it with "left" too.
   */
  playerId?: number;
  /** The reconnect delays. */
  backoff?: BackoffOptions;
  /**
   * The heartbeat watchdog: a connection that brings no byte (no answer,
   * no event, no heartbeat: the server sends one every 15 s of quiet) for
   * this long is taken for dead (a half-open connection after a network
   * change) and reopened after the last event received, as any drop
   * (reconnecting, code NETWORK). Default 45000 ms (three heartbeats); 0
   * turns it off. Kept by the Node transport, which reads the stream's
   * bytes; browsers' EventSource hides heartbeats: there, the stream
   * reconnects when the page comes back online or becomes visible after
   * being hidden this long (see networkEvents).
   */
  idleTimeoutMs?: number;
  /**
   * Browsers: reconnect at once when the page's `online` event fires, and
   * when the page becomes visible after being hidden idleTimeoutMs or
   * longer (a phone that slept or changed network: EventSource may hold a
   * dead connection and never notice). Default true; no effect where the
   * global scope has no such events (Node).
   */
  networkEvents?: boolean;
  /**
   * The personal stream (me()) only: resume after this id, the
   * `lastEventId` of an earlier stream kept by the app (e.g. across
   * restarts): the events after it come again, also those a connection
   * that died unnoticed took but never handed over. Without it a new
   * stream starts after what the server last wrote to this platform:
   * what was written to a connection that died with the app is lost.
   * (A room stream needs none: a new one starts with a snapshot of the
   * whole room and state; its messages are in messages(roomId).)
   */
  lastEventId?: string;
}

type Listener<T> = (e: T) => void;

/** Emitter is a tiny typed event emitter: a listener that throws does not
 * keep the others, or the emitter, from going on (see thrown). */
class Emitter<E> {
  private listeners = new Map<keyof E, Set<Listener<never>>>();

  /** on calls fn for every event of type; returns a function that stops it. */
  on<K extends keyof E>(type: K, fn: Listener<E[K]>): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(fn as Listener<never>);
    return () => set.delete(fn as Listener<never>);
  }

  /** emit calls every listener of type; one that throws, or whose promise
   * (an async listener's) rejects, is reported to thrown. */
  protected emit<K extends keyof E>(type: K, e: E[K]): void {
    for (const fn of [...(this.listeners.get(type) ?? [])]) {
      try {
        const r: unknown = (fn as Listener<E[K]>)(e);
        // an async listener's rejection would otherwise be unhandled (Node ends the process)
        if (r instanceof Promise) r.catch((err: unknown) => this.thrown(type, err));
      } catch (err) {
        this.thrown(type, err);
      }
    }
  }

  /** listening tells whether type has a listener. */
  protected listening(type: keyof E): boolean {
    return (this.listeners.get(type)?.size ?? 0) > 0;
  }

  /** thrown is told of the exception err a listener of type threw. */
  protected thrown(type: keyof E, err: unknown): void {
    console.error(`realsync: a "${String(type)}" listener threw:`, err);
  }
}

/**
 * LiveStream is a stream that resumes, and ends only for good reasons.
 *
 * Each connection is authenticated afresh: with a "header" transport (Node)
 * the identity token (RealSyncOptions.getToken, or the token renewed when
 * due) goes in Authorization; with a "url" transport (browsers) a new stream
 * token goes in the URL. It resumes after the last event received
 * (Last-Event-ID).
 *
 * Listeners: an exception a listener throws is reported as an `error` event
 * (code LISTENER, the exception as cause; to console.error when it is an
 * `error` listener's, or nobody listens to `error`), and the stream goes on:
 * the other listeners still run, a room_closed or own player_left still ends
 * the stream.
 *
 * Errors: a 401 makes it renew the identity token once and retry (with a
 * "url" transport, a 401 to the stream itself refuses the stream token,
 * not the identity token: the next attempt, at once, fetches a new one;
 * a 401 again renews the identity token); a 401
 * again, a 403, 404, 410 or any other 4xx but 408 and 429 is permanent: the
 * stream ends with closed {reason: "error", error} and `ready` rejects if it
 * had not resolved (a room stream refused 403 NOT_A_MEMBER or 404 after it was
 * open ends with "left", or "room_closed", instead: see Closed; a personal stream's 409
 * SESSION_EXISTS is retried as a transient error: see LiveMe). A network error, a dropped stream, a 5xx, 408 or 429 is
 * transient: it reconnects after a delay (exponential backoff from 500 ms to
 * 10 s with full jitter, at least the server's Retry-After, and at least a
 * `retry:` the connection ended with, no event after it: 0.5–2 s when the
 * server shuts down, 5 s while it cannot reach its store; either counts up
 * to the backoff's maxMs, 10 s, however long it asks; the backoff starts
 * over once a stream stayed open 30 s). A token_expiring event renews
 * the identity token and resumes at once (a renewal that failed
 * transiently, or a getToken still giving the expiring token, is tried
 * again while the token has 5 s left: see tokenExpiring); a token that
 * cannot be renewed ends the stream (401 UNAUTHENTICATED) instead of
 * reopening ever shorter streams. A connection silent for LiveOptions.idleTimeoutMs (45 s: three
 * missed heartbeats) is dropped as dead and reopened (Node), and browsers
 * reconnect on `online` and on a page visible again after being hidden
 * that long (LiveOptions.networkEvents).
 */
export abstract class LiveStream<E> extends Emitter<E & StreamEvents & { change: E[keyof E] }> {
  /** The id of the last event received. */
  lastEventId = "";
  /**
   * The least delay before the next attempt: the `retry:` field a
   * connection ended with (the last line of a stream whose server shuts
   * down, the whole answer of one that cannot reach its store), kept for
   * the attempts after it until a connection brings a retry: or an event.
   * A stream's first retry: (2–5 s, for EventSource's own reconnects) is
   * superseded by the events after it: a dropped stream comes back at the
   * backoff's pace. It counts up to the backoff's maxMs (see fail). Only
   * transports that read the field report it (Node's, not EventSource).
   */
  private retryFloor = 0;
  /** True once the stream ended (see closed). */
  closed = false;
  /** Resolves when the first snapshot (room) or list (lobby) was applied; rejects
   * with the RealSyncError if the stream ends before that. */
  readonly ready: Promise<void>;
  private resolveReady!: () => void;
  private rejectReady!: (e: RealSyncError) => void;
  private isReady = false;
  private conn?: StreamConnection;
  private timer?: ReturnType<typeof setTimeout>;
  private gen = 0; // counts connections: the handlers of an older one are ignored
  private attempt = 0; // connection attempts since the stream was last open
  private failures = 0; // transient failures in a row (the backoff's exponent)
  private openedAt = 0; // when the current connection opened (ms), 0 while not open
  /** True once a connection opened. */
  protected everOpen = false;
  private resuming = false; // the next event is the first after a reconnect
  private renewedFor401 = false;
  private newStreamTokenFor401 = false;
  private lastExpiring = "";
  /** The last event was a player_left (left or kicked) of a player the stream
   * could not tell from the caller's: a refusal to reconnect (403
   * NOT_A_MEMBER, 404) means it was the caller's own. */
  protected leftUnknown = false;

  constructor(
    protected readonly client: RealSync,
    private readonly path: string,
    private readonly types: string[],
    protected readonly opts: LiveOptions,
    private readonly fetchStreamToken: () => Promise<{ token: string }>,
    private readonly query: Record<string, string | undefined> = {},
  ) {
    super();
    this.ready = new Promise<void>((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => undefined); // a rejection nobody awaits is not an unhandled one
  }

  /** thrown reports a listener's exception as an error event (see LiveStream). */
  protected override thrown(type: keyof (E & StreamEvents & { change: E[keyof E] }), err: unknown): void {
    if (type === "error" || !this.listening("error")) {
      super.thrown(type, err);
      return;
    }
    this.signal("error", new RealSyncError(0, undefined, err, {
      code: "LISTENER",
      message: `a "${String(type)}" listener threw: ${err instanceof Error ? err.message : String(err)}`,
    }));
  }

  /** signal emits a connection event (StreamEvents). */
  private signal<K extends keyof StreamEvents>(type: K, e: StreamEvents[K]): void {
    (this.emit as (type: K, e: StreamEvents[K]) => void)(type, e);
  }

  private get transport(): Transport {
    if (this.opts.transport) return this.opts.transport;
    if (this.opts.eventSource) return eventSourceTransport(this.opts.eventSource);
    return this.client.transport;
  }

  /** open starts the first connection (subclasses call it once constructed),
   * after the caller's synchronous code: listeners added right after
   * live()/lobby() see the first connecting. */
  protected open(): void {
    this.watchNetwork();
    queueMicrotask(() => !this.closed && this.gen === 0 && void this.connect());
  }

  /** unwatch removes the page's listeners of watchNetwork (at the end). */
  private unwatch?: () => void;

  /**
   * watchNetwork reconnects when the page says the network may have changed
   * under it (LiveOptions.networkEvents): `online`, and `visibilitychange`
   * to visible after being hidden idleTimeoutMs or longer. EventSource
   * cannot see heartbeats, so this is all a browser page can watch.
   */
  private watchNetwork(): void {
    type Target = { addEventListener(t: string, f: () => void): void; removeEventListener(t: string, f: () => void): void };
    const g = globalThis as unknown as Partial<Target> & { document?: Target & { visibilityState?: string } };
    if (this.opts.networkEvents === false || typeof g.addEventListener !== "function" || !("ononline" in g)) return;
    const scope = g as Target;
    const online = () => this.reconnect();
    scope.addEventListener("online", online);
    const doc = g.document;
    let hiddenAt = doc?.visibilityState === "hidden" ? Date.now() : 0; // a page opened in the background
    const visibility = () => {
      if (doc?.visibilityState === "hidden") {
        hiddenAt = Date.now();
      } else if (hiddenAt) {
        const hidden = Date.now() - hiddenAt;
        hiddenAt = 0;
        if (this.idleTimeoutMs > 0 && hidden >= this.idleTimeoutMs) this.reconnect();
      }
    };
    doc?.addEventListener("visibilitychange", visibility);
    this.unwatch = () => {
      scope.removeEventListener("online", online);
      doc?.removeEventListener("visibilitychange", visibility);
    };
  }

  private async connect(): Promise<void> {
    const gen = ++this.gen;
    this.conn?.close();
    this.conn = undefined;
    this.openedAt = 0;
    this.signal("connecting", { attempt: ++this.attempt });
    const transport = this.transport;
    let req: StreamRequest;
    try {
      req = await this.request(transport);
    } catch (e) {
      if (gen === this.gen && !this.closed) this.fail(asError(e));
      return;
    }
    if (gen !== this.gen || this.closed) return;
    const live = () => gen === this.gen && !this.closed;
    try {
      this.conn = transport.connect(req, {
        open: () => live() && this.opened(),
        event: (type, data, id) => live() && this.event(type, data, id),
        retry: (ms) => {
          if (live()) this.retryFloor = ms;
        },
        error: (f) => {
          if (!live()) return;
          this.conn = undefined;
          // The cause's message when it has one (a 200 that is not an event stream, a network error).
          const dropped = f.status === 0 && !f.problem && !(f.cause instanceof Error);
          const err = new RealSyncError(f.status, f.problem, f.cause,
            { retryAfterMs: f.retryAfterMs, message: dropped ? "the event stream dropped" : undefined });
          if (transport.auth === "url" && f.status === 401 && !this.newStreamTokenFor401) {
            // The stream token was refused, not the identity token, which
            // just got it: it expired before the connection went out (a
            // browser holds an EventSource back while its 6 connections to
            // the origin are taken), or it was used (by a replay of its
            // URL, say). Once, at once, with a new one.
            this.newStreamTokenFor401 = true;
            this.signal("error", err);
            if (live()) this.retry(err, 0);
            return;
          }
          this.fail(err);
        },
      });
    } catch (e) {
      this.end("error", asError(e));
    }
  }

  /** request authenticates one connection. */
  private async request(transport: Transport): Promise<StreamRequest> {
    const types = [...this.types, "token_expiring"];
    const lastEventId = this.resumable ? this.lastEventId || undefined : undefined;
    const idleTimeoutMs = this.idleTimeoutMs;
    if (transport.auth === "header") {
      const token = await this.client.identityToken();
      const headers: Record<string, string> = {};
      if (token) headers.Authorization = `Bearer ${token}`;
      if (lastEventId) headers["Last-Event-ID"] = lastEventId;
      return { url: this.client.streamUrl(this.path, undefined, this.query), headers, types, fetch: this.client.fetchImpl, idleTimeoutMs };
    }
    const token = this.opts.streamToken ? await this.opts.streamToken() : (await this.fetchStreamToken()).token;
    return {
      url: this.client.streamUrl(this.path, token, { ...this.query, lastEventId }),
      headers: {}, types, fetch: this.client.fetchImpl, idleTimeoutMs,
    };
  }

  /** idleTimeoutMs is the watchdog's limit (LiveOptions.idleTimeoutMs; 0: off). */
  private get idleTimeoutMs(): number {
    return this.opts.idleTimeoutMs ?? 45000;
  }

  private opened(): void {
    this.openedAt = Date.now();
    this.attempt = 0;
    this.renewedFor401 = false;
    this.newStreamTokenFor401 = false;
    this.resuming = this.everOpen;
    this.everOpen = true;
    this.signal("open", {});
  }

  private event(type: string, data: string, id: string): void {
    let e: { type: string };
    try {
      e = JSON.parse(data) as { type: string };
    } catch (err) {
      this.signal("error", new RealSyncError(0, undefined, err, { message: `a ${type} event that is not JSON` }));
      return;
    }
    if (type === "token_expiring") {
      void this.tokenExpiring(e as TokenExpiring);
      return;
    }
    if (type === "resumed") {
      // The server replayed every event missed (zero or more, already
      // received): no id, no room event, nothing to apply. A personal
      // stream opened with a lastEventId is ready then (no snapshot).
      if (!this.isReady && this.everOpen) this.markReady();
      if (this.resuming) {
        this.resuming = false;
        this.signal("resumed", { snapshot: false });
      }
      return;
    }
    if (id) this.lastEventId = id;
    if (this.resuming && (e.type === "snapshot" || e.type === "rooms")) {
      this.resuming = false;
      this.signal("resumed", { snapshot: true });
    }
    this.leftUnknown = false;
    this.receive(type, e);
  }

  /** tokenExpiring renews the identity token and resumes, or ends the stream
   * when the token cannot be renewed. While the token has expiringFloorMs
   * left, a renewal that failed transiently (network, 408, 429, 5xx) is
   * retried as a dropped connection is (fail: after a backoff), and a token
   * provider (getToken) that still returns the expiring token is asked again
   * on a reconnection at once (the server keeps a stream opened with under a
   * minute left for half of it): each such stream resumes without a gap. */
  private async tokenExpiring(data: TokenExpiring): Promise<void> {
    const gen = ++this.gen; // the old connection is over
    this.conn?.close();
    this.conn = undefined;
    this.signal("token_expiring", data);
    const expiresAt = Date.parse(data.expiresAt);
    const again = data.expiresAt === this.lastExpiring;
    this.lastExpiring = data.expiresAt;
    const provider = this.opts.streamToken === undefined && this.client.hasTokenProvider();
    let cause: unknown;
    let renewed = false;
    if (!again || provider) {
      try {
        const token = await this.client.identityToken(expiresAt);
        const exp = tokenExpiry(token);
        // A caller-supplied stream token: the next one is the caller's to renew.
        renewed = exp === undefined ? this.opts.streamToken !== undefined : exp > expiresAt;
      } catch (e) {
        cause = e;
      }
    }
    if (gen !== this.gen || this.closed) return;
    if (!renewed) {
      const left = expiresAt - (Date.now() + this.client.clockSkew());
      // a renewal that failed on the way (the server's refresh) is tried again;
      // the game's callback failing (getToken, refreshToken) is not ours to retry
      if (left >= expiringFloorMs && cause instanceof RealSyncError && transient(cause)) {
        this.lastExpiring = ""; // the next token_expiring tries again
        this.fail(asError(cause));
        return;
      }
      if (left >= expiringFloorMs && cause === undefined && provider) {
        void this.connect(); // the provider may have a new token by the next one
        return;
      }
      if (cause instanceof RealSyncError) this.signal("error", cause);
      const detail = cause !== undefined && !(cause instanceof RealSyncError)
        ? `the identity token expires at ${data.expiresAt} and its renewal failed: ${cause instanceof Error ? cause.message : String(cause)}`
        : provider
          ? `the identity token expires at ${data.expiresAt} and getToken still returns it: return a new token at least a minute before the old one expires`
          : `the identity token expires at ${data.expiresAt} and could not be renewed: pass getToken or refreshToken`;
      this.end("error", new RealSyncError(401, { type: "about:blank", title: "Unauthenticated", status: 401, code: "UNAUTHENTICATED",
        detail }, cause));
      return;
    }
    void this.connect();
  }

  /** fail handles the failure of the current connection (or of its authentication). */
  private fail(err: RealSyncError): void {
    if (this.leftUnknown && (err.code === "NOT_A_MEMBER" || err.status === 404)) {
      this.end("left"); // the player_left just received was the caller's own
      return;
    }
    const gen = this.gen;
    this.signal("error", err);
    if (gen !== this.gen || this.closed) return; // a listener called reconnect() or close(): that replaces the retry
    const removed = this.everOpen ? this.removed(err) : undefined;
    if (removed) {
      this.end(removed, err); // the player is no longer in the room, or the room is gone
      return;
    }
    const openFor = this.openedAt ? Date.now() - this.openedAt : -1; // -1: it never opened
    this.openedAt = 0;
    if (err.status === 401 && !this.renewedFor401) {
      this.renewedFor401 = true;
      this.client.renewToken().then(
        () => gen === this.gen && !this.closed && this.retry(err, 0),
        (e) => {
          if (gen !== this.gen || this.closed) return;
          this.signal("error", asError(e));
          this.end("error", err);
        },
      );
      return;
    }
    if (!transient(err) && !this.waits(err)) {
      this.end("error", err);
      return;
    }
    if (openFor >= 0 && openFor >= (this.opts.backoff?.stableMs ?? 30000)) this.failures = 0;
    this.failures++;
    // The server's asks (Retry-After, retry:) count up to the backoff's cap:
    // a mistaken or hostile value must not stall the client for days.
    // Past such a floor the backoff's jitter is added, up to the cap: streams
    // refused together (one Retry-After) must not come back together.
    const cap = backoffMaxMs(this.opts.backoff);
    const floor = Math.max(Math.min(err.retryAfterMs ?? 0, cap), Math.min(this.retryFloor, cap));
    const jitter = backoffDelay(this.failures, this.opts.backoff);
    this.retry(err, floor > 0 ? Math.min(floor + jitter, Math.max(floor, cap)) : jitter);
  }

  private retry(err: RealSyncError, delayMs: number): void {
    // setTimeout runs a delay past 2^31−1 ms (24.8 days) at once: never ask it for more.
    delayMs = Math.min(delayMs, maxTimeoutMs);
    const gen = this.gen;
    this.signal("reconnecting", { attempt: this.attempt + 1, delayMs, error: err });
    if (gen !== this.gen || this.closed) return; // a listener called reconnect() or close()
    clearTimeout(this.timer);
    this.timer = setTimeout(() => gen === this.gen && !this.closed && void this.connect(), delayMs);
  }

  /** markReady resolves ready (subclasses: once the first snapshot or list is applied). */
  protected markReady(): void {
    if (this.isReady) return;
    this.isReady = true;
    this.resolveReady();
  }

  /**
   * reconnect drops the connection and resumes at once after the last
   * event received. Call it when the app learns the network changed (a
   * phone moved from Wi-Fi to cellular, came back from the background): the
   * old connection may be dead without anyone noticing until the heartbeat
   * watchdog does (idleTimeoutMs), or, in browsers, never.
   */
  reconnect(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    void this.connect();
  }

  /** close ends the stream for good (closed, reason "closed"). */
  close(): void {
    this.end("closed");
  }

  protected end(reason: Closed["reason"], error?: RealSyncError): void {
    if (this.closed) return;
    this.closed = true;
    this.unwatch?.();
    this.unwatch = undefined;
    this.gen++;
    clearTimeout(this.timer);
    this.conn?.close();
    this.conn = undefined;
    if (!this.isReady) {
      this.rejectReady(error ?? new RealSyncError(0, undefined, undefined,
        { code: "CLOSED", message: `the stream ended (${reason}) before it was ready` }));
    }
    this.signal("closed", error ? { reason, error } : { reason });
  }

  /** waits tells a refusal that passes with time, retried as a transient error (the personal stream's SESSION_EXISTS). */
  protected waits(_err: RealSyncError): boolean {
    return false;
  }

  /** removed tells a refusal, after the stream was open, that means the caller is no longer in its
   * room (room streams): the reason the stream ends with, or undefined. */
  protected removed(_err: RealSyncError): Closed["reason"] | undefined {
    return undefined;
  }

  /** resumable: whether the stream resumes after its last event id (rooms; the lobby starts over). */
  protected abstract readonly resumable: boolean;
  protected abstract receive(type: string, data: unknown): void;
}

/** maxTimeoutMs is the longest delay setTimeout waits (a longer one runs at once). */
const maxTimeoutMs = 2 ** 31 - 1;

/** expiringFloorMs is the least time left on an expiring identity token for
 * which a stream still tries to renew it and resume (tokenExpiring). */
const expiringFloorMs = 5000;

/** transient tells the errors worth a retry: network, 408, 429 and 5xx. */
function transient(e: RealSyncError): boolean {
  return e.status === 0 || e.status === 408 || e.status === 429 || e.status >= 500;
}

function asError(e: unknown): RealSyncError {
  return e instanceof RealSyncError ? e : new RealSyncError(0, undefined, e);
}

/** LiveRoom keeps a local copy of a room, its players and its state, applying
 * the snapshot and every event of its stream. Listen with on("state", …),
 * on("player_joined", …), …, or on("change", …) for any applied event. */
export class LiveRoom extends LiveStream<RoomEvents> {
  protected readonly resumable = true;
  room?: Room;
  state: State = {};
  stateVersion = 0;
  /** The room version of the last event applied. */
  version = 0;

  constructor(client: RealSync, readonly roomId: string, opts: LiveOptions = {}) {
    super(client, `/v1/rooms/${encodeURIComponent(roomId)}/events`,
      ["snapshot", "state", "player_joined", "player_left", "player_connected", "player_disconnected",
        "room_updated", "message", "room_closed", "seats_reserved", "reservation_expired", "resumed"], opts,
      () => client.roomStreamToken(roomId));
    this.open();
  }

  /**
   * removed: a reconnection refused after the stream was open with 403
   * NOT_A_MEMBER (a public room: the player was removed while away,
   * REALSYNC_DISCONNECT_GRACE ran out or kicked) ends the stream with
   * "left"; with 404 ROOM_NOT_FOUND, "room_closed" for a public room (it
   * answers non-members 403: the room is gone) and "left" for a private
   * one (it answers non-members 404 too: removed, or gone), both with that
   * error rather than "error".
   */
  protected override removed(err: RealSyncError): Closed["reason"] | undefined {
    if (err.status === 403 && err.code === "NOT_A_MEMBER") return "left";
    if (err.status === 404 && err.code === "ROOM_NOT_FOUND") return this.room?.visibility === "public" ? "room_closed" : "left";
    return undefined;
  }

  /** playerId is the caller's player in the room, when known (LiveOptions.playerId). */
  get playerId(): number | undefined {
    return this.opts.playerId ?? this.client.playerIdIn(this.roomId);
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
    if (e.type === "snapshot") this.markReady();
    const me = this.playerId;
    this.emit(e.type, e as never);
    this.emit("change", e as never);
    if (e.type === "room_closed") this.end("room_closed");
    else if (e.type === "player_left" && me !== undefined && e.playerId === me) this.end("left");
    else if (e.type === "player_left" && me === undefined && e.reason !== "disconnected") this.leftUnknown = true;
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
        // each key defined, not assigned: a key "__proto__" (refused by
        // the server since, held by a room from before) would set the
        // state object's prototype, not a key
        for (const [k, v] of Object.entries(e.set)) {
          Object.defineProperty(this.state, k, { value: v, enumerable: true, writable: true, configurable: true });
        }
        this.stateVersion = e.stateVersion;
        break;
      case "player_joined":
        if (!players.some((p) => p.playerId === e.player.playerId)) {
          players.push(e.player);
          room.playerCount = players.length;
        }
        if (e.reservedSeats !== undefined) room.reservedSeats = e.reservedSeats;
        break;
      case "seats_reserved":
      case "reservation_expired":
        room.reservedSeats = e.reservedSeats;
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
  protected readonly resumable = false;
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
    if (e.type === "rooms") this.markReady();
    this.emit(e.type, e as never);
    this.emit("change", e as never);
  }
}

/** LiveMe is the caller's personal stream (a session on a platform): the
 * followed users' status, kept per user at its highest version, and
 * session_replaced, which ends it (reason "left": reconnecting would replace
 * the new session), and match_found for the user's matched tickets (at least
 * once: a repeat has the same matchId). */
export class LiveMe extends LiveStream<MeEvents> {
  protected readonly resumable = true;
  /** The session of the last snapshot. */
  session?: string;
  /** The followed users' status, by user id. */
  readonly presence = new Map<string, Schemas["UserPresenceEvent"]>();

  constructor(client: RealSync, readonly platform: Schemas["Platform"], opts: LiveOptions = {}) {
    super(client, "/v1/me/events", ["snapshot", "presence", "session_replaced", "match_found", "message", "invite", "kicked", "banned",
      "room_closed", "resumed"], opts,
      () => client.meStreamToken(), { platform });
    this.lastEventId = opts.lastEventId ?? "";
    this.open();
  }

  /**
   * waits: 409 SESSION_EXISTS (REALSYNC_SESSION_POLICY reject-new) is
   * retried with the backoff, at least its Retry-After: the other session
   * ends, or its lease lapses when its client vanished (within
   * REALSYNC_PRESENCE_TTL, 15 s by default). Each attempt is reported as
   * reconnecting; close() gives up.
   */
  protected override waits(err: RealSyncError): boolean {
    return err.status === 409 && err.code === "SESSION_EXISTS";
  }

  protected receive(type: string, data: unknown): void {
    const e = data as MeEvents[keyof MeEvents];
    if (e.type === "presence") {
      const known = this.presence.get(e.userId);
      if (known && known.version > e.version) return; // older than what we keep
      this.presence.set(e.userId, e);
    } else if (e.type === "snapshot") {
      this.session = e.session;
      this.markReady();
    }
    this.emit(e.type, e as never);
    this.emit("change", e as never);
    if (e.type === "session_replaced") this.end("left");
  }
}

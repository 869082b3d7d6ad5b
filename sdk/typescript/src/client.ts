// The REST client: a thin layer over the client generated from openapi.yaml
// (openapi-fetch over the types of openapi-typescript) that adds the token
// and turns every problem+json answer into a RealSyncError.
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema.js";
import { LiveLobby, LiveMe, LiveRoom, type LiveOptions } from "./live.js";
import { browserTransport, type Transport } from "./transport.js";

type Schemas = components["schemas"];
export type Room = Schemas["Room"];
export type Player = Schemas["Player"];
export type State = Schemas["State"];
export type Problem = Schemas["Problem"];
export type ProblemCode = Problem["code"];
export type FieldError = Schemas["FieldError"];
export type RoomJoined = Schemas["RoomJoined"];
export type QuickJoined = Schemas["QuickJoined"];
export type GuestToken = Schemas["GuestToken"];
export type StreamToken = Schemas["StreamToken"];
export type Message = Schemas["Message"];
export type LobbyStats = Schemas["LobbyStats"];
export type CreateRoomRequest = Schemas["CreateRoomRequest"];
export type UpdateRoomRequest = Schemas["UpdateRoomRequest"];
export type QuickJoinRequest = Schemas["QuickJoinRequest"];
export type MessageRequest = Schemas["MessageRequest"];
export type MyRoom = Room & { playerId: number };
export type Platform = Schemas["Platform"];
export type Presence = Schemas["Presence"];
export type Ticket = Schemas["Ticket"];
export type CreateTicketRequest = Schemas["CreateTicketRequest"];
export type Party = Schemas["Party"];
export type PartyMember = Schemas["PartyMember"];

/** ListRoomsQuery is GET /v1/rooms' query; attributes become attr.<key>[.<op>]. */
export type ListRoomsQuery = Omit<NonNullable<paths["/v1/rooms"]["get"]["parameters"]["query"]>, "attr"> & {
  attributes?: Record<string, string | number | { gte?: number; gt?: number; lte?: number; lt?: number }>;
};

/**
 * RealSyncError is a problem+json answer, with its `code`; a network failure
 * (or a stream the browser's EventSource dropped without saying why) is code
 * NETWORK with status 0; a live stream closed before it was ready rejects
 * `ready` with code CLOSED (status 0); an exception a live stream's listener
 * threw is reported as code LISTENER (status 0, the exception as cause).
 */
export class RealSyncError extends Error {
  readonly status: number;
  readonly code: ProblemCode | "NETWORK" | "CLOSED" | "LISTENER";
  readonly errors: FieldError[];
  readonly problem?: Problem;
  /** How long the server asked to wait (its Retry-After, in ms), when it said. */
  readonly retryAfterMs?: number;

  constructor(status: number, problem?: Problem, cause?: unknown,
    opts: { code?: "NETWORK" | "CLOSED" | "LISTENER"; message?: string; retryAfterMs?: number } = {}) {
    super(opts.message ?? problem?.detail ?? problem?.title ?? (cause instanceof Error ? cause.message : `HTTP ${status}`),
      { cause });
    this.name = "RealSyncError";
    this.status = status;
    this.code = problem?.code ?? opts.code ?? (status === 0 ? "NETWORK" : "INTERNAL");
    this.errors = problem?.errors ?? [];
    this.problem = problem;
    this.retryAfterMs = opts.retryAfterMs;
  }
}

/** retryAfterMs reads a Retry-After header (seconds, or an HTTP date) as ms from now. */
export function retryAfterMs(header: string | null | undefined): number | undefined {
  if (!header) return undefined;
  const secs = Number(header);
  if (Number.isFinite(secs) && header.trim() !== "") return Math.max(0, secs * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

export interface RealSyncOptions {
  /** The server, e.g. "http://localhost:8080" (no trailing slash needed). */
  baseUrl: string;
  /** An identity JWT (a guest's, or one your login signed); guest() sets one. */
  token?: string;
  /**
   * A token provider: called before every request and every (re)connection
   * of a live stream, it returns the identity token to use (cache it on your
   * side; return a new one when yours is about to expire: at least a minute
   * before, since the server ends a stream 30 s before its token expires
   * and a stream asks again then, reconnecting with the old token while it
   * has 5 s left and ending after). It wins over `token` and over the
   * renewals below.
   */
  getToken?: () => Promise<string | undefined> | string | undefined;
  /**
   * How live streams connect. The Node entry (`@realsync/sdk`) sends the
   * identity token in an Authorization header (the eventsource package); the
   * browser entry (`@realsync/sdk/browser`) uses the browser's EventSource
   * with a stream token in the URL.
   */
  transport?: Transport;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /**
   * Renews a token your own login signed (the server cannot: it answers
   * REFRESH_NOT_ALLOWED): called shortly before the token expires, and once
   * after a request refused 401 (which is then sent again), it returns a new
   * one. Without it, tokens are renewed with POST /v1/auth/refresh
   * (guest tokens and tokens signed with the server's secret).
   */
  refreshToken?: () => Promise<string>;
  /** Called with every new token (guest(), renewals), e.g. to store it. */
  onToken?: (token: string) => void;
  /** Renew the token when it expires within this many ms; default 120000. */
  refreshMarginMs?: number;
  /**
   * The longest a REST request may take, answer body included, in ms
   * (default 30000; 0: no limit): then it fails with a RealSyncError, code
   * NETWORK, status 0 (a dead keep-alive connection after a network change
   * otherwise hangs for minutes). A request that may have been applied is
   * safe to send again only with an idempotency key. Event streams have
   * their own watchdog (LiveOptions.idleTimeoutMs).
   */
  requestTimeoutMs?: number;
}

type Result<T> = { data?: T; error?: unknown; response: Response };

/** RealSync is the REST client. Every method throws RealSyncError on an error answer. */
export class RealSync {
  readonly baseUrl: string;
  token?: string;
  /** The generated client, for anything the helpers below do not cover. */
  readonly api: Client<paths>;
  private readonly opts: RealSyncOptions;
  private renewing?: Promise<void>;
  private unrenewable?: string; // a token the server refused to refresh (REFRESH_NOT_ALLOWED)
  private clockSkewMs = 0; // the token issuer's clock minus this device's (see learnClock)
  private players = new Map<string, number>(); // the caller's playerId by room, from the answers that say

  constructor(opts: RealSyncOptions) {
    this.opts = opts;
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.token = opts.token;
    const timeoutMs = opts.requestTimeoutMs ?? 30000;
    const base = opts.fetch;
    this.api = createClient<paths>({
      baseUrl: this.baseUrl,
      fetch: timeoutMs > 0
        ? (req: Request, init?: RequestInit) => limited(base ?? globalThis.fetch, req, init, timeoutMs)
        : base,
    });
    // A copy of each request sent with the client's token, to send again once after a 401 (see onResponse).
    const copies = new WeakMap<Request, Request>();
    const auth: Middleware = {
      onRequest: async ({ request, schemaPath }) => {
        // A failed renewal leaves the request to the token it has (still
        // valid, or the answer says 401); streams report it as an error.
        const renewable = !schemaPath.startsWith("/v1/auth/");
        if (renewable) await this.identityToken().catch(() => undefined);
        if (this.token && !request.headers.has("Authorization")) {
          request.headers.set("Authorization", `Bearer ${this.token}`);
          if (renewable) copies.set(request, request.clone());
        }
        return request;
      },
      // A 401 to the client's token (its key removed from the server, an
      // early expiry) renews the token once through getToken or
      // refreshToken and sends the request again: nothing was done
      // (authentication comes first). Not POST /v1/auth/refresh: it
      // authenticates with the token refused. A token whose renewal
      // failed, or brought the same token, is not renewed again for a
      // 401: the 401 stands.
      onResponse: async ({ request, response, options }) => {
        const copy = copies.get(request);
        if (response.status !== 401 || !copy) return undefined;
        const sent = copy.headers.get("Authorization") ?? "";
        if (!(await this.renewedAfter401(sent))) return undefined;
        copy.headers.set("Authorization", `Bearer ${this.token}`);
        const send = options.fetch; // unbound: a browser's fetch called as a method of options throws
        return send(copy);
      },
    };
    this.api.use(auth);
  }

  private refused?: string; // a token refused 401 whose renewal failed or brought no other (see renewedAfter401)

  /**
   * renewedAfter401 renews the token through getToken or refreshToken
   * after a request sent with the Authorization `sent` was refused 401,
   * unless it was renewed meanwhile (another request, a stream), and tells
   * whether there is another token to send. One try per refused token.
   */
  private async renewedAfter401(sent: string): Promise<boolean> {
    if (this.token && sent !== `Bearer ${this.token}`) return true;
    const old = this.token;
    if (!old || old === this.refused || !(this.opts.getToken || this.opts.refreshToken)) return false;
    try {
      await this.renewToken();
    } catch {
      // the 401 stands
    }
    if (this.token && this.token !== old) return true;
    this.refused = old;
    return false;
  }

  /** tokenExpiresAt is when the current token expires (ms since the epoch), if it says. */
  tokenExpiresAt(): number | undefined {
    return tokenExpiry(this.token);
  }

  /**
   * freshToken renews the token when it expires within refreshMarginMs, or
   * at or before `before` (ms since the epoch: a stream said its token is
   * expiring). One renewal at a time; a failed renewal throws. "Within"
   * is by the clock of the token's issuer when a token told it (see
   * learnClock): a device clock set wrong by more than the margin would
   * otherwise renew before every request (ahead), or not until the token
   * is refused (behind).
   */
  async freshToken(before?: number): Promise<void> {
    const exp = this.tokenExpiresAt();
    if (exp === undefined) return;
    const now = Date.now() + this.clockSkewMs;
    const due = exp - now < (this.opts.refreshMarginMs ?? 120000) || (before !== undefined && exp <= before);
    if (!due || (this.token === this.unrenewable && !this.opts.refreshToken)) return;
    // After a failed renewal, a token that still serves is not renewed again
    // before a backoff (1 s, doubling to 30 s) ends, but for a stream's
    // token_expiring: each REST call within the margin asked a failing
    // login again (a tester's 51 calls for 50 requests).
    if (before === undefined && exp > now && Date.now() < this.renewRetryAt) return;
    this.renewing ??= this.renew().then(() => {
      this.renewDelayMs = 0;
      this.renewRetryAt = 0;
    }, (e: unknown) => {
      this.renewDelayMs = Math.min(Math.max(1000, this.renewDelayMs * 2), 30000);
      this.renewRetryAt = Date.now() + this.renewDelayMs;
      throw e;
    }).finally(() => (this.renewing = undefined));
    await this.renewing;
  }

  private renewDelayMs = 0; // the backoff after the last failed renewal (freshToken)
  private renewRetryAt = 0; // no renewal within the margin before then (ms since the epoch)

  /** hasTokenProvider says whether the identity token comes from getToken. */
  hasTokenProvider(): boolean {
    return this.opts.getToken !== undefined;
  }

  /** clockSkew is the token issuer's clock minus this device's, in ms (learnClock). */
  clockSkew(): number {
    return this.clockSkewMs;
  }

  /**
   * identityToken returns the identity token to send now: the token
   * provider's (getToken) when there is one, else the current token, renewed
   * first when due (see freshToken). A failed renewal throws.
   */
  async identityToken(before?: number): Promise<string | undefined> {
    if (this.opts.getToken) {
      const t = await this.opts.getToken();
      if (t !== undefined && t !== this.token) this.setToken(t);
      return this.token;
    }
    await this.freshToken(before);
    return this.token;
  }

  /**
   * renewToken gets a new identity token whether or not the current one is
   * due (after a 401): from getToken, the refreshToken callback, or
   * POST /v1/auth/refresh. Throws when none can.
   */
  async renewToken(): Promise<void> {
    if (this.opts.getToken) {
      await this.identityToken();
      return;
    }
    this.renewing ??= this.renew().finally(() => (this.renewing = undefined));
    await this.renewing;
  }

  /** transport is how this client's live streams connect. */
  get transport(): Transport {
    return this.opts.transport ?? browserTransport;
  }

  private async renew(): Promise<void> {
    if (this.opts.refreshToken) {
      this.setToken(await this.opts.refreshToken());
      return;
    }
    try {
      await this.refresh();
    } catch (e) {
      // A studio's token: only its login renews it (pass refreshToken).
      if (e instanceof RealSyncError && e.code === "REFRESH_NOT_ALLOWED") this.unrenewable = this.token;
      throw e;
    }
  }

  private setToken(token: string): void {
    this.token = token;
    this.opts.onToken?.(token);
  }

  /**
   * learnClock takes the server's clock, which decides when a token is
   * refused, from a token the server issued just now (a guest, refresh or
   * stream token answer): its `iat`, to within the round trip and a second.
   * Tokens of unknown age (the `token` option, getToken's, refreshToken's:
   * a login may hand back a cached one) teach nothing.
   */
  private learnClock(token: string): void {
    const iat = tokenClaims(token)?.iat;
    if (typeof iat === "number" && Number.isFinite(iat)) this.clockSkewMs = iat * 1000 - Date.now();
  }

  /** issued is a token answer of the server, its clock learned (learnClock). */
  private issued<T extends { token: string }>(answer: T): T {
    this.learnClock(answer.token);
    return answer;
  }

  /** refresh renews the token with POST /v1/auth/refresh (same user) and uses the new one. */
  async refresh(): Promise<GuestToken> {
    const g = this.issued(await this.call(this.api.POST("/v1/auth/refresh", {})));
    this.setToken(g.token);
    return g;
  }

  /** roomStreamToken gets a token that opens the room's event stream for 60 s (members). */
  roomStreamToken(roomId: string): Promise<StreamToken> {
    return this.call(this.api.POST("/v1/rooms/{roomId}/stream-token", { params: { path: { roomId } } })).then((t) => this.issued(t));
  }

  /** lobbyStreamToken gets a token that opens the lobby stream for 60 s. */
  lobbyStreamToken(): Promise<StreamToken> {
    return this.call(this.api.POST("/v1/lobby/stream-token", {})).then((t) => this.issued(t));
  }

  /** meStreamToken gets a token that opens the caller's personal stream for 60 s (players only). */
  meStreamToken(): Promise<StreamToken> {
    return this.call(this.api.POST("/v1/me/stream-token", {})).then((t) => this.issued(t));
  }

  /** getPresence returns the online status of each of userIds (1..100), in the order given. */
  async getPresence(userIds: string[]): Promise<Presence[]> {
    const r = await this.call(this.api.GET("/v1/presence", { params: { query: { userIds } } }));
    return r.users;
  }

  /** setFollowing replaces the users whose status changes reach the personal stream (0..500); returns them sorted. */
  async setFollowing(userIds: string[]): Promise<string[]> {
    const r = await this.call(this.api.PUT("/v1/me/following", { body: { userIds } }));
    return r.userIds;
  }

  /** joinParty puts the caller in leaderUserId's party, replacing any other, for 24 hours (joining
   * again renews it): where the server asks a party's consent (REALSYNC_PARTY_CONSENT party,
   * production's default), only that leader's tickets may name the caller. Tells nobody: the
   * game's own invite (a direct message) asks. */
  joinParty(leaderUserId: string): Promise<Party> {
    return this.call(this.api.PUT("/v1/me/party", { body: { leaderUserId } }));
  }

  /** getParty is the caller's party: 404 PARTY_NOT_FOUND when in none. */
  getParty(): Promise<Party> {
    return this.call(this.api.GET("/v1/me/party"));
  }

  /** listPartyMembers is the users in the caller's party (who joined it naming the caller, and
   * have neither left, joined another, nor let it expire): the most recently joined first, at
   * most 100. */
  async listPartyMembers(): Promise<PartyMember[]> {
    const r = await this.call(this.api.GET("/v1/me/party/members"));
    return r.members;
  }

  /** leaveParty takes the caller out of their party (in none: done as well). */
  async leaveParty(): Promise<void> {
    await this.call(this.api.DELETE("/v1/me/party"));
  }

  /** sendDirectMessage sends userId a `message` event on their personal stream (LiveMe): at once
   * to their open sessions, later to each platform without one (offline delivery). idempotencyKey
   * makes a retry safe, after a 503 STORE_UNAVAILABLE too: the same key and message get the first
   * send's answer, and nothing is sent again (the inbox remembers its keys for 10 minutes). */
  sendDirectMessage(userId: string, body: Schemas["DirectMessageRequest"], idempotencyKey?: string): Promise<Schemas["DirectSent"]> {
    const header = idempotencyKey === undefined ? {} : { "Idempotency-Key": idempotencyKey };
    return this.call(this.api.POST("/v1/users/{userId}/messages", { params: { path: { userId }, header }, body }));
  }

  /** invite sends userId an `invite` event to a room the caller is in: its id, name, mode and
   * region, and a private room's invite code (acceptInvite joins with it). idempotencyKey makes a
   * retry safe, as sendDirectMessage's: the same key and invite get the first send's answer, and
   * nothing is sent again; without one, an invite retried after a lost answer arrives twice. */
  invite(roomId: string, userId: string, idempotencyKey?: string): Promise<Schemas["DirectSent"]> {
    const header = idempotencyKey === undefined ? {} : { "Idempotency-Key": idempotencyKey };
    return this.call(this.api.POST("/v1/rooms/{roomId}/invites", { params: { path: { roomId }, header }, body: { userId } }));
  }

  /** acceptInvite joins the room of an invite: by its code for a private room, else by id. */
  acceptInvite(invite: Schemas["UserInviteEvent"]): Promise<RoomJoined> {
    return invite.inviteCode ? this.joinByCode(invite.inviteCode) : this.joinRoom(invite.roomId);
  }

  private async call<T>(p: Promise<Result<T>>): Promise<T> {
    let r: Result<T>;
    try {
      r = await p;
    } catch (e) {
      const timedOut = e instanceof Error && e.name === "TimeoutError";
      throw new RealSyncError(0, undefined, e,
        { message: timedOut ? `no answer within ${this.opts.requestTimeoutMs ?? 30000} ms (requestTimeoutMs)` : undefined });
    }
    if (!r.response.ok) {
      throw new RealSyncError(r.response.status, isProblem(r.error) ? r.error : undefined, undefined,
        { retryAfterMs: retryAfterMs(r.response.headers.get("Retry-After")) });
    }
    return r.data as T;
  }

  /** guest gets a guest token and uses it from now on. */
  async guest(name?: string): Promise<GuestToken> {
    const g = this.issued(await this.call(this.api.POST("/v1/auth/guest", { body: name === undefined ? {} : { name } })));
    this.setToken(g.token);
    return g;
  }

  /**
   * playerIdIn is the caller's playerId in a room, as this client last
   * learned it (createRoom, joinRoom, joinByCode, quickJoin, myRooms): live
   * streams use it to tell the caller's own player_left.
   */
  playerIdIn(roomId: string): number | undefined {
    return this.players.get(roomId);
  }

  /** joined remembers the caller's playerId in a room. */
  private joined<T extends { room: { id: string }; playerId: number }>(r: T): T {
    this.players.set(r.room.id, r.playerId);
    return r;
  }

  /** createRoom makes a room, the caller its owner, player 1. idempotencyKey makes a retry
   * safe: the same key and body get the first answer again, not a second room (after a 503
   * STORE_UNAVAILABLE the room may exist: myRooms tells). */
  async createRoom(body: CreateRoomRequest, idempotencyKey?: string): Promise<RoomJoined> {
    const header = idempotencyKey === undefined ? {} : { "Idempotency-Key": idempotencyKey };
    return this.joined(await this.call(this.api.POST("/v1/rooms", { params: { header }, body })));
  }

  getRoom(roomId: string): Promise<Room> {
    return this.call(this.api.GET("/v1/rooms/{roomId}", { params: { path: { roomId } } }));
  }

  updateRoom(roomId: string, body: UpdateRoomRequest): Promise<Room> {
    return this.call(this.api.PATCH("/v1/rooms/{roomId}", { params: { path: { roomId } }, body }));
  }

  async deleteRoom(roomId: string): Promise<void> {
    await this.call(this.api.DELETE("/v1/rooms/{roomId}", { params: { path: { roomId } } }));
  }

  async joinRoom(roomId: string): Promise<RoomJoined> {
    return this.joined(await this.call(this.api.POST("/v1/rooms/{roomId}/join", { params: { path: { roomId } } })));
  }

  async joinByCode(inviteCode: string): Promise<RoomJoined> {
    return this.joined(await this.call(this.api.POST("/v1/rooms/join-by-code", { body: { inviteCode } })));
  }

  async leaveRoom(roomId: string): Promise<void> {
    await this.call(this.api.POST("/v1/rooms/{roomId}/leave", { params: { path: { roomId } } }));
  }

  async kick(roomId: string, playerId: number): Promise<void> {
    await this.call(this.api.DELETE("/v1/rooms/{roomId}/players/{playerId}", {
      params: { path: { roomId, playerId: String(playerId) } },
    }));
  }

  /** reserveSeats holds a seat of a waiting room for each user until they join or ttlSeconds
   * pass (default 15, at most 300): the owner, or an API key with rooms:write (a matchmaker).
   * Refused (no seat held): 409 ROOM_NOT_JOINABLE unless waiting, 409 USER_BANNED when the room
   * banned any of userIds (servers before it: 403 BANNED), 409 ROOM_FULL. */
  reserveSeats(roomId: string, userIds: string[], ttlSeconds?: number): Promise<Schemas["SeatReservation"]> {
    return this.call(this.api.POST("/v1/rooms/{roomId}/reservations", {
      params: { path: { roomId } }, body: { userIds, ttlSeconds },
    }));
  }

  /** createTicket queues the caller for a match of a mode (with partyUserIds, as their party's
   * leader): one active ticket per user. Each party member must have joined the caller's party
   * (joinParty) where the server asks a party's consent (REALSYNC_PARTY_CONSENT party,
   * production's default; with follow, follow the caller: setFollowing): else 403
   * PARTY_CONSENT_REQUIRED. The match arrives as `match_found` on the personal
   * stream (LiveMe) and on the ticket (getTicket). idempotencyKey makes a retry safe: the same
   * key and body get the same ticket, as it is now; once it ended and is gone, 404
   * TICKET_NOT_FOUND (queue again under a new key). */
  async createTicket(body: CreateTicketRequest, idempotencyKey?: string): Promise<Ticket> {
    const header = idempotencyKey === undefined ? {} : { "Idempotency-Key": idempotencyKey };
    return (await this.call(this.api.POST("/v1/matchmaking/tickets", { params: { header }, body }))).ticket;
  }

  /** getTicket is a ticket of the caller: searching (its window, time waited), matched (roomId), expired or cancelled. */
  async getTicket(ticketId: string): Promise<Ticket> {
    return (await this.call(this.api.GET("/v1/matchmaking/tickets/{ticketId}", { params: { path: { ticketId } } }))).ticket;
  }

  /** cancelTicket stops a search; a ticket already cancelled or expired is left as it is, a
   * matched one rejects with TICKET_MATCHED (409): its seat is held, join or leave the room. */
  async cancelTicket(ticketId: string): Promise<void> {
    await this.call(this.api.DELETE("/v1/matchmaking/tickets/{ticketId}", { params: { path: { ticketId } } }));
  }

  getState(roomId: string): Promise<Schemas["StateView"]> {
    return this.call(this.api.GET("/v1/rooms/{roomId}/state", { params: { path: { roomId } } }));
  }

  /** patchState merge-patches the state (null deletes a key); ifMatch guards against lost updates. */
  patchState(roomId: string, patch: State, ifMatch?: number): Promise<Schemas["StateVersions"]> {
    return this.call(this.api.PATCH("/v1/rooms/{roomId}/state", {
      params: { path: { roomId }, header: ifMatch === undefined ? {} : { "If-Match": `"${ifMatch}"` } },
      body: patch,
    }));
  }

  /** sendMessage sends a message to the room. idempotencyKey makes a retry safe, after a 503
   * STORE_UNAVAILABLE too: the same key and message get the first message's version, and
   * nothing is sent again (the room remembers its keys for 10 minutes). */
  sendMessage(roomId: string, body: MessageRequest, idempotencyKey?: string): Promise<Schemas["MessageSent"]> {
    const header = idempotencyKey === undefined ? {} : { "Idempotency-Key": idempotencyKey };
    return this.call(this.api.POST("/v1/rooms/{roomId}/messages", { params: { path: { roomId }, header }, body }));
  }

  async messages(roomId: string, query: { limit?: number; before?: number } = {}): Promise<Message[]> {
    const q: Record<string, string> = {};
    if (query.limit !== undefined) q.limit = String(query.limit);
    if (query.before !== undefined) q.before = String(query.before);
    const r = await this.call(this.api.GET("/v1/rooms/{roomId}/messages", { params: { path: { roomId }, query: q } }));
    return r.messages;
  }

  listRooms(query: ListRoomsQuery = {}): Promise<Schemas["RoomList"]> {
    const { attributes, ...rest } = query;
    return this.call(this.api.GET("/v1/rooms", {
      params: { query: rest },
      querySerializer: () => listQuery(rest, attributes),
    }));
  }

  /** quickJoin joins the best joinable room of a mode, or makes one (body.create).
   * idempotencyKey makes a retry safe: the same key and body get the first answer again. */
  async quickJoin(body: QuickJoinRequest, idempotencyKey?: string): Promise<QuickJoined> {
    const header = idempotencyKey === undefined ? {} : { "Idempotency-Key": idempotencyKey };
    return this.joined(await this.call(this.api.POST("/v1/matchmaking/quick-join", { params: { header }, body })));
  }

  /** myRooms returns every room the caller is in, newest first: it follows
   * the server's pages (100 rooms each) to the last. myRoomsPage reads one. */
  async myRooms(): Promise<MyRoom[]> {
    const all: MyRoom[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.myRoomsPage({ limit: 100, cursor });
      all.push(...page.rooms);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return all;
  }

  /** myRoomsPage reads one page of the caller's rooms (limit 1..100, default 20). */
  async myRoomsPage(query: { limit?: number; cursor?: string } = {}): Promise<{ rooms: MyRoom[]; nextCursor: string | null }> {
    const r = await this.call(this.api.GET("/v1/me/rooms", { params: { query } }));
    for (const room of r.rooms as MyRoom[]) this.players.set(room.id, room.playerId);
    return { rooms: r.rooms as MyRoom[], nextCursor: r.nextCursor };
  }

  lobbyStats(): Promise<LobbyStats> {
    return this.call(this.api.GET("/v1/lobby/stats", {}));
  }

  /** live opens a room's event stream and keeps a local copy of the room and its state. */
  live(roomId: string, opts: LiveOptions = {}): LiveRoom {
    return new LiveRoom(this, roomId, opts);
  }

  /** lobby opens the live list of joinable rooms of a mode and region (any when absent). */
  /** me opens the caller's personal stream, a session on platform: its own
   * status, the followed users' presence, session_replaced (ends it, reason "left"). */
  me(platform: Platform, opts: LiveOptions = {}): LiveMe {
    return new LiveMe(this, platform, opts);
  }

  lobby(filter: { mode?: string; region?: string } = {}, opts: LiveOptions = {}): LiveLobby {
    return new LiveLobby(this, filter, opts);
  }

  /**
   * streamUrl is an event stream's URL with its query, and a stream token as
   * token when given (the browser's EventSource cannot set headers; the
   * server refuses identity tokens in URLs).
   */
  streamUrl(path: string, streamToken?: string, query: Record<string, string | undefined> = {}): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query)) if (v) u.searchParams.set(k, v);
    if (streamToken) u.searchParams.set("token", streamToken);
    return u.toString();
  }

  /** fetchImpl is the fetch this client calls (RealSyncOptions.fetch, else the global one). */
  get fetchImpl(): typeof fetch {
    return this.opts.fetch ?? globalThis.fetch;
  }
}

/** tokenClaims reads a JWT's payload without checking it: the user id
 * (`sub`), the player's `name`, `exp` and `iat` (seconds since the epoch);
 * undefined when token is not a JWT. */
export function tokenClaims(token?: string): { sub?: string; name?: string; exp?: number; iat?: number } | undefined {
  const payload = token?.split(".")[1];
  if (!payload) return undefined;
  try {
    const b64 = payload.replace(/-/g, "+").replace(/_/g, "/");
    const c = JSON.parse(atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4)));
    return typeof c === "object" && c !== null ? c : undefined;
  } catch {
    return undefined;
  }
}

/** tokenExpiry reads a JWT's exp (ms since the epoch) without checking it. */
export function tokenExpiry(token?: string): number | undefined {
  const exp = tokenClaims(token)?.exp;
  return typeof exp === "number" ? exp * 1000 : undefined;
}

/**
 * limited sends req with f (the global fetch at call time, as openapi-fetch
 * does) and reads its answer's body, all within ms, or rejects with a
 * TimeoutError. The body is read here, under the same limit (REST answers
 * are small), so that the timer ends with the request. The signal goes in
 * fetch's init (Node's fetch loses the signal of a Request built with one,
 * new Request(req, { signal }), to the garbage collector) and aborts what
 * the fetch lets it; the call fails at the limit either way, whatever the
 * fetch does with the signal (an app's fetch that builds its own Request
 * from req and init, or passes req alone, would otherwise wait for as long
 * as its socket does).
 */
async function limited(f: typeof fetch, req: Request, init: RequestInit | undefined, ms: number): Promise<Response> {
  const ctl = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    // setTimeout runs a delay past 2^31−1 ms (24.8 days; Infinity too) at once: never ask it for more.
    timer = setTimeout(() => {
      const e = new DOMException(`no answer within ${ms} ms`, "TimeoutError");
      ctl.abort(e);
      reject(e);
    }, Math.min(ms, 2 ** 31 - 1));
  });
  const forward = () => ctl.abort(req.signal.reason);
  if (req.signal.aborted) forward();
  else req.signal.addEventListener("abort", forward, { once: true });
  const answer = (async () => {
    const res = await f(req, { ...init, signal: ctl.signal });
    const body = await res.arrayBuffer();
    const empty = [101, 204, 205, 304].includes(res.status); // statuses a Response may not have a body with
    return new Response(empty ? null : body, { status: res.status, statusText: res.statusText, headers: res.headers });
  })();
  answer.catch(() => undefined); // its failure after the deadline is nobody's
  try {
    return await Promise.race([answer, deadline]);
  } finally {
    clearTimeout(timer);
    req.signal.removeEventListener("abort", forward);
  }
}

/** isProblem tells a problem+json body. */
export function isProblem(e: unknown): e is Problem {
  return typeof e === "object" && e !== null && "code" in e && "status" in e;
}

function listQuery(q: Record<string, unknown>, attrs: ListRoomsQuery["attributes"]): string {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined) s.set(k, String(v));
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (typeof v === "object") {
      for (const [op, n] of Object.entries(v)) if (n !== undefined) s.set(`attr.${k}.${op}`, String(n));
    } else {
      s.set(`attr.${k}`, String(v));
    }
  }
  return s.toString();
}

using System;
using System.Collections.Generic;
using System.Globalization;
using System.Net.Http;
using System.Net.Http.Headers;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace RealSync
{
    /// <summary>RealSyncOptions configure a <see cref="RealSyncClient"/>.</summary>
    public class RealSyncOptions
    {
        /// <summary>The server, e.g. "http://localhost:8080" (required).</summary>
        public string BaseUrl;
        /// <summary>An identity JWT (a guest's, or one your login signed); GuestAsync sets one.</summary>
        public string Token;
        /// <summary>The HttpMessageHandler to send with (default: a new HttpClientHandler, owned by the client).</summary>
        public HttpMessageHandler Handler;
        /// <summary>
        /// Renews a token your own login signed (the server answers REFRESH_NOT_ALLOWED
        /// for those): called shortly before it expires, it returns a new one.
        /// Without it, tokens are renewed with POST /v1/auth/refresh. A live stream's
        /// token_expiring calls it too: return a new token at least a minute before the
        /// old one expires (one still returning the expiring token is asked again at the
        /// next token_expiring while that token has 5 s left, then the stream ends 401);
        /// throw a RealSyncException with a 4xx status to end the stream at once (anything
        /// else is retried while the token has 5 s left). Not marshalled to Unity's
        /// main thread: usually called on a thread-pool thread.
        /// </summary>
        public Func<CancellationToken, Task<string>> RefreshToken;
        /// <summary>Called with every new token (GuestAsync, renewals), e.g. to store it; not marshalled
        /// to Unity's main thread: usually called on a thread-pool thread (no Unity API there: PlayerPrefs throws).</summary>
        public Action<string> OnToken;
        /// <summary>Renew the token when it expires within this long (default 2 minutes).</summary>
        public TimeSpan RefreshMargin = TimeSpan.FromMinutes(2);
        /// <summary>Timeout of each REST request (default 30 s; event streams have none).</summary>
        public TimeSpan RequestTimeout = TimeSpan.FromSeconds(30);
    }

    /// <summary>
    /// RealSyncClient is the REST client of every route of openapi.yaml, and
    /// the factory of live rooms and lobbies. Every method throws
    /// <see cref="RealSyncException"/> on an error answer or when the server
    /// cannot be reached, and OperationCanceledException when its
    /// CancellationToken is cancelled. Thread-safe.
    /// </summary>
    public class RealSyncClient : IDisposable, IAsyncDisposable
    {
        /// <summary>The server's base URL, without a trailing slash.</summary>
        public string BaseUrl { get; }

        readonly RealSyncOptions opts;
        readonly HttpMessageHandler handler;
        readonly bool ownsHandler;
        readonly HttpClient http;
        internal readonly HttpClient StreamHttp; // no timeout: event streams last
        readonly object tokenGate = new object();
        string token;
        Task renewing;
        string unrenewable; // a token the server refused to renew (REFRESH_NOT_ALLOWED)
        readonly Dictionary<string, int> playerIds = new Dictionary<string, int>(); // room id -> the caller's playerId
        readonly HashSet<LiveStream> streams = new HashSet<LiveStream>(); // the live streams not ended yet, closed by Dispose
        bool disposed; // set under streams' lock
        readonly TaskCompletionSource<bool> released = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously); // completed by Release

        /// <summary>A client of the server at opts.BaseUrl (an absolute http:// or https:// URL, else ArgumentException).</summary>
        public RealSyncClient(RealSyncOptions opts)
        {
            if (opts == null || string.IsNullOrEmpty(opts.BaseUrl)) throw new ArgumentException("RealSyncOptions.BaseUrl is required");
            Uri parsed;
            if (!Uri.TryCreate(opts.BaseUrl, UriKind.Absolute, out parsed) || (parsed.Scheme != "http" && parsed.Scheme != "https"))
                throw new ArgumentException("RealSyncOptions.BaseUrl must be an http:// or https:// URL, e.g. http://localhost:8080, not \"" + opts.BaseUrl + "\"");
            this.opts = opts;
            BaseUrl = opts.BaseUrl.TrimEnd('/');
            token = opts.Token;
            ownsHandler = opts.Handler == null;
            handler = opts.Handler ?? new HttpClientHandler();
            http = new HttpClient(handler, false) { Timeout = opts.RequestTimeout };
            StreamHttp = new HttpClient(handler, false) { Timeout = Timeout.InfiniteTimeSpan };
        }

        /// <summary>A client of the server at baseUrl, with an optional token.</summary>
        public RealSyncClient(string baseUrl, string token = null) : this(new RealSyncOptions { BaseUrl = baseUrl, Token = token }) { }

        /// <summary>The identity token sent as Authorization: Bearer (null: none).</summary>
        public string Token
        {
            get { lock (tokenGate) return token; }
            set { lock (tokenGate) token = value; }
        }

        /// <summary>HasRefreshToken tells whether RealSyncOptions.RefreshToken renews the tokens.</summary>
        internal bool HasRefreshToken { get { return opts.RefreshToken != null; } }

        /// <summary>TokenExpiresAt is the current token's exp (UTC), when it says.</summary>
        public DateTime? TokenExpiresAt { get { return TokenExpiry(Token); } }

        void SetToken(string t)
        {
            Token = t;
            if (opts.OnToken != null) opts.OnToken(t);
        }

        /// <summary>
        /// FreshTokenAsync renews the token when it expires within RefreshMargin,
        /// or at or before `before` (a stream said its token is expiring). One
        /// renewal at a time; a failed renewal throws.
        /// </summary>
        public async Task FreshTokenAsync(DateTime? before = null, CancellationToken ct = default(CancellationToken))
        {
            var t = Token;
            var exp = TokenExpiry(t);
            if (exp == null) return;
            var due = exp.Value - DateTime.UtcNow < opts.RefreshMargin || (before.HasValue && exp.Value <= before.Value);
            if (!due || (t == unrenewable && opts.RefreshToken == null)) return;
            await RenewTokenAsync(ct).ConfigureAwait(false);
        }

        /// <summary>
        /// RenewTokenAsync renews the token now: RealSyncOptions.RefreshToken, else
        /// POST /v1/auth/refresh. One renewal at a time, shared by every caller
        /// (live streams included): ct cancels this caller's wait only, never the
        /// renewal the others wait for. It throws what the renewal threw.
        /// </summary>
        public Task RenewTokenAsync(CancellationToken ct = default(CancellationToken))
        {
            Task shared;
            lock (tokenGate)
            {
                if (renewing == null || renewing.IsCompleted) renewing = Renew(CancellationToken.None);
                shared = renewing;
            }
            return WaitFor(shared, ct);
        }

        /// <summary>WaitFor waits for a task, or throws OperationCanceledException once ct is cancelled (the task goes on).</summary>
        static async Task WaitFor(Task task, CancellationToken ct)
        {
            if (ct.CanBeCanceled && !task.IsCompleted)
            {
                var cancelled = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
                using (ct.Register(() => cancelled.TrySetResult(true)))
                {
                    if (await Task.WhenAny(task, cancelled.Task).ConfigureAwait(false) != task)
                        throw new OperationCanceledException(ct);
                }
            }
            await task.ConfigureAwait(false);
        }

        /// <summary>
        /// PlayerIdIn is the playerId this client got in a room (create, join,
        /// join by code, quick-join), or null. Live rooms use it to recognise
        /// the caller's own player_left.
        /// </summary>
        public int? PlayerIdIn(string roomId)
        {
            lock (playerIds)
            {
                int id;
                return roomId != null && playerIds.TryGetValue(roomId, out id) ? id : (int?)null;
            }
        }

        T Joined<T>(T j) where T : RoomJoined
        {
            if (j != null && j.Room != null && j.Room.Id != null && j.PlayerId > 0)
                lock (playerIds) playerIds[j.Room.Id] = j.PlayerId;
            return j;
        }

        async Task Renew(CancellationToken ct)
        {
            if (opts.RefreshToken != null)
            {
                SetToken(await opts.RefreshToken(ct).ConfigureAwait(false));
                return;
            }
            var t = Token;
            try
            {
                await RefreshAsync(ct).ConfigureAwait(false);
            }
            catch (RealSyncException e) when (e.Code == "REFRESH_NOT_ALLOWED")
            {
                unrenewable = t; // a studio's token: only its login renews it
                throw;
            }
        }

        // ---- auth ----

        /// <summary>GuestAsync gets a guest token (name optional, 1..32 characters) and uses it from now on.</summary>
        [Operation("POST", "/v1/auth/guest", "createGuestToken")]
        public async Task<GuestToken> GuestAsync(string name = null, CancellationToken ct = default(CancellationToken))
        {
            var body = new Dictionary<string, object>();
            if (name != null) body["name"] = name;
            var g = GuestToken.FromJson(await Call(HttpMethod.Post, "/v1/auth/guest", body, ct, auth: false).ConfigureAwait(false));
            SetToken(g.Token);
            return g;
        }

        /// <summary>RefreshAsync renews the token with POST /v1/auth/refresh (same user) and uses the new one.</summary>
        [Operation("POST", "/v1/auth/refresh", "refreshToken")]
        public async Task<GuestToken> RefreshAsync(CancellationToken ct = default(CancellationToken))
        {
            var g = GuestToken.FromJson(await Call(HttpMethod.Post, "/v1/auth/refresh", null, ct, fresh: false).ConfigureAwait(false));
            SetToken(g.Token);
            return g;
        }

        // ---- rooms ----

        /// <summary>CreateRoomAsync creates a room; the caller is its owner, player 1.</summary>
        [Operation("POST", "/v1/rooms", "createRoom")]
        public Task<RoomJoined> CreateRoomAsync(CreateRoomRequest body, CancellationToken ct = default(CancellationToken))
        {
            return CreateRoomAsync(body, null, ct);
        }

        /// <summary>CreateRoomAsync with an Idempotency-Key: the same key and body get the first
        /// answer again, not a second room (after a 503 STORE_UNAVAILABLE the room may exist:
        /// MyRoomsAsync tells).</summary>
        public async Task<RoomJoined> CreateRoomAsync(CreateRoomRequest body, string idempotencyKey, CancellationToken ct = default(CancellationToken))
        {
            return Joined(RoomJoined.FromJson(await Call(HttpMethod.Post, "/v1/rooms", Required(body, nameof(body)), ct, headers: Keyed(idempotencyKey)).ConfigureAwait(false)));
        }

        /// <summary>ListRoomsAsync reads a page of public rooms.</summary>
        [Operation("GET", "/v1/rooms", "listRooms")]
        public async Task<Page<Room>> ListRoomsAsync(ListRoomsQuery query = null, CancellationToken ct = default(CancellationToken))
        {
            var o = await Call(HttpMethod.Get, "/v1/rooms" + (query ?? new ListRoomsQuery()).ToQuery(), null, ct).ConfigureAwait(false);
            return ReadPage(o, Room.FromJson);
        }

        /// <summary>JoinByCodeAsync joins the room of an invite code (private rooms).</summary>
        [Operation("POST", "/v1/rooms/join-by-code", "joinRoomByCode")]
        public async Task<RoomJoined> JoinByCodeAsync(string inviteCode, CancellationToken ct = default(CancellationToken))
        {
            var body = new Dictionary<string, object> { { "inviteCode", inviteCode } };
            return Joined(RoomJoined.FromJson(await Call(HttpMethod.Post, "/v1/rooms/join-by-code", body, ct).ConfigureAwait(false)));
        }

        /// <summary>GetRoomAsync reads a room with its players.</summary>
        [Operation("GET", "/v1/rooms/{roomId}", "getRoom")]
        public async Task<Room> GetRoomAsync(string roomId, CancellationToken ct = default(CancellationToken))
        {
            return Room.FromJson(await Call(HttpMethod.Get, RoomPath(roomId), null, ct).ConfigureAwait(false));
        }

        /// <summary>UpdateRoomAsync changes a room's fields (owner).</summary>
        [Operation("PATCH", "/v1/rooms/{roomId}", "updateRoom")]
        public async Task<Room> UpdateRoomAsync(string roomId, UpdateRoomRequest body, CancellationToken ct = default(CancellationToken))
        {
            return Room.FromJson(await Call(Patch, RoomPath(roomId), Required(body, nameof(body)), ct).ConfigureAwait(false));
        }

        /// <summary>DeleteRoomAsync closes and deletes a room (owner).</summary>
        [Operation("DELETE", "/v1/rooms/{roomId}", "deleteRoom")]
        public Task DeleteRoomAsync(string roomId, CancellationToken ct = default(CancellationToken))
        {
            return Call(HttpMethod.Delete, RoomPath(roomId), null, ct);
        }

        /// <summary>JoinRoomAsync joins a public room (idempotent for members).</summary>
        [Operation("POST", "/v1/rooms/{roomId}/join", "joinRoom")]
        public async Task<RoomJoined> JoinRoomAsync(string roomId, CancellationToken ct = default(CancellationToken))
        {
            return Joined(RoomJoined.FromJson(await Call(HttpMethod.Post, RoomPath(roomId) + "/join", null, ct).ConfigureAwait(false)));
        }

        /// <summary>LeaveRoomAsync leaves a room.</summary>
        [Operation("POST", "/v1/rooms/{roomId}/leave", "leaveRoom")]
        public Task LeaveRoomAsync(string roomId, CancellationToken ct = default(CancellationToken))
        {
            return Call(HttpMethod.Post, RoomPath(roomId) + "/leave", null, ct);
        }

        /// <summary>KickAsync removes a player (owner); ban also bars the player's user from the room.</summary>
        [Operation("DELETE", "/v1/rooms/{roomId}/players/{playerId}", "kickPlayer")]
        public Task KickAsync(string roomId, int playerId, bool ban = false, CancellationToken ct = default(CancellationToken))
        {
            var path = RoomPath(roomId) + "/players/" + playerId.ToString(CultureInfo.InvariantCulture) + (ban ? "?ban=true" : "");
            return Call(HttpMethod.Delete, path, null, ct);
        }

        /// <summary>
        /// ReserveSeatsAsync holds a seat of a waiting room for each user until they
        /// join or ttlSeconds pass (default 15, at most 300): owner, or an API key
        /// with rooms:write (a matchmaker). Only those users may take the seats.
        /// </summary>
        [Operation("POST", "/v1/rooms/{roomId}/reservations", "reserveSeats")]
        public async Task<SeatReservation> ReserveSeatsAsync(string roomId, IList<string> userIds, int? ttlSeconds = null, CancellationToken ct = default(CancellationToken))
        {
            var body = new Dictionary<string, object> { { "userIds", userIds } };
            if (ttlSeconds.HasValue) body["ttlSeconds"] = ttlSeconds.Value;
            return SeatReservation.FromJson(await Call(HttpMethod.Post, RoomPath(roomId) + "/reservations", body, ct).ConfigureAwait(false));
        }

        // ---- state ----

        /// <summary>GetStateAsync reads the room state and its versions (members).</summary>
        [Operation("GET", "/v1/rooms/{roomId}/state", "getRoomState")]
        public async Task<StateView> GetStateAsync(string roomId, CancellationToken ct = default(CancellationToken))
        {
            return StateView.FromJson(await Call(HttpMethod.Get, RoomPath(roomId) + "/state", null, ct).ConfigureAwait(false));
        }

        /// <summary>
        /// PatchStateAsync merge-patches the state (a null value deletes its key).
        /// With ifMatch, the patch applies only at that stateVersion (else 412 VERSION_MISMATCH).
        /// </summary>
        [Operation("PATCH", "/v1/rooms/{roomId}/state", "patchRoomState")]
        public async Task<StateVersions> PatchStateAsync(string roomId, IDictionary<string, object> patch, long? ifMatch = null, CancellationToken ct = default(CancellationToken))
        {
            var headers = ifMatch.HasValue ? new Dictionary<string, string> { { "If-Match", "\"" + ifMatch.Value.ToString(CultureInfo.InvariantCulture) + "\"" } } : null;
            return StateVersions.FromJson(await Call(Patch, RoomPath(roomId) + "/state", Required(patch, nameof(patch)), ct, headers: headers, contentType: "application/merge-patch+json").ConfigureAwait(false));
        }

        // ---- events ----

        /// <summary>RoomStreamTokenAsync gets a token that opens the room's event stream once within 60 s (members).</summary>
        [Operation("POST", "/v1/rooms/{roomId}/stream-token", "createRoomStreamToken")]
        public async Task<StreamToken> RoomStreamTokenAsync(string roomId, CancellationToken ct = default(CancellationToken))
        {
            return StreamToken.FromJson(await Call(HttpMethod.Post, RoomPath(roomId) + "/stream-token", null, ct).ConfigureAwait(false));
        }

        /// <summary>
        /// Live makes a live copy of a room over its event stream; subscribe to
        /// its events, then call Start().
        /// </summary>
        [Operation("GET", "/v1/rooms/{roomId}/events", "streamRoomEvents")]
        public LiveRoom Live(string roomId, LiveOptions options = null)
        {
            return new LiveRoom(this, roomId, options ?? new LiveOptions());
        }

        /// <summary>LobbyStreamTokenAsync gets a token that opens the lobby stream once within 60 s.</summary>
        [Operation("POST", "/v1/lobby/stream-token", "createLobbyStreamToken")]
        public async Task<StreamToken> LobbyStreamTokenAsync(CancellationToken ct = default(CancellationToken))
        {
            return StreamToken.FromJson(await Call(HttpMethod.Post, "/v1/lobby/stream-token", null, ct).ConfigureAwait(false));
        }

        /// <summary>
        /// Lobby makes the live list of joinable public rooms of a mode and
        /// region (any when null); subscribe to its events, then call Start().
        /// </summary>
        [Operation("GET", "/v1/lobby/events", "streamLobbyEvents")]
        public LiveLobby Lobby(string mode = null, string region = null, LiveOptions options = null)
        {
            return new LiveLobby(this, mode, region, options ?? new LiveOptions());
        }

        // ---- players: the personal stream, status, follows ----

        /// <summary>MeStreamTokenAsync gets a token that opens the caller's personal stream once within 60 s.</summary>
        [Operation("POST", "/v1/me/stream-token", "createMeStreamToken")]
        public async Task<StreamToken> MeStreamTokenAsync(CancellationToken ct = default(CancellationToken))
        {
            return StreamToken.FromJson(await Call(HttpMethod.Post, "/v1/me/stream-token", null, ct).ConfigureAwait(false));
        }

        /// <summary>
        /// Me makes the caller's personal stream on platform ("pc", "console", "mobile" or
        /// "web"): followed users' statuses; subscribe to its events, then call Start().
        /// </summary>
        [Operation("GET", "/v1/me/events", "streamMeEvents")]
        public LiveMe Me(string platform, LiveOptions options = null)
        {
            return new LiveMe(this, platform, options ?? new LiveOptions());
        }

        /// <summary>GetPresenceAsync reads the status of each of userIds (1..100), in their order.</summary>
        [Operation("GET", "/v1/presence", "getPresence")]
        public async Task<List<Presence>> GetPresenceAsync(IList<string> userIds, CancellationToken ct = default(CancellationToken))
        {
            var o = await Call(HttpMethod.Get, "/v1/presence" + new QueryBuilder().Add("userIds", string.Join(",", userIds)), null, ct).ConfigureAwait(false);
            var list = new List<Presence>();
            foreach (var u in o.Array("users") ?? new List<object>()) list.Add(Presence.FromJson(u as JsonObject));
            return list;
        }

        /// <summary>SetFollowingAsync replaces the users whose status changes reach the personal stream (0..500).</summary>
        [Operation("PUT", "/v1/me/following", "setFollowing")]
        public async Task<List<string>> SetFollowingAsync(IList<string> userIds, CancellationToken ct = default(CancellationToken))
        {
            var o = await Call(HttpMethod.Put, "/v1/me/following", new Dictionary<string, object> { { "userIds", userIds } }, ct).ConfigureAwait(false);
            var list = new List<string>();
            foreach (var u in o.Array("userIds") ?? new List<object>()) list.Add(u as string);
            return list;
        }

        /// <summary>JoinPartyAsync puts the caller in leaderUserId's party, replacing any other, for
        /// 24 hours (joining again renews it): where the server asks a party's consent
        /// (REALSYNC_PARTY_CONSENT party, production's default), only that leader's tickets may
        /// name the caller. Tells nobody: the game's own invite asks.</summary>
        [Operation("PUT", "/v1/me/party", "joinParty")]
        public async Task<Party> JoinPartyAsync(string leaderUserId, CancellationToken ct = default(CancellationToken))
        {
            return Party.FromJson(await Call(HttpMethod.Put, "/v1/me/party", new Dictionary<string, object> { { "leaderUserId", leaderUserId } }, ct).ConfigureAwait(false));
        }

        /// <summary>GetPartyAsync reads the caller's party: 404 PARTY_NOT_FOUND when in none.</summary>
        [Operation("GET", "/v1/me/party", "getParty")]
        public async Task<Party> GetPartyAsync(CancellationToken ct = default(CancellationToken))
        {
            return Party.FromJson(await Call(HttpMethod.Get, "/v1/me/party", null, ct).ConfigureAwait(false));
        }

        /// <summary>ListPartyMembersAsync lists the users in the caller's party (who joined it naming
        /// the caller, and have neither left, joined another, nor let it expire): the most recently
        /// joined first, at most 100.</summary>
        [Operation("GET", "/v1/me/party/members", "listPartyMembers")]
        public async Task<List<PartyMember>> ListPartyMembersAsync(CancellationToken ct = default(CancellationToken))
        {
            var o = await Call(HttpMethod.Get, "/v1/me/party/members", null, ct).ConfigureAwait(false);
            var list = new List<PartyMember>();
            foreach (var m in o.Array("members") ?? new List<object>()) list.Add(PartyMember.FromJson(m as JsonObject));
            return list;
        }

        /// <summary>LeavePartyAsync takes the caller out of their party (in none: done as well).</summary>
        [Operation("DELETE", "/v1/me/party", "leaveParty")]
        public Task LeavePartyAsync(CancellationToken ct = default(CancellationToken))
        {
            return Call(HttpMethod.Delete, "/v1/me/party", null, ct);
        }

        /// <summary>SendDirectMessageAsync sends userId a `message` event on their personal stream
        /// (offline delivery to each platform without a session); type and data as room messages.</summary>
        [Operation("POST", "/v1/users/{userId}/messages", "sendDirectMessage")]
        public Task SendDirectMessageAsync(string userId, string type, object data, CancellationToken ct = default(CancellationToken))
        {
            return SendDirectMessageAsync(userId, type, data, null, ct);
        }

        /// <summary>SendDirectMessageAsync with an Idempotency-Key: safe to retry, after a 503 too
        /// (the recipient's inbox remembers its keys for 10 minutes: the same key and message are
        /// sent once).</summary>
        public Task SendDirectMessageAsync(string userId, string type, object data, string idempotencyKey, CancellationToken ct = default(CancellationToken))
        {
            return Call(HttpMethod.Post, "/v1/users/" + Segment(userId, nameof(userId)) + "/messages",
                new Dictionary<string, object> { { "type", type }, { "data", data } }, ct, headers: Keyed(idempotencyKey));
        }

        /// <summary>InviteAsync sends userId an `invite` event to a room the caller is in (a private
        /// room's invite code included).</summary>
        [Operation("POST", "/v1/rooms/{roomId}/invites", "inviteToRoom")]
        public Task InviteAsync(string roomId, string userId, CancellationToken ct = default(CancellationToken))
        {
            return InviteAsync(roomId, userId, null, ct);
        }

        /// <summary>InviteAsync with an Idempotency-Key: safe to retry, after a 503 too (the
        /// invitee's inbox remembers its keys for 10 minutes: the same key and invite are sent
        /// once; without a key an invite retried after a lost answer arrives twice).</summary>
        public Task InviteAsync(string roomId, string userId, string idempotencyKey, CancellationToken ct = default(CancellationToken))
        {
            return Call(HttpMethod.Post, RoomPath(roomId) + "/invites", new Dictionary<string, object> { { "userId", userId } }, ct, headers: Keyed(idempotencyKey));
        }

        // ---- messages ----

        /// <summary>SendMessageAsync sends a message to the room (members); returns the room version it took.</summary>
        [Operation("POST", "/v1/rooms/{roomId}/messages", "sendMessage")]
        public Task<long> SendMessageAsync(string roomId, MessageRequest body, CancellationToken ct = default(CancellationToken))
        {
            return SendMessageAsync(roomId, body, null, ct);
        }

        /// <summary>SendMessageAsync with an Idempotency-Key: safe to retry, after a 503 too (the
        /// room remembers its messages' keys for 10 minutes: the same key and message get the
        /// first version, and nothing is sent again).</summary>
        public async Task<long> SendMessageAsync(string roomId, MessageRequest body, string idempotencyKey, CancellationToken ct = default(CancellationToken))
        {
            return (await Call(HttpMethod.Post, RoomPath(roomId) + "/messages", Required(body, nameof(body)), ct, headers: Keyed(idempotencyKey)).ConfigureAwait(false)).Long("version");
        }

        /// <summary>MessagesAsync reads the message history, newest first (limit 1..100; before: only older versions).</summary>
        [Operation("GET", "/v1/rooms/{roomId}/messages", "listMessages")]
        public async Task<List<Message>> MessagesAsync(string roomId, int? limit = null, long? before = null, CancellationToken ct = default(CancellationToken))
        {
            var q = new QueryBuilder()
                .Add("limit", limit.HasValue ? limit.Value.ToString(CultureInfo.InvariantCulture) : null)
                .Add("before", before.HasValue ? before.Value.ToString(CultureInfo.InvariantCulture) : null);
            var o = await Call(HttpMethod.Get, RoomPath(roomId) + "/messages" + q, null, ct).ConfigureAwait(false);
            var list = new List<Message>();
            foreach (var m in o.Array("messages") ?? new List<object>()) list.Add(Message.FromJson(m as JsonObject));
            return list;
        }

        // ---- lobby ----

        /// <summary>QuickJoinAsync joins the best joinable public room of a mode, or creates one (Create given).</summary>
        [Operation("POST", "/v1/matchmaking/quick-join", "quickJoin")]
        public Task<QuickJoined> QuickJoinAsync(QuickJoinRequest body, CancellationToken ct = default(CancellationToken))
        {
            return QuickJoinAsync(body, null, ct);
        }

        /// <summary>QuickJoinAsync with an Idempotency-Key: the same key and body get the first
        /// answer again.</summary>
        public async Task<QuickJoined> QuickJoinAsync(QuickJoinRequest body, string idempotencyKey, CancellationToken ct = default(CancellationToken))
        {
            return Joined(QuickJoined.FromJson(await Call(HttpMethod.Post, "/v1/matchmaking/quick-join", Required(body, nameof(body)), ct, headers: Keyed(idempotencyKey)).ConfigureAwait(false)));
        }

        // ---- matchmaking tickets ----

        /// <summary>
        /// CreateTicketAsync queues the caller (and partyUserIds, its party) for a match
        /// of mode: 409 TICKET_ACTIVE or MEMBER_QUEUED_IN_PARTY when one of them has a
        /// searching ticket; 403 PARTY_CONSENT_REQUIRED when a party member has not
        /// joined the caller's party (REALSYNC_PARTY_CONSENT party, production's default:
        /// members consent with JoinPartyAsync; with follow, by following the caller,
        /// SetFollowingAsync). The match arrives as match_found on the personal stream.
        /// </summary>
        [Operation("POST", "/v1/matchmaking/tickets", "createTicket")]
        public Task<Ticket> CreateTicketAsync(string mode, IList<string> regions, double? rating = null,
            IDictionary<string, object> attributes = null, IList<string> partyUserIds = null, CancellationToken ct = default(CancellationToken))
        {
            var body = new CreateTicketRequest { Mode = mode, Regions = regions, Rating = rating, Attributes = attributes, PartyUserIds = partyUserIds };
            return CreateTicketAsync(body, null, ct);
        }

        /// <summary>CreateTicketAsync with a request body.</summary>
        public Task<Ticket> CreateTicketAsync(CreateTicketRequest body, CancellationToken ct = default(CancellationToken))
        {
            return CreateTicketAsync(body, null, ct);
        }

        /// <summary>CreateTicketAsync with an Idempotency-Key: the same key and body get the first
        /// ticket again, as it is now (sent again after a timeout or a dropped connection, a create
        /// without a key is refused 409 TICKET_ACTIVE by the ticket the first one made); once that
        /// ticket ended and is gone, 404 TICKET_NOT_FOUND: queue again under a new key.</summary>
        public async Task<Ticket> CreateTicketAsync(CreateTicketRequest body, string idempotencyKey, CancellationToken ct = default(CancellationToken))
        {
            if (body == null) throw new ArgumentNullException(nameof(body));
            return Ticket.FromJson(await Call(HttpMethod.Post, "/v1/matchmaking/tickets", body, ct, headers: Keyed(idempotencyKey)).ConfigureAwait(false));
        }

        /// <summary>GetTicketAsync reads a ticket: searching (window, wait), matched (roomId), expired or cancelled.</summary>
        [Operation("GET", "/v1/matchmaking/tickets/{ticketId}", "getTicket")]
        public async Task<Ticket> GetTicketAsync(string ticketId, CancellationToken ct = default(CancellationToken))
        {
            return Ticket.FromJson(await Call(HttpMethod.Get, TicketPath(ticketId), null, ct).ConfigureAwait(false));
        }

        /// <summary>CancelTicketAsync cancels a searching ticket (409 TICKET_MATCHED once matched).</summary>
        [Operation("DELETE", "/v1/matchmaking/tickets/{ticketId}", "cancelTicket")]
        public Task CancelTicketAsync(string ticketId, CancellationToken ct = default(CancellationToken))
        {
            return Call(HttpMethod.Delete, TicketPath(ticketId), null, ct);
        }

        static string TicketPath(string ticketId)
        {
            return "/v1/matchmaking/tickets/" + Segment(ticketId, nameof(ticketId));
        }

        /// <summary>MyRoomsPageAsync reads one page of the rooms the caller is in (limit 1..100, default 20).</summary>
        [Operation("GET", "/v1/me/rooms", "myRooms")]
        public async Task<Page<MyRoom>> MyRoomsPageAsync(int? limit = null, string cursor = null, CancellationToken ct = default(CancellationToken))
        {
            var q = new QueryBuilder().Add("limit", limit.HasValue ? limit.Value.ToString(CultureInfo.InvariantCulture) : null).Add("cursor", cursor);
            return ReadPage(await Call(HttpMethod.Get, "/v1/me/rooms" + q, null, ct).ConfigureAwait(false), MyRoom.FromJson);
        }

        /// <summary>MyRoomsAsync returns every room the caller is in, newest first, following the pages to the last.</summary>
        public async Task<List<MyRoom>> MyRoomsAsync(CancellationToken ct = default(CancellationToken))
        {
            var all = new List<MyRoom>();
            string cursor = null;
            do
            {
                var page = await MyRoomsPageAsync(100, cursor, ct).ConfigureAwait(false);
                all.AddRange(page.Items);
                cursor = page.NextCursor;
            } while (cursor != null);
            return all;
        }

        /// <summary>LobbyStatsAsync reads the live room and player counts.</summary>
        [Operation("GET", "/v1/lobby/stats", "lobbyStats")]
        public async Task<LobbyStats> LobbyStatsAsync(CancellationToken ct = default(CancellationToken))
        {
            return LobbyStats.FromJson(await Call(HttpMethod.Get, "/v1/lobby/stats", null, ct).ConfigureAwait(false));
        }

        // ---- operations ----

        /// <summary>ListInstancesAsync lists the live server instances (the operator's admin token, not a player token).</summary>
        [Operation("GET", "/v1/admin/instances", "listInstances")]
        public async Task<List<Instance>> ListInstancesAsync(string adminToken, CancellationToken ct = default(CancellationToken))
        {
            var o = await Call(HttpMethod.Get, "/v1/admin/instances", null, ct, auth: false,
                headers: new Dictionary<string, string> { { "Authorization", "Bearer " + adminToken } }).ConfigureAwait(false);
            var list = new List<Instance>();
            foreach (var i in o.Array("instances") ?? new List<object>()) list.Add(Instance.FromJson(i as JsonObject));
            return list;
        }

        /// <summary>WebhookDeadLettersPageAsync reads one page of the webhook deliveries that failed every try (the operator's admin token; limit 1..100, default 20).</summary>
        [Operation("GET", "/v1/admin/webhooks/dead-letters", "listWebhookDeadLetters")]
        public async Task<Page<DeadLetter>> WebhookDeadLettersPageAsync(string adminToken, int? limit = null, string cursor = null, CancellationToken ct = default(CancellationToken))
        {
            var q = new QueryBuilder().Add("limit", limit.HasValue ? limit.Value.ToString(CultureInfo.InvariantCulture) : null).Add("cursor", cursor);
            var o = await Call(HttpMethod.Get, "/v1/admin/webhooks/dead-letters" + q, null, ct, auth: false,
                headers: new Dictionary<string, string> { { "Authorization", "Bearer " + adminToken } }).ConfigureAwait(false);
            var page = new Page<DeadLetter> { NextCursor = o.String("nextCursor") };
            foreach (var d in o.Array("deadLetters") ?? new List<object>()) page.Items.Add(DeadLetter.FromJson(d as JsonObject));
            return page;
        }

        /// <summary>ReplayWebhookDeadLetterAsync puts a dead letter back into the deliveries, its retry count reset (the operator's admin token); 404 DEAD_LETTER_NOT_FOUND when it is gone; 409 WEBHOOK_BACKLOG_FULL while its endpoint's backlog is at its bound, 409 WEBHOOK_ENDPOINT_REMOVED when its endpoint is no longer in the webhooks file (the letter stays).</summary>
        [Operation("POST", "/v1/admin/webhooks/dead-letters/{deadLetterId}/replay", "replayWebhookDeadLetter")]
        public async Task ReplayWebhookDeadLetterAsync(string adminToken, string deadLetterId, CancellationToken ct = default(CancellationToken))
        {
            await Call(HttpMethod.Post, "/v1/admin/webhooks/dead-letters/" + Segment(deadLetterId, nameof(deadLetterId)) + "/replay", null, ct, auth: false,
                headers: new Dictionary<string, string> { { "Authorization", "Bearer " + adminToken } }).ConfigureAwait(false);
        }

        /// <summary>HealthzAsync is true when the server process is up (GET /healthz; HEAD with head: true).</summary>
        [Operation("GET", "/healthz", "healthz")]
        [Operation("HEAD", "/healthz", "healthzHead")]
        public Task<bool> HealthzAsync(bool head = false, CancellationToken ct = default(CancellationToken))
        {
            return Probe("/healthz", head, ct);
        }

        /// <summary>ReadyzAsync is true when the server reaches Redis (GET /readyz; HEAD with head: true); false on 503.</summary>
        [Operation("GET", "/readyz", "readyz")]
        [Operation("HEAD", "/readyz", "readyzHead")]
        public Task<bool> ReadyzAsync(bool head = false, CancellationToken ct = default(CancellationToken))
        {
            return Probe("/readyz", head, ct);
        }

        /// <summary>MetricsAsync reads the instance's Prometheus metrics (text format).</summary>
        [Operation("GET", "/metrics", "getMetrics")]
        public Task<string> MetricsAsync(CancellationToken ct = default(CancellationToken))
        {
            return Text("/metrics", ct);
        }

        /// <summary>SpecAsync reads the server's openapi.yaml.</summary>
        [Operation("GET", "/openapi.yaml", "getSpec")]
        public Task<string> SpecAsync(CancellationToken ct = default(CancellationToken))
        {
            return Text("/openapi.yaml", ct);
        }

        async Task<bool> Probe(string path, bool head, CancellationToken ct)
        {
            var r = await Send(head ? HttpMethod.Head : HttpMethod.Get, path, null, null, null, false, false, ct).ConfigureAwait(false);
            if (r.Status == 200) return true;
            if (r.Status == 503) return false;
            throw r.Error();
        }

        async Task<string> Text(string path, CancellationToken ct)
        {
            var r = await Send(HttpMethod.Get, path, null, null, null, false, false, ct).ConfigureAwait(false);
            if (r.Status != 200) throw r.Error();
            return r.Body;
        }

        // ---- plumbing ----

        static readonly HttpMethod Patch = new HttpMethod("PATCH");

        /// <summary>Required throws ArgumentNullException for a missing request body (sent without one,
        /// the server's answer, 415 for the missing Content-Type, would not say what is wrong).</summary>
        static T Required<T>(T body, string name) where T : class
        {
            if (body == null) throw new ArgumentNullException(name);
            return body;
        }

        static string RoomPath(string roomId)
        {
            return "/v1/rooms/" + Segment(roomId, nameof(roomId));
        }

        /// <summary>Segment is an id escaped as a path segment: ArgumentNullException for null,
        /// ArgumentException for "" (sent, it would name another route: 404 NOT_FOUND "No such route").</summary>
        internal static string Segment(string id, string name)
        {
            if (id == null) throw new ArgumentNullException(name);
            if (id.Length == 0) throw new ArgumentException(name + " is empty", name);
            return Uri.EscapeDataString(id);
        }

        static Page<T> ReadPage<T>(JsonObject o, Func<JsonObject, T> read)
        {
            var page = new Page<T> { NextCursor = o.String("nextCursor") };
            foreach (var r in o.Array("rooms") ?? new List<object>()) page.Items.Add(read(r as JsonObject));
            return page;
        }

        /// <summary>Keyed is the Idempotency-Key header of a request (none for null).</summary>
        static Dictionary<string, string> Keyed(string idempotencyKey)
        {
            return idempotencyKey == null ? null : new Dictionary<string, string> { { "Idempotency-Key", idempotencyKey } };
        }

        /// <summary>Call sends a JSON request and returns the JSON object answered (empty for 204).</summary>
        async Task<JsonObject> Call(HttpMethod method, string path, object body, CancellationToken ct, bool auth = true, bool fresh = true,
            Dictionary<string, string> headers = null, string contentType = "application/json")
        {
            var r = await Send(method, path, body, contentType, headers, auth, fresh, ct).ConfigureAwait(false);
            if (r.Status < 200 || r.Status > 299) throw r.Error();
            if (string.IsNullOrEmpty(r.Body)) return new JsonObject();
            try
            {
                return Json.ParseObject(r.Body);
            }
            catch (FormatException e)
            {
                throw new RealSyncException(r.Status, "INTERNAL", detail: "the answer is not a JSON object: " + e.Message);
            }
        }

        internal sealed class Answer
        {
            public int Status;
            public string Body;
            public TimeSpan? RetryAfter;

            public RealSyncException Error() { return RealSyncException.FromProblem(Status, Body, RetryAfter); }
        }

        async Task<Answer> Send(HttpMethod method, string path, object body, string contentType, Dictionary<string, string> headers,
            bool auth, bool fresh, CancellationToken ct)
        {
            if (auth && fresh)
            {
                // A failed renewal leaves the request to the token it has (still valid, or the answer is 401).
                try { await FreshTokenAsync(null, ct).ConfigureAwait(false); }
                catch (RealSyncException) { }
            }
            if (Volatile.Read(ref disposed)) throw Disposed("it sends no request");
            using (var req = new HttpRequestMessage(method, BaseUrl + path))
            {
                var t = Token;
                if (auth && t != null) req.Headers.Authorization = new AuthenticationHeaderValue("Bearer", t);
                if (headers != null) foreach (var h in headers) req.Headers.TryAddWithoutValidation(h.Key, h.Value);
                req.Headers.Accept.ParseAdd("application/json");
                if (body != null)
                {
                    req.Content = new StringContent(Json.Write(body), Encoding.UTF8);
                    req.Content.Headers.ContentType = new MediaTypeHeaderValue(contentType);
                }
                try
                {
                    using (var resp = await http.SendAsync(req, HttpCompletionOption.ResponseContentRead, ct).ConfigureAwait(false))
                    {
                        var text = resp.Content == null ? "" : await resp.Content.ReadAsStringAsync().ConfigureAwait(false);
                        return new Answer { Status = (int)resp.StatusCode, Body = text, RetryAfter = RetryAfterOf(resp) };
                    }
                }
                catch (OperationCanceledException) when (ct.IsCancellationRequested)
                {
                    throw;
                }
                catch (Exception e) when ((e is OperationCanceledException || e is ObjectDisposedException) && Volatile.Read(ref disposed))
                {
                    // Dispose() cancelled it: no network failure to resend
                    throw Disposed("the request was abandoned");
                }
                catch (OperationCanceledException e)
                {
                    // HttpClient.Timeout: a dead keep-alive connection after a network change, a silent server
                    throw new RealSyncException(0, "NETWORK", detail: "no answer from " + BaseUrl + " within " +
                        opts.RequestTimeout.TotalSeconds + " s (RealSyncOptions.RequestTimeout)", inner: e);
                }
                catch (Exception e) when (e is HttpRequestException || e is System.IO.IOException)
                {
                    throw new RealSyncException(0, "NETWORK", detail: "cannot reach " + BaseUrl + ": " + e.Message, inner: e);
                }
            }
        }

        internal static TimeSpan? RetryAfterOf(HttpResponseMessage resp)
        {
            var ra = resp.Headers.RetryAfter;
            if (ra == null) return null;
            if (ra.Delta.HasValue) return ra.Delta;
            if (ra.Date.HasValue)
            {
                var d = ra.Date.Value.UtcDateTime - DateTime.UtcNow;
                return d < TimeSpan.Zero ? TimeSpan.Zero : d;
            }
            return null;
        }

        /// <summary>TokenExpiry reads a JWT's exp (UTC) without checking the token; null when it has none.</summary>
        public static DateTime? TokenExpiry(string jwt)
        {
            if (string.IsNullOrEmpty(jwt)) return null;
            var parts = jwt.Split('.');
            if (parts.Length < 2) return null;
            try
            {
                var b64 = parts[1].Replace('-', '+').Replace('_', '/');
                b64 += new string('=', (4 - b64.Length % 4) % 4);
                var payload = Json.Parse(Encoding.UTF8.GetString(Convert.FromBase64String(b64))) as JsonObject;
                var exp = payload == null ? null : payload.Get("exp");
                if (exp is long l) return new DateTime(1970, 1, 1, 0, 0, 0, DateTimeKind.Utc).AddSeconds(l);
                if (exp is double d) return new DateTime(1970, 1, 1, 0, 0, 0, DateTimeKind.Utc).AddSeconds(d);
                return null;
            }
            catch (FormatException)
            {
                return null;
            }
        }

        static ObjectDisposedException Disposed(string what)
        {
            return new ObjectDisposedException(nameof(RealSyncClient), "the RealSyncClient was disposed: " + what);
        }

        /// <summary>Track registers a live stream of this client, which Dispose closes; it throws
        /// ObjectDisposedException once the client is disposed.</summary>
        internal void Track(LiveStream s)
        {
            lock (streams)
            {
                if (disposed) throw Disposed("it opens no live stream");
                streams.Add(s);
            }
        }

        /// <summary>Untrack forgets a live stream that ended.</summary>
        internal void Untrack(LiveStream s)
        {
            lock (streams) streams.Remove(s);
        }

        /// <summary>
        /// Dispose closes every live stream this client made that is still open (each raises Closed,
        /// reason Closed, where its events are raised: they would otherwise stay connected, and
        /// retry forever on the disposed client once dropped), then releases the HTTP handler when
        /// the client made it. Live, Lobby and Me then throw ObjectDisposedException, and so do the REST
        /// calls, those it was waiting for too (no network failure to resend).
        /// </summary>
        public void Dispose()
        {
            var open = TakeStreams();
            if (open == null) return;
            foreach (var st in open) st.Close();
            Release();
        }

        /// <summary>
        /// DisposeAsync is Dispose that completes once every stream it closed let its connection go
        /// (LiveStream.CloseAsync), and releases the HTTP handler only then: what a console program
        /// or server awaits before it exits (<c>await using</c>, C# 8). The REST calls under way are
        /// abandoned at once, as with Dispose. Never fails; on a client disposed already it completes
        /// once that disposal released the handler. Await it, never block on it from an event handler.
        /// </summary>
        public ValueTask DisposeAsync()
        {
            var open = TakeStreams();
            if (open == null) return new ValueTask(released.Task);
            http.CancelPendingRequests();
            var closing = new Task[open.Length];
            for (int i = 0; i < open.Length; i++) closing[i] = open[i].CloseAsync();
            Task.WhenAll(closing).ContinueWith(_ => Release(), TaskScheduler.Default);
            return new ValueTask(released.Task);
        }

        /// <summary>TakeStreams marks the client disposed and returns its open streams; null when it
        /// was disposed already.</summary>
        LiveStream[] TakeStreams()
        {
            lock (streams)
            {
                if (disposed) return null;
                disposed = true;
                var open = new LiveStream[streams.Count];
                streams.CopyTo(open);
                streams.Clear();
                return open;
            }
        }

        void Release()
        {
            try
            {
                http.Dispose();
                StreamHttp.Dispose();
                if (ownsHandler) handler.Dispose();
            }
            finally { released.TrySetResult(true); }
        }
    }
}

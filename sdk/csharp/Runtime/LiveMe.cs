using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;

namespace RealSync
{
    /// <summary>UserEvent is one event of the personal stream: snapshot (Platform, Session, Resync,
    /// Pending), presence (UserId, Presence), session_replaced (Session, By: this session ended),
    /// message (Message, FromUserId, FromName, FromServer, MessageId), invite (RoomId, Name, Mode,
    /// Region, InviteCode, FromUserId, FromName, FromServer, MessageId), kicked and banned (RoomId), room_closed (RoomId,
    /// Reason), match_found (RoomId: a seat is held until SeatHeldUntil; TicketId, MatchId, Mode, Region, Team). Every
    /// event but presence carries Seq, every event Ts. Data holds the whole payload.</summary>
    public class UserEvent
    {
        /// <summary>The event type.</summary>
        public string Type;
        /// <summary>The user whose log holds a logged event, or whose status a presence event is.</summary>
        public string UserId;
        /// <summary>snapshot, session_replaced: the platform; snapshot: this stream's.</summary>
        public string Platform;
        /// <summary>snapshot: this stream's session; session_replaced: the session replaced.</summary>
        public string Session;
        /// <summary>session_replaced: the session that replaced it.</summary>
        public string By;
        /// <summary>snapshot: the resume could not be served from the log (events may have been missed).</summary>
        public bool Resync;
        /// <summary>presence: the followed user's status.</summary>
        public Presence Presence;
        /// <summary>snapshot: the logged events that follow at once (the platform's offline inbox).</summary>
        public long Pending;
        /// <summary>invite, kicked, banned, room_closed, match_found: the room.</summary>
        public string RoomId;
        /// <summary>invite: a private room's invite code (JoinByCodeAsync), else null.</summary>
        public string InviteCode;
        /// <summary>room_closed: why.</summary>
        public string Reason;
        /// <summary>message, invite: the sending player's user id (null when the server sent it).</summary>
        public string FromUserId;
        /// <summary>message, invite: the sending player's name (null when the server sent it).</summary>
        public string FromName;
        /// <summary>message, invite: true when the game's server sent it (an API key).</summary>
        public bool FromServer;
        /// <summary>message: the direct message, its Type and Data as sent (SendDirectMessageAsync).</summary>
        public DirectMessage Message;
        /// <summary>message, invite sent with an idempotency key: the same for every send of that key
        /// by that sender (32 hex digits), else null. A retry that a Redis failover made a new event
        /// (after a snapshot with Resync) carries the first send's: drop an event whose MessageId you
        /// already handled.</summary>
        public string MessageId;
        /// <summary>invite: the room's name.</summary>
        public string Name;
        /// <summary>invite, match_found: the room's mode.</summary>
        public string Mode;
        /// <summary>invite, match_found: the room's region.</summary>
        public string Region;
        /// <summary>match_found: the ticket matched (CreateTicketAsync's TicketId).</summary>
        public string TicketId;
        /// <summary>match_found: the match.</summary>
        public string MatchId;
        /// <summary>match_found: the user's team, 0-based.</summary>
        public int Team;
        /// <summary>match_found: until when the user's seat in RoomId is held (UTC, the server's clock, as Ts):
        /// join before it; past it the seat may be given away (JoinRoomAsync: 404 ROOM_NOT_FOUND), and the
        /// ticket stays matched: queue again. DateTime.MinValue when the event does not say (a server
        /// before 2026-12-07).</summary>
        public DateTime SeatHeldUntil;
        /// <summary>Logged events (all but presence and session_replaced): the event's position in the user's
        /// log; session_replaced: the log's position at the replacement (it is not logged); presence: 0.</summary>
        public long Seq;
        /// <summary>When it happened.</summary>
        public DateTime Ts;
        /// <summary>The whole payload.</summary>
        public JsonObject Data;
        /// <summary>
        /// The stream's LastEventId as of this event: its id (logged events), or the one before it (presence).
        /// What to keep across restarts once the event is handled (LiveOptions.LastEventId): the stream's own
        /// LastEventId is the last id it read, ahead of the handlers with LiveDispatch.Queue or Context.
        /// </summary>
        public string LastEventId;
    }

    /// <summary>DirectMessage is a direct message as its sender sent it (UserEvent.Message).</summary>
    public class DirectMessage
    {
        /// <summary>The application-defined type, e.g. "chat".</summary>
        public string Type;
        /// <summary>Any JSON value (null, bool, string, long, double, JsonObject, List&lt;object&gt;).</summary>
        public object Data;
    }

    /// <summary>
    /// LiveMe is the caller's personal stream (GET /v1/me/events) on one platform: the
    /// statuses of the users it follows (SetFollowingAsync), kept in Presence, and the
    /// end of this session when a new one of the same platform replaces it (ends as Left).
    /// Subscribe to its events, then call Start().
    /// </summary>
    public sealed class LiveMe : LiveStream
    {
        /// <summary>A followed user's status arrived (current, then each change).</summary>
        public event Action<UserEvent> PresenceChanged;
        /// <summary>A new session of this platform replaced this one; the stream ends after it.</summary>
        public event Action<UserEvent> SessionReplaced;
        /// <summary>A direct message (SendDirectMessageAsync), also one sent while this platform was away.</summary>
        public event Action<UserEvent> MessageReceived;
        /// <summary>An invite to a room (InviteAsync): join by RoomId, or by InviteCode for a private room.</summary>
        public event Action<UserEvent> Invited;
        /// <summary>The user was removed from a room (Type kicked or banned).</summary>
        public event Action<UserEvent> RemovedFromRoom;
        /// <summary>A room the user was in closed.</summary>
        public event Action<UserEvent> RoomClosed;
        /// <summary>A matchmaking ticket was matched: a seat is held in RoomId until SeatHeldUntil.</summary>
        public event Action<UserEvent> MatchFound;
        /// <summary>Any event, after its own C# event.</summary>
        public event Action<UserEvent> Change;

        readonly string platform;

        /// <summary>The latest status of each followed user, by userId.</summary>
        public Dictionary<string, Presence> Presence { get; } = new Dictionary<string, Presence>();

        internal LiveMe(RealSyncClient client, string platform, LiveOptions options)
            : base(client, "/v1/me/events", options)
        {
            this.platform = platform;
            ResumeAfter(options.LastEventId);
        }

        /// <summary>
        /// Waits: 409 SESSION_EXISTS (the server's REALSYNC_SESSION_POLICY is reject-new and another session
        /// holds this platform) is retried with the backoff, at least its Retry-After, each refusal a
        /// Reconnecting: the other session ends, or its lease lapses when its client vanished (within
        /// REALSYNC_PRESENCE_TTL, 15 s by default). Close() gives up.
        /// </summary>
        protected override bool Waits(RealSyncException e) { return e.Status == 409 && e.Code == "SESSION_EXISTS"; }

        /// <inheritdoc/>
        protected override string Query() { return new QueryBuilder().Add("platform", platform).ToString(); }

        /// <inheritdoc/>
        protected override Task<StreamToken> StreamToken(CancellationToken ct) { return Client.MeStreamTokenAsync(ct); }

        /// <inheritdoc/>
        protected override CloseReason? Receive(string type, JsonObject data)
        {
            var e = new UserEvent
            {
                Type = data.String("type") ?? type, UserId = data.String("userId"), Platform = data.String("platform"),
                Session = data.String("session"), By = data.String("by"), Resync = data.Bool("resync"), Data = data,
                Pending = data.Long("pending"), RoomId = data.String("roomId"), InviteCode = data.String("inviteCode"),
                Reason = data.String("reason"), LastEventId = LastEventId, // read here: this event's
            };
            e.Seq = data.Long("seq");
            e.Ts = data.Time("ts");
            e.Name = data.String("name");
            e.Mode = data.String("mode");
            e.Region = data.String("region");
            e.TicketId = data.String("ticketId");
            e.MatchId = data.String("matchId");
            e.Team = data.Int("team");
            e.SeatHeldUntil = data.Time("seatHeldUntil");
            e.MessageId = data.String("messageId");
            var from = data.Object("from");
            if (from != null)
            {
                e.FromUserId = from.String("userId");
                e.FromName = from.String("name");
                e.FromServer = from.Bool("server");
            }
            var message = data.Object("message");
            if (message != null) e.Message = new DirectMessage { Type = message.String("type"), Data = message.Get("data") };
            if (e.Type == "presence") e.Presence = RealSync.Presence.FromJson(data);
            Post(() => Apply(e));
            return e.Type == "session_replaced" ? CloseReason.Left : (CloseReason?)null;
        }

        void Apply(UserEvent e)
        {
            switch (e.Type)
            {
                case "snapshot":
                    MarkReady();
                    break;
                case "presence":
                    Presence known;
                    if (Presence.TryGetValue(e.UserId, out known) && known.Version > e.Presence.Version) return; // older
                    Presence[e.UserId] = e.Presence;
                    Raise(PresenceChanged, e);
                    break;
                case "session_replaced":
                    Raise(SessionReplaced, e);
                    break;
                case "message":
                    Raise(MessageReceived, e);
                    break;
                case "invite":
                    Raise(Invited, e);
                    break;
                case "kicked":
                case "banned":
                    Raise(RemovedFromRoom, e);
                    break;
                case "room_closed":
                    Raise(RoomClosed, e);
                    break;
                case "match_found":
                    Raise(MatchFound, e);
                    break;
            }
            Raise(Change, e);
        }
    }
}

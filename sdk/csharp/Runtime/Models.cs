// The objects of the RealSync API (openapi.yaml, components.schemas), read
// from and written to JSON by hand: no reflection, no serializer dependency.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace RealSync
{
    /// <summary>State is a room's shared state: a flat map of key to any JSON value
    /// (see <see cref="Json"/> for the value types). In a patch, null deletes a key.</summary>
    public class State : JsonObject
    {
        /// <summary>An empty state.</summary>
        public State() { }

        /// <summary>A copy of a map.</summary>
        public State(IDictionary<string, object> from) : base(from) { }
    }

    /// <summary>Player is a member of a room.</summary>
    public class Player
    {
        /// <summary>The player's id in its room (small integer, never reused in the room).</summary>
        public int PlayerId;
        /// <summary>The display name.</summary>
        public string Name;
        /// <summary>When the player joined.</summary>
        public DateTime JoinedAt;
        /// <summary>Whether the player has an open event stream.</summary>
        public bool Connected;

        /// <summary>FromJson reads a Player.</summary>
        public static Player FromJson(JsonObject o)
        {
            if (o == null) return null;
            return new Player { PlayerId = o.Int("playerId"), Name = o.String("name"), JoinedAt = o.Time("joinedAt"), Connected = o.Bool("connected") };
        }
    }

    /// <summary>Room is a game room. Players is filled on single-room answers and in live rooms only.</summary>
    public class Room
    {
        /// <summary>The room id.</summary>
        public string Id;
        /// <summary>Name, 1..64 characters.</summary>
        public string Name;
        /// <summary>Game mode.</summary>
        public string Mode;
        /// <summary>Region.</summary>
        public string Region;
        /// <summary>"public" or "private".</summary>
        public string Visibility;
        /// <summary>"waiting", "playing" or "finished".</summary>
        public string Status;
        /// <summary>Whether joins are refused.</summary>
        public bool Locked;
        /// <summary>Seats, 1..100.</summary>
        public int MaxPlayers;
        /// <summary>Players in the room.</summary>
        public int PlayerCount;
        /// <summary>Seats held for named users; they count toward MaxPlayers for everyone else.</summary>
        public int ReservedSeats;
        /// <summary>The owner's playerId.</summary>
        public int OwnerPlayerId;
        /// <summary>Searchable attributes: string or number values.</summary>
        public JsonObject Attributes = new JsonObject();
        /// <summary>"owner" or "open".</summary>
        public string StatePolicy;
        /// <summary>Creation time.</summary>
        public DateTime CreatedAt;
        /// <summary>Last change.</summary>
        public DateTime UpdatedAt;
        /// <summary>The room's event sequence (the SSE event id's number).</summary>
        public long Version;
        /// <summary>The players in join order (single-room answers, live rooms), else null.</summary>
        public List<Player> Players;
        /// <summary>The invite code (private rooms, members only), else null.</summary>
        public string InviteCode;

        /// <summary>FromJson reads a Room.</summary>
        public static Room FromJson(JsonObject o)
        {
            if (o == null) return null;
            var r = new Room();
            r.Id = o.String("id");
            r.Apply(o);
            return r;
        }

        /// <summary>
        /// Apply sets the fields named in o (a room_updated event's changes, or
        /// a whole room); a null value clears the field. Unknown names are ignored.
        /// </summary>
        public void Apply(JsonObject o)
        {
            foreach (var kv in o)
            {
                var v = kv.Value;
                switch (kv.Key)
                {
                    case "name": Name = v as string; break;
                    case "mode": Mode = v as string; break;
                    case "region": Region = v as string; break;
                    case "visibility": Visibility = v as string; break;
                    case "status": Status = v as string; break;
                    case "locked": Locked = o.Bool("locked"); break;
                    case "maxPlayers": MaxPlayers = o.Int("maxPlayers"); break;
                    case "playerCount": PlayerCount = o.Int("playerCount"); break;
                    case "reservedSeats": ReservedSeats = o.Int("reservedSeats"); break;
                    case "ownerPlayerId": OwnerPlayerId = o.Int("ownerPlayerId"); break;
                    case "attributes": Attributes = o.Object("attributes") ?? new JsonObject(); break;
                    case "statePolicy": StatePolicy = v as string; break;
                    case "createdAt": CreatedAt = o.Time("createdAt"); break;
                    case "updatedAt": UpdatedAt = o.Time("updatedAt"); break;
                    case "version": Version = o.Long("version"); break;
                    case "inviteCode": InviteCode = v as string; break;
                    case "players":
                        var list = o.Array("players");
                        if (list == null) { Players = null; break; }
                        Players = new List<Player>(list.Count);
                        foreach (var p in list) Players.Add(Player.FromJson(p as JsonObject));
                        break;
                }
            }
        }

        /// <summary>Clone copies the room (and its player list).</summary>
        public Room Clone()
        {
            var r = (Room)MemberwiseClone();
            r.Attributes = new JsonObject(Attributes);
            if (Players != null)
            {
                r.Players = new List<Player>(Players.Count);
                foreach (var p in Players) r.Players.Add(new Player { PlayerId = p.PlayerId, Name = p.Name, JoinedAt = p.JoinedAt, Connected = p.Connected });
            }
            return r;
        }
    }

    /// <summary>MyRoom is a room the caller is in, with the caller's playerId.</summary>
    public class MyRoom : Room
    {
        /// <summary>The caller's playerId in the room.</summary>
        public int PlayerId;

        /// <summary>FromJson reads a MyRoom.</summary>
        public static new MyRoom FromJson(JsonObject o)
        {
            if (o == null) return null;
            var r = new MyRoom { Id = o.String("id"), PlayerId = o.Int("playerId") };
            r.Apply(o);
            return r;
        }
    }

    /// <summary>GuestToken is an issued identity token (guest or refreshed).</summary>
    public class GuestToken
    {
        /// <summary>The identity JWT.</summary>
        public string Token;
        /// <summary>The user id (never shown to other players).</summary>
        public string UserId;
        /// <summary>The display name.</summary>
        public string Name;
        /// <summary>When the token expires.</summary>
        public DateTime ExpiresAt;

        internal static GuestToken FromJson(JsonObject o)
        {
            return new GuestToken { Token = o.String("token"), UserId = o.String("userId"), Name = o.String("name"), ExpiresAt = o.Time("expiresAt") };
        }
    }

    /// <summary>StreamToken opens one event stream, once, within 60 s (the token query parameter).</summary>
    public class StreamToken
    {
        /// <summary>The stream token.</summary>
        public string Token;
        /// <summary>When it stops opening the stream.</summary>
        public DateTime ExpiresAt;

        internal static StreamToken FromJson(JsonObject o)
        {
            return new StreamToken { Token = o.String("token"), ExpiresAt = o.Time("expiresAt") };
        }
    }

    /// <summary>Presence is a user's status: online while a personal stream session holds its lease.</summary>
    public class Presence
    {
        /// <summary>The user.</summary>
        public string UserId;
        /// <summary>Whether any session is open.</summary>
        public bool Online;
        /// <summary>The platforms of the open sessions.</summary>
        public List<string> Platforms = new List<string>();
        /// <summary>Orders the user's statuses: a larger one is later; 0: never seen.</summary>
        public long Version;

        internal static Presence FromJson(JsonObject o)
        {
            var p = new Presence { UserId = o.String("userId"), Online = o.Bool("online"), Version = o.Long("version") };
            foreach (var x in o.Array("platforms") ?? new List<object>()) p.Platforms.Add(x as string);
            return p;
        }
    }

    /// <summary>SeatReservation is the answer of ReserveSeatsAsync.</summary>
    public class SeatReservation
    {
        /// <summary>The room's held seats in all, after.</summary>
        public int ReservedSeats;
        /// <summary>When the seats just held are released unless taken.</summary>
        public DateTime ExpiresAt;

        internal static SeatReservation FromJson(JsonObject o)
        {
            return new SeatReservation { ReservedSeats = o.Int("reservedSeats"), ExpiresAt = o.Time("expiresAt") };
        }
    }

    /// <summary>RoomJoined is the answer of create, join and join-by-code.</summary>
    public class RoomJoined
    {
        /// <summary>The room, with its players.</summary>
        public Room Room;
        /// <summary>The caller's playerId in it.</summary>
        public int PlayerId;

        internal static RoomJoined FromJson(JsonObject o)
        {
            return new RoomJoined { Room = Room.FromJson(o.Object("room")), PlayerId = o.Int("playerId") };
        }
    }

    /// <summary>QuickJoined is the answer of quick-join.</summary>
    public class QuickJoined : RoomJoined
    {
        /// <summary>True when the room was created for the caller.</summary>
        public bool Created;

        internal static new QuickJoined FromJson(JsonObject o)
        {
            return new QuickJoined { Room = Room.FromJson(o.Object("room")), PlayerId = o.Int("playerId"), Created = o.Bool("created") };
        }
    }

    /// <summary>Ticket is a matchmaking ticket (POST /v1/matchmaking/tickets).</summary>
    public class Ticket
    {
        /// <summary>The ticket's id.</summary>
        public string TicketId;
        /// <summary>The mode it queues for.</summary>
        public string Mode;
        /// <summary>Acceptable regions, in preference order.</summary>
        public List<string> Regions = new List<string>();
        /// <summary>The rating it is matched by.</summary>
        public double Rating;
        /// <summary>The leader (who queued).</summary>
        public string UserId;
        /// <summary>The party, the leader not included.</summary>
        public List<string> PartyUserIds = new List<string>();
        /// <summary>searching, matched, expired or cancelled.</summary>
        public string Status;
        /// <summary>When it was created.</summary>
        public DateTime CreatedAt;
        /// <summary>When a searching ticket expires.</summary>
        public DateTime ExpiresAt;
        /// <summary>Searching: the rating window (±) now.</summary>
        public double Window;
        /// <summary>Searching: the seconds waited.</summary>
        public double WaitedSeconds;
        /// <summary>Matched: the match.</summary>
        public string MatchId;
        /// <summary>Matched: the region of the match.</summary>
        public string Region;
        /// <summary>Matched: the match's room (null until made).</summary>
        public string RoomId;
        /// <summary>Matched, with RoomId: until when the seats of the ticket's users are held in the room
        /// (UserEvent.SeatHeldUntil of their match_found; DateTime.MinValue when the server does not say).</summary>
        public DateTime SeatHeldUntil;
        /// <summary>Matched: the ticket's team, 0-based.</summary>
        public int Team;
        /// <summary>The attributes it was created with (empty when none).</summary>
        public JsonObject Attributes = new JsonObject();
        /// <summary>Matched: when (DateTime.MinValue otherwise).</summary>
        public DateTime MatchedAt;

        static double Number(JsonObject o, string name)
        {
            var v = o.Get(name);
            if (v is double d) return d;
            if (v is long l) return l;
            return 0;
        }

        static List<string> Strings(JsonObject o, string name)
        {
            var out_ = new List<string>();
            var a = o.Array(name);
            if (a != null) foreach (var v in a) out_.Add(v as string);
            return out_;
        }

        internal static Ticket FromJson(JsonObject body)
        {
            var o = body.Object("ticket") ?? body;
            return new Ticket
            {
                TicketId = o.String("ticketId"), Mode = o.String("mode"), Regions = Strings(o, "regions"),
                Rating = Number(o, "rating"), UserId = o.String("userId"), PartyUserIds = Strings(o, "partyUserIds"),
                Status = o.String("status"), CreatedAt = o.Time("createdAt"), ExpiresAt = o.Time("expiresAt"),
                Window = Number(o, "window"), WaitedSeconds = Number(o, "waitedSeconds"),
                MatchId = o.String("matchId"), Region = o.String("region"), RoomId = o.String("roomId"), Team = o.Int("team"),
                Attributes = o.Object("attributes") ?? new JsonObject(),
                MatchedAt = o.Time("matchedAt"), SeatHeldUntil = o.Time("seatHeldUntil"),
            };
        }
    }

    /// <summary>Party is the party the caller joined (PUT /v1/me/party): the leader whose
    /// tickets may name the caller, until ExpiresAt.</summary>
    public class Party
    {
        /// <summary>The leader whose tickets may name the caller.</summary>
        public string LeaderUserId;
        /// <summary>When the caller leaves the party unless they join it again (24 hours after the last join).</summary>
        public DateTime ExpiresAt;

        internal static Party FromJson(JsonObject o)
        {
            return new Party { LeaderUserId = o.String("leaderUserId"), ExpiresAt = o.Time("expiresAt") };
        }
    }

    /// <summary>PartyMember is a user in the caller's party (ListPartyMembersAsync).</summary>
    public class PartyMember
    {
        /// <summary>A user in the caller's party.</summary>
        public string UserId;
        /// <summary>When the user leaves the party unless they join it again (24 hours after their last join).</summary>
        public DateTime ExpiresAt;

        internal static PartyMember FromJson(JsonObject o)
        {
            return new PartyMember { UserId = o.String("userId"), ExpiresAt = o.Time("expiresAt") };
        }
    }

    /// <summary>Page is a page of a listing; NextCursor is null on the last one.</summary>
    public class Page<T>
    {
        /// <summary>The items.</summary>
        public List<T> Items = new List<T>();
        /// <summary>The cursor of the next page, or null.</summary>
        public string NextCursor;
    }

    /// <summary>StateView is a room's state with its versions (GET state).</summary>
    public class StateView
    {
        /// <summary>The room version.</summary>
        public long Version;
        /// <summary>The state version (the ETag).</summary>
        public long StateVersion;
        /// <summary>The state.</summary>
        public State State;

        internal static StateView FromJson(JsonObject o)
        {
            return new StateView { Version = o.Long("version"), StateVersion = o.Long("stateVersion"), State = new State(o.Object("state") ?? new JsonObject()) };
        }
    }

    /// <summary>StateVersions is the answer of a state patch.</summary>
    public class StateVersions
    {
        /// <summary>The room version.</summary>
        public long Version;
        /// <summary>The state version.</summary>
        public long StateVersion;

        internal static StateVersions FromJson(JsonObject o)
        {
            return new StateVersions { Version = o.Long("version"), StateVersion = o.Long("stateVersion") };
        }
    }

    /// <summary>Message is a room message (history, or a live message event's payload).</summary>
    public class Message
    {
        /// <summary>The room version it took (0 in live events: see the event's Version).</summary>
        public long Version;
        /// <summary>The sender's playerId (0: the server).</summary>
        public int From;
        /// <summary>The application-defined type, e.g. "chat".</summary>
        public string Type;
        /// <summary>Any JSON value.</summary>
        public object Data;
        /// <summary>The players it was addressed to, or null for everyone.</summary>
        public List<int> To;
        /// <summary>When it was sent (history only).</summary>
        public DateTime Ts;
        /// <summary>Of a message sent with an Idempotency-Key, the same for every send of that key and
        /// sender (null without one): a message sent again after a failover of Redis that lost the first
        /// comes at a new version with the same MessageId; drop one whose MessageId you have already.</summary>
        public string MessageId;

        /// <summary>FromJson reads a Message.</summary>
        public static Message FromJson(JsonObject o)
        {
            if (o == null) return null;
            var m = new Message { Version = o.Long("version"), From = o.Int("from"), Type = o.String("type"), Data = o.Get("data"), Ts = o.Time("ts"), MessageId = o.String("messageId") };
            var to = o.Array("to");
            if (to != null)
            {
                m.To = new List<int>(to.Count);
                foreach (var p in to) m.To.Add(p is long l ? (int)l : 0);
            }
            return m;
        }
    }

    /// <summary>StatusCounts counts rooms per status.</summary>
    public class StatusCounts
    {
        /// <summary>Waiting rooms.</summary>
        public long Waiting;
        /// <summary>Playing rooms.</summary>
        public long Playing;
        /// <summary>Finished rooms (the totals only).</summary>
        public long Finished;

        internal static StatusCounts FromJson(JsonObject o)
        {
            if (o == null) return new StatusCounts();
            return new StatusCounts { Waiting = o.Long("waiting"), Playing = o.Long("playing"), Finished = o.Long("finished") };
        }
    }

    /// <summary>LobbyStats are the live room and player counts.</summary>
    public class LobbyStats
    {
        /// <summary>Rooms per status.</summary>
        public StatusCounts Rooms;
        /// <summary>Players in rooms.</summary>
        public long Players;
        /// <summary>Waiting and playing rooms per mode.</summary>
        public Dictionary<string, StatusCounts> Modes = new Dictionary<string, StatusCounts>();
        /// <summary>Waiting and playing rooms per region.</summary>
        public Dictionary<string, StatusCounts> Regions = new Dictionary<string, StatusCounts>();

        internal static LobbyStats FromJson(JsonObject o)
        {
            var s = new LobbyStats { Rooms = StatusCounts.FromJson(o.Object("rooms")), Players = o.Long("players") };
            foreach (var kv in o.Object("modes") ?? new JsonObject()) s.Modes[kv.Key] = StatusCounts.FromJson(kv.Value as JsonObject);
            foreach (var kv in o.Object("regions") ?? new JsonObject()) s.Regions[kv.Key] = StatusCounts.FromJson(kv.Value as JsonObject);
            return s;
        }
    }

    /// <summary>Instance is a live realsyncd instance (admin).</summary>
    public class Instance
    {
        /// <summary>Its id.</summary>
        public string Id;
        /// <summary>host:port it is reached at.</summary>
        public string Addr;
        /// <summary>Build version.</summary>
        public string Version;
        /// <summary>When it started.</summary>
        public DateTime StartedAt;
        /// <summary>Its last heartbeat.</summary>
        public DateTime HeartbeatAt;
        /// <summary>Open event streams at its last heartbeat.</summary>
        public long Streams;
        /// <summary>Digest of the settings every instance must share (matchmaking rules, modes, regions, party consent); "" from an older release.</summary>
        public string Settings;

        internal static Instance FromJson(JsonObject o)
        {
            return new Instance { Id = o.String("id"), Addr = o.String("addr"), Version = o.String("version"), StartedAt = o.Time("startedAt"), HeartbeatAt = o.Time("heartbeatAt"), Streams = o.Long("streams"), Settings = o.String("settings") };
        }
    }

    /// <summary>DeadLetter is a webhook delivery that failed every try, or was refused untried for its endpoint's backlog (GET /v1/admin/webhooks/dead-letters).</summary>
    public class DeadLetter
    {
        /// <summary>Its id, for ReplayWebhookDeadLetterAsync.</summary>
        public string Id;
        /// <summary>The webhook-id of every try of the event.</summary>
        public string MessageId;
        /// <summary>The endpoint's id in the webhooks file.</summary>
        public string Endpoint;
        /// <summary>The event's type.</summary>
        public string Type;
        /// <summary>The event as delivered.</summary>
        public JsonObject Event;
        /// <summary>Tries made; 0 for an event refused untried, its endpoint's backlog full (REALSYNC_WEBHOOK_MAX_BACKLOG).</summary>
        public int Attempts;
        /// <summary>When the last try failed, or the event was refused.</summary>
        public DateTime FailedAt;
        /// <summary>The last try's failure.</summary>
        public string LastError;

        internal static DeadLetter FromJson(JsonObject o)
        {
            return new DeadLetter { Id = o.String("id"), MessageId = o.String("messageId"), Endpoint = o.String("endpoint"), Type = o.String("type"),
                Event = o.Object("event"), Attempts = o.Int("attempts"), FailedAt = o.Time("failedAt"), LastError = o.String("lastError") };
        }
    }

    /// <summary>FieldError names a field of a request that breaks a constraint.</summary>
    public class FieldError
    {
        /// <summary>The field, e.g. "maxPlayers".</summary>
        public string Field;
        /// <summary>What is wrong with it.</summary>
        public string Message;
    }

    /// <summary>CreateRoomRequest is the body of POST /v1/rooms. Null fields are left out (server defaults).</summary>
    public class CreateRoomRequest : IJsonWritable
    {
        /// <summary>Name, 1..64 characters (required).</summary>
        public string Name;
        /// <summary>Mode (required).</summary>
        public string Mode;
        /// <summary>Region (required).</summary>
        public string Region;
        /// <summary>Seats, 1..100 (default 8).</summary>
        public int? MaxPlayers;
        /// <summary>"public" (default) or "private".</summary>
        public string Visibility;
        /// <summary>Searchable attributes: string or number values.</summary>
        public IDictionary<string, object> Attributes;
        /// <summary>The initial state.</summary>
        public IDictionary<string, object> State;
        /// <summary>"owner" (default) or "open".</summary>
        public string StatePolicy;

        /// <inheritdoc/>
        public void WriteJson(StringBuilder sb)
        {
            var w = new ObjectWriter(sb);
            w.Field("name", Name).Field("mode", Mode).Field("region", Region).Field("maxPlayers", MaxPlayers)
                .Field("visibility", Visibility).Field("attributes", Attributes).Field("state", State)
                .Field("statePolicy", StatePolicy).End();
        }
    }

    /// <summary>UpdateRoomRequest is the body of PATCH /v1/rooms/{roomId}: only the fields set are changed.</summary>
    public class UpdateRoomRequest : IJsonWritable
    {
        /// <summary>New name.</summary>
        public string Name;
        /// <summary>New status.</summary>
        public string Status;
        /// <summary>Lock or unlock.</summary>
        public bool? Locked;
        /// <summary>New seat count.</summary>
        public int? MaxPlayers;
        /// <summary>New visibility.</summary>
        public string Visibility;
        /// <summary>Replaces the whole attribute map.</summary>
        public IDictionary<string, object> Attributes;

        /// <inheritdoc/>
        public void WriteJson(StringBuilder sb)
        {
            new ObjectWriter(sb).Field("name", Name).Field("status", Status).Field("locked", Locked)
                .Field("maxPlayers", MaxPlayers).Field("visibility", Visibility).Field("attributes", Attributes).End();
        }
    }

    /// <summary>CreateTicketRequest is the body of POST /v1/matchmaking/tickets.</summary>
    public class CreateTicketRequest : IJsonWritable
    {
        /// <summary>The mode (required).</summary>
        public string Mode;
        /// <summary>Acceptable regions in preference order, 1..8 (required).</summary>
        public IList<string> Regions;
        /// <summary>The skill rating (the party's); the mode's defaultRating when null.</summary>
        public double? Rating;
        /// <summary>Values the mode's attribute rules read (strings, numbers, booleans).</summary>
        public IDictionary<string, object> Attributes;
        /// <summary>The party, the caller not included (never split, all in one team).</summary>
        public IList<string> PartyUserIds;

        /// <inheritdoc/>
        public void WriteJson(StringBuilder sb)
        {
            new ObjectWriter(sb).Field("mode", Mode).Field("regions", Regions).Field("rating", Rating)
                .Field("attributes", Attributes).Field("partyUserIds", PartyUserIds).End();
        }
    }

    /// <summary>QuickJoinRequest is the body of POST /v1/matchmaking/quick-join.</summary>
    public class QuickJoinRequest : IJsonWritable
    {
        /// <summary>The mode (required).</summary>
        public string Mode;
        /// <summary>Regions tried in order; a room is created in the first.</summary>
        public IList<string> Regions;
        /// <summary>Filters: a string or number (equal), or a map of numeric bounds gte, gt, lte, lt.</summary>
        public IDictionary<string, object> Attributes;
        /// <summary>The room to create when nothing can be joined.</summary>
        public QuickJoinCreate Create;

        /// <inheritdoc/>
        public void WriteJson(StringBuilder sb)
        {
            new ObjectWriter(sb).Field("mode", Mode).Field("regions", Regions).Field("attributes", Attributes).Field("create", Create).End();
        }
    }

    /// <summary>QuickJoinCreate is the room quick-join creates when nothing can be joined.</summary>
    public class QuickJoinCreate : IJsonWritable
    {
        /// <summary>Name (required).</summary>
        public string Name;
        /// <summary>Seats (default 8).</summary>
        public int? MaxPlayers;
        /// <summary>Attributes.</summary>
        public IDictionary<string, object> Attributes;
        /// <summary>"owner" or "open".</summary>
        public string StatePolicy;

        /// <inheritdoc/>
        public void WriteJson(StringBuilder sb)
        {
            new ObjectWriter(sb).Field("name", Name).Field("maxPlayers", MaxPlayers).Field("attributes", Attributes).Field("statePolicy", StatePolicy).End();
        }
    }

    /// <summary>MessageRequest is the body of POST /v1/rooms/{roomId}/messages.</summary>
    public class MessageRequest : IJsonWritable
    {
        /// <summary>Application-defined kind, e.g. "chat" (required).</summary>
        public string Type;
        /// <summary>Any JSON value, at most 4 KiB (required; null sends JSON null).</summary>
        public object Data;
        /// <summary>Only these players (and the sender) get it; null: everyone.</summary>
        public IList<int> To;

        /// <inheritdoc/>
        public void WriteJson(StringBuilder sb)
        {
            var w = new ObjectWriter(sb).Field("type", Type);
            w.Always("data", Data);
            w.Field("to", To).End();
        }
    }

    /// <summary>ListRoomsQuery is the query of GET /v1/rooms. Null fields are left out.</summary>
    public class ListRoomsQuery
    {
        /// <summary>Comma-separated statuses (default waiting).</summary>
        public string Status;
        /// <summary>Only waiting, unlocked, not-full rooms.</summary>
        public bool? Joinable;
        /// <summary>Mode filter.</summary>
        public string Mode;
        /// <summary>Region filter.</summary>
        public string Region;
        /// <summary>"newest" (default), "oldest" or "fill" (needs Joinable).</summary>
        public string Sort;
        /// <summary>1..100 (default 20).</summary>
        public int? Limit;
        /// <summary>The previous page's NextCursor.</summary>
        public string Cursor;
        /// <summary>Attribute filters: "attr.map" = "dust2", "attr.rank.gte" = "1400" (key without the attr. prefix).</summary>
        public IDictionary<string, string> Attributes;

        internal string ToQuery()
        {
            var q = new QueryBuilder();
            q.Add("status", Status).Add("joinable", Joinable.HasValue ? (Joinable.Value ? "true" : "false") : null)
                .Add("mode", Mode).Add("region", Region).Add("sort", Sort)
                .Add("limit", Limit.HasValue ? Limit.Value.ToString(CultureInfo.InvariantCulture) : null).Add("cursor", Cursor);
            if (Attributes != null) foreach (var kv in Attributes) q.Add("attr." + kv.Key, kv.Value);
            return q.ToString();
        }
    }

    /// <summary>QueryBuilder builds a URL query string, escaping each name and value.</summary>
    internal sealed class QueryBuilder
    {
        readonly StringBuilder sb = new StringBuilder();

        public QueryBuilder Add(string name, string value)
        {
            if (value == null) return this;
            sb.Append(sb.Length == 0 ? '?' : '&').Append(Uri.EscapeDataString(name)).Append('=').Append(Uri.EscapeDataString(value));
            return this;
        }

        public override string ToString() { return sb.ToString(); }
    }

    /// <summary>ObjectWriter writes a JSON object member by member, leaving out nulls.</summary>
    internal sealed class ObjectWriter
    {
        readonly StringBuilder sb;
        bool first = true;

        public ObjectWriter(StringBuilder sb) { this.sb = sb; sb.Append('{'); }

        public ObjectWriter Field(string name, object value)
        {
            return value == null ? this : Always(name, value);
        }

        public ObjectWriter Always(string name, object value)
        {
            if (!first) sb.Append(',');
            first = false;
            Json.WriteString(sb, name);
            sb.Append(':');
            Json.WriteValue(sb, value, 1);
            return this;
        }

        public void End() { sb.Append('}'); }
    }
}

using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;

namespace RealSync
{
    /// <summary>
    /// RoomEvent is an event of a room stream (openapi.yaml, streamRoomEvents).
    /// Type says which fields are set: snapshot (Room, State, StateVersion),
    /// state (By, Set, Del, StateVersion), player_joined (Player),
    /// player_left (PlayerId, Reason: left, kicked, disconnected),
    /// player_connected and player_disconnected (PlayerId), room_updated
    /// (Changes), message (Message), room_closed (Reason: closed, empty,
    /// expired, finished, gone), seats_reserved (Seats, ReservedSeats,
    /// ExpiresAt), reservation_expired (Seats, ReservedSeats); player_joined
    /// sets ReservedSeats (else -1) when the player took a held seat. Data is
    /// the whole JSON payload.
    /// </summary>
    public class RoomEvent
    {
        /// <summary>The event type.</summary>
        public string Type;
        /// <summary>The room id.</summary>
        public string RoomId;
        /// <summary>The room version the event took.</summary>
        public long Version;
        /// <summary>When it happened.</summary>
        public DateTime Ts;
        /// <summary>snapshot: the room with its players.</summary>
        public Room Room;
        /// <summary>snapshot: the whole state.</summary>
        public State State;
        /// <summary>snapshot, state: the state version.</summary>
        public long StateVersion;
        /// <summary>state: the writer's playerId (0: the server).</summary>
        public int By;
        /// <summary>state: the keys set, with their values.</summary>
        public JsonObject Set;
        /// <summary>state: the keys deleted.</summary>
        public List<string> Del;
        /// <summary>player_joined: the player.</summary>
        public Player Player;
        /// <summary>player_left, player_connected, player_disconnected: the player.</summary>
        public int PlayerId;
        /// <summary>player_left, room_closed: why.</summary>
        public string Reason;
        /// <summary>room_updated: the changed fields with their new values (null: cleared).</summary>
        public JsonObject Changes;
        /// <summary>message: the message (Version and Ts are the event's).</summary>
        public Message Message;
        /// <summary>seats_reserved, reservation_expired: how many seats.</summary>
        public int Seats;
        /// <summary>seats_reserved, reservation_expired, and player_joined into a held seat: the room's held seats after; else -1.</summary>
        public int ReservedSeats = -1;
        /// <summary>seats_reserved: when the seats are released unless taken.</summary>
        public DateTime ExpiresAt;
        /// <summary>The whole payload.</summary>
        public JsonObject Data;

        /// <summary>FromJson reads an event's payload.</summary>
        public static RoomEvent FromJson(JsonObject o)
        {
            var e = new RoomEvent
            {
                Type = o.String("type"), RoomId = o.String("roomId"), Version = o.Long("version"), Ts = o.Time("ts"), Data = o,
                StateVersion = o.Long("stateVersion"), By = o.Int("by"), PlayerId = o.Int("playerId"), Reason = o.String("reason"),
                Changes = o.Object("changes"), Set = o.Object("set"), Seats = o.Int("seats"),
            };
            if (o.ContainsKey("reservedSeats")) e.ReservedSeats = o.Int("reservedSeats");
            if (o.ContainsKey("expiresAt")) e.ExpiresAt = o.Time("expiresAt");
            if (o.Object("room") != null) e.Room = Room.FromJson(o.Object("room"));
            if (o.Object("state") != null) e.State = new State(o.Object("state"));
            if (o.Object("player") != null) e.Player = Player.FromJson(o.Object("player"));
            var del = o.Array("del");
            if (del != null)
            {
                e.Del = new List<string>(del.Count);
                foreach (var k in del) e.Del.Add(k as string);
            }
            var m = o.Object("message");
            if (m != null)
            {
                e.Message = Message.FromJson(m);
                e.Message.Version = e.Version;
                e.Message.Ts = e.Ts;
            }
            return e;
        }
    }

    /// <summary>
    /// LiveRoom keeps a local copy of a room, its players and its state,
    /// applying the snapshot and every event of the room's stream (an event
    /// whose version was applied already is skipped). Room, State,
    /// StateVersion and Version change only where events are raised
    /// (LiveOptions.Dispatch), just before the event's C# events: read them
    /// there. room_closed ends it, and so does the caller's own player_left
    /// (left or kicked): its playerId is LiveOptions.PlayerId, else the one
    /// this client got in the room (RealSyncClient.PlayerIdIn); when neither
    /// is known, a player_left (not a disconnection) followed by a refused
    /// reconnection (403 NOT_A_MEMBER or 404) ends it with reason Left too.
    /// So does any reconnection refused 403 NOT_A_MEMBER, or a private room's
    /// 404 ROOM_NOT_FOUND, after the stream was open (the player was removed
    /// while away, see Removed), with that error in ClosedEvent.Error; a public
    /// room's 404 then ends it with RoomClosed (deleted meanwhile).
    /// </summary>
    public sealed class LiveRoom : LiveStream
    {
        /// <summary>
        /// Removed: a reconnection refused after the stream was open with 403 NOT_A_MEMBER (a public room:
        /// the player was removed while away, REALSYNC_DISCONNECT_GRACE ran out: a phone call, a tunnel;
        /// kicked, and never saw its own player_left) ends the stream as Left; with 404 ROOM_NOT_FOUND, as
        /// RoomClosed for a public room (it answers non-members 403: the room was deleted meanwhile) and as
        /// Left for a private one (it answers non-members 404 too: removed, or gone). That error is in
        /// ClosedEvent.Error.
        /// </summary>
        protected override CloseReason? Removed(RealSyncException e)
        {
            if (e.Status == 403 && e.Code == "NOT_A_MEMBER") return CloseReason.Left;
            if (e.Status == 404 && e.Code == "ROOM_NOT_FOUND") return visibility == "public" ? CloseReason.RoomClosed : CloseReason.Left;
            return null;
        }

        volatile string visibility; // the room's, as the stream last said (read by the loop, not the dispatch)

        /// <summary>The snapshot (the room with its players, the state) was applied.</summary>
        public event Action<RoomEvent> Snapshot;
        /// <summary>A state patch was applied (event "state").</summary>
        public event Action<RoomEvent> StateChanged;
        /// <summary>A player joined.</summary>
        public event Action<RoomEvent> PlayerJoined;
        /// <summary>A player left, was kicked, or was removed after a disconnection.</summary>
        public event Action<RoomEvent> PlayerLeft;
        /// <summary>A player opened an event stream.</summary>
        public event Action<RoomEvent> PlayerConnected;
        /// <summary>A player has no event stream any more.</summary>
        public event Action<RoomEvent> PlayerDisconnected;
        /// <summary>Room fields changed (owner, status, lock, ...).</summary>
        public event Action<RoomEvent> RoomUpdated;
        /// <summary>A message arrived.</summary>
        public event Action<RoomEvent> MessageReceived;
        /// <summary>The room was closed; the stream ends.</summary>
        public event Action<RoomEvent> RoomClosed;
        /// <summary>Any applied event, after its own C# event.</summary>
        public event Action<RoomEvent> Change;

        /// <summary>The room id.</summary>
        public string RoomId { get; }
        /// <summary>The room with its players (null until the snapshot).</summary>
        public Room Room { get; private set; }
        /// <summary>The room state.</summary>
        public State State { get; private set; } = new State();
        /// <summary>The state version.</summary>
        public long StateVersion { get; private set; }
        /// <summary>The room version of the last event applied.</summary>
        public long Version { get; private set; }

        /// <summary>The players (empty until the snapshot).</summary>
        public IReadOnlyList<Player> Players
        {
            get { return Room != null && Room.Players != null ? (IReadOnlyList<Player>)Room.Players : new Player[0]; }
        }

        internal LiveRoom(RealSyncClient client, string roomId, LiveOptions options)
            : base(client, "/v1/rooms/" + RealSyncClient.Segment(roomId, nameof(roomId)) + "/events", options)
        {
            RoomId = roomId;
        }

        /// <inheritdoc/>
        protected override Task<StreamToken> StreamToken(CancellationToken ct) { return Client.RoomStreamTokenAsync(RoomId, ct); }

        /// <inheritdoc/>
        protected override CloseReason? Receive(string type, JsonObject data)
        {
            var e = RoomEvent.FromJson(data);
            if (string.IsNullOrEmpty(e.Type)) e.Type = type;
            Post(() => Apply(e));
            if (e.Type == "snapshot" && e.Room != null) visibility = e.Room.Visibility;
            if (e.Type == "room_updated" && e.Changes != null && e.Changes.ContainsKey("visibility")) visibility = e.Changes["visibility"] as string;
            if (e.Type == "room_closed") return CloseReason.RoomClosed;
            if (e.Type == "player_left")
            {
                var own = Options.PlayerId ?? Client.PlayerIdIn(RoomId);
                if (own.HasValue && e.PlayerId == own.Value) return CloseReason.Left;
                if (!own.HasValue && e.Reason != "disconnected") MaybeLeft();
            }
            return null;
        }

        void Apply(RoomEvent e)
        {
            if (e.Type != "snapshot" && e.Version <= Version) return; // applied already
            var room = Room;
            switch (e.Type)
            {
                case "snapshot":
                    Room = e.Room;
                    if (Room != null && Room.Players == null) Room.Players = new List<Player>();
                    State = e.State ?? new State();
                    StateVersion = e.StateVersion;
                    break;
                case "state":
                    if (e.Del != null) foreach (var k in e.Del) State.Remove(k);
                    if (e.Set != null) foreach (var kv in e.Set) State[kv.Key] = kv.Value;
                    StateVersion = e.StateVersion;
                    break;
                case "player_joined":
                    if (room != null && e.Player != null && room.Players.FindIndex(p => p.PlayerId == e.Player.PlayerId) < 0)
                    {
                        room.Players.Add(e.Player);
                        room.PlayerCount = room.Players.Count;
                    }
                    break;
                case "player_left":
                    if (room != null)
                    {
                        room.Players.RemoveAll(p => p.PlayerId == e.PlayerId);
                        room.PlayerCount = room.Players.Count;
                    }
                    break;
                case "player_connected":
                case "player_disconnected":
                    if (room != null)
                        foreach (var p in room.Players)
                            if (p.PlayerId == e.PlayerId) p.Connected = e.Type == "player_connected";
                    break;
                case "room_updated":
                    if (room != null && e.Changes != null) room.Apply(e.Changes);
                    break;
                case "seats_reserved":
                case "reservation_expired":
                    break; // ReservedSeats below
            }
            if (room != null && e.ReservedSeats >= 0) room.ReservedSeats = e.ReservedSeats;
            Version = e.Version;
            if (Room != null && e.Type != "snapshot")
            {
                Room.Version = e.Version;
                Room.UpdatedAt = e.Ts; // every event stamps the room
            }
            switch (e.Type)
            {
                case "snapshot": Raise(Snapshot, e); break;
                case "state": Raise(StateChanged, e); break;
                case "player_joined": Raise(PlayerJoined, e); break;
                case "player_left": Raise(PlayerLeft, e); break;
                case "player_connected": Raise(PlayerConnected, e); break;
                case "player_disconnected": Raise(PlayerDisconnected, e); break;
                case "room_updated": Raise(RoomUpdated, e); break;
                case "message": Raise(MessageReceived, e); break;
                case "room_closed": Raise(RoomClosed, e); break;
            }
            Raise(Change, e);
            if (e.Type == "snapshot") MarkReady();
        }
    }
}

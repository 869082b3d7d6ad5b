using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;

namespace RealSync
{
    /// <summary>
    /// LobbyEvent is an event of the lobby stream: rooms (Rooms: the whole
    /// list, replacing the one kept), room_added, room_updated (Room, with
    /// Version), room_removed (Room: only Id and Version once it went private).
    /// </summary>
    public class LobbyEvent
    {
        /// <summary>The event type.</summary>
        public string Type;
        /// <summary>The room's version (not on rooms).</summary>
        public long Version;
        /// <summary>The room (not on rooms).</summary>
        public Room Room;
        /// <summary>rooms: the joinable rooms, fill order.</summary>
        public List<Room> Rooms;
    }

    /// <summary>
    /// LiveLobby keeps the joinable public rooms of a mode and region (any
    /// when null), by id, keeping per room the highest version seen.
    /// Rooms changes only where events are raised (LiveOptions.Dispatch).
    /// </summary>
    public sealed class LiveLobby : LiveStream
    {
        /// <summary>A whole list arrived (first, and after every reconnection).</summary>
        public event Action<LobbyEvent> RoomsReplaced;
        /// <summary>A room became joinable.</summary>
        public event Action<LobbyEvent> RoomAdded;
        /// <summary>A listed room changed and is still joinable.</summary>
        public event Action<LobbyEvent> RoomUpdated;
        /// <summary>A listed room is no longer joinable.</summary>
        public event Action<LobbyEvent> RoomRemoved;
        /// <summary>Any applied event, after its own C# event.</summary>
        public event Action<LobbyEvent> Change;

        readonly string mode;
        readonly string region;

        /// <summary>The joinable rooms by id.</summary>
        public Dictionary<string, Room> Rooms { get; } = new Dictionary<string, Room>();

        internal LiveLobby(RealSyncClient client, string mode, string region, LiveOptions options)
            : base(client, "/v1/lobby/events", options)
        {
            this.mode = mode;
            this.region = region;
        }

        /// <summary>List returns the rooms fullest first, then oldest (the fill order quick-join uses).</summary>
        public List<Room> List()
        {
            var list = new List<Room>(Rooms.Values);
            list.Sort((a, b) =>
            {
                var c = b.PlayerCount.CompareTo(a.PlayerCount);
                if (c != 0) return c;
                c = a.CreatedAt.CompareTo(b.CreatedAt);
                return c != 0 ? c : string.CompareOrdinal(a.Id, b.Id);
            });
            return list;
        }

        /// <inheritdoc/>
        protected override string Query()
        {
            return new QueryBuilder().Add("mode", mode).Add("region", region).ToString();
        }

        /// <inheritdoc/>
        protected override bool ResumesFromLastEventId { get { return false; } } // every connection starts with the whole list

        /// <inheritdoc/>
        protected override Task<StreamToken> StreamToken(CancellationToken ct) { return Client.LobbyStreamTokenAsync(ct); }

        /// <inheritdoc/>
        protected override CloseReason? Receive(string type, JsonObject data)
        {
            var e = new LobbyEvent { Type = data.String("type") ?? type, Version = data.Long("version") };
            if (e.Type == "rooms")
            {
                e.Rooms = new List<Room>();
                foreach (var r in data.Array("rooms") ?? new List<object>()) e.Rooms.Add(Room.FromJson(r as JsonObject));
            }
            else if (data.Object("room") != null)
            {
                e.Room = Room.FromJson(data.Object("room"));
                e.Room.Version = e.Version;
            }
            else return null;
            Post(() => Apply(e));
            return null;
        }

        void Apply(LobbyEvent e)
        {
            if (e.Type == "rooms")
            {
                Rooms.Clear();
                foreach (var r in e.Rooms) Rooms[r.Id] = r;
                Raise(RoomsReplaced, e);
                Raise(Change, e);
                MarkReady();
                return;
            }
            Room known;
            if (Rooms.TryGetValue(e.Room.Id, out known) && known.Version >= e.Version) return; // older than what we show
            switch (e.Type)
            {
                case "room_removed":
                    Rooms.Remove(e.Room.Id);
                    Raise(RoomRemoved, e);
                    break;
                case "room_added":
                    Rooms[e.Room.Id] = e.Room;
                    Raise(RoomAdded, e);
                    break;
                case "room_updated":
                    Rooms[e.Room.Id] = e.Room;
                    Raise(RoomUpdated, e);
                    break;
                default:
                    return;
            }
            Raise(Change, e);
        }
    }
}

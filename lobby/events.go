package lobby

import (
	"encoding/json"

	"github.com/realsync/realsync/rooms"
)

// The events of the lobby stream, as clients receive them in an SSE
// frame's data; the contract as rooms/events.go explains (openapi.yaml's
// lobby event schemas are generated from these types, and the server
// encodes the events from them).

// RoomsEvent is the lobby stream's first event (and the one after a
// resync): up to 100 joinable public rooms in fill order.
type RoomsEvent struct {
	Type  string `json:"type"`
	Rooms []any  `json:"rooms" schema:"ref=Room,desc=Rooms as GET /v1/rooms lists them, without players."`
}

// RoomChangeEvent is room_added (a room became joinable) or room_updated
// (a shown room changed and is still joinable).
type RoomChangeEvent struct {
	Type string `json:"type"`
	// Version is the room's version at the change; older changes than one
	// shown are never sent.
	Version int64           `json:"version"`
	Room    json.RawMessage `json:"room" schema:"ref=Room,desc=The room as GET /v1/rooms lists it, without players."`
}

// RoomRemovedEvent is room_removed: a shown room stopped being joinable,
// turned private or closed.
type RoomRemovedEvent struct {
	Type    string          `json:"type"`
	Version int64           `json:"version"`
	Room    json.RawMessage `json:"room" schema:"ref=LobbyRemovedRoom,desc=The room as listed when it is still public; only id and version when it closed or turned private."`
}

// RemovedRoom is the least room_removed says of a room: its id and
// version (a public room comes whole).
type RemovedRoom struct {
	_       struct{} `schema:"open"`
	ID      string   `json:"id"`
	Version int64    `json:"version"`
}

// Event types of the lobby stream.
const (
	EventRooms       = "rooms"
	EventRoomAdded   = "room_added"
	EventRoomUpdated = "room_updated"
	EventRoomRemoved = "room_removed"
)

// Events lists every event of the lobby stream with the Go type of its
// data.
var Events = []rooms.EventKind{
	{Type: EventRooms, New: func() any { return new(RoomsEvent) }},
	{Type: EventRoomAdded, New: func() any { return new(RoomChangeEvent) }},
	{Type: EventRoomUpdated, New: func() any { return new(RoomChangeEvent) }},
	{Type: EventRoomRemoved, New: func() any { return new(RoomRemovedEvent) }},
	{Type: rooms.EventTokenExpiring, New: func() any { return new(rooms.TokenExpiringEvent) }},
}

// EventParts are the types the lobby events' schemas refer to by name
// (LobbyRemovedRoom) rather than by field type.
var EventParts = []any{RemovedRoom{}}

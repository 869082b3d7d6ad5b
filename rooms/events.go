package rooms

import "encoding/json"

// The events of a room's stream, as clients receive them in an SSE frame's
// data. These types are the contract: openapi.yaml's event schemas (and
// through them the SDKs' event types) are generated from them
// (internal/eventschema, `go generate`), the server's own events are
// encoded from them, and a contract test decodes every event the Lua
// scripts publish during the test suites strictly into them.
//
// Struct tags: `json` as usual (a field without omitempty is required);
// `schema` adds what Go cannot say: `ref=<Schema>` (an existing
// openapi.yaml schema), `nullable`, `type=<openapi type>` for a raw JSON
// field, `format=...`, and a description after `desc=` (last).

// EventHeader is what every room event starts with.
type EventHeader struct {
	// Type is the event's type, also the SSE frame's `event:` line.
	Type string `json:"type"`
	// RoomID is the room's id.
	RoomID string `json:"roomId"`
	// Version is the room's version after the event; the frame's id starts
	// with it.
	Version int64 `json:"version"`
	// TS is when the event happened, RFC 3339 UTC.
	TS string `json:"ts" schema:"format=date-time"`
}

// SnapshotEvent is a whole room: the first event of a fresh stream, and
// of a resume the log could not serve.
type SnapshotEvent struct {
	EventHeader
	// Room is the room as the REST API renders it (api.RoomJSON).
	Room         any   `json:"room" schema:"ref=Room,desc=The room as GET /v1/rooms/{id} returns it, players included."`
	State        State `json:"state" schema:"ref=State"`
	StateVersion int64 `json:"stateVersion"`
}

// StateEvent is a state patch.
type StateEvent struct {
	EventHeader
	By           int             `json:"by" schema:"desc=The playerId who patched (0: the server)."`
	Set          json.RawMessage `json:"set" schema:"ref=State,desc=The keys set, with their new values."`
	Del          []string        `json:"del" schema:"desc=The keys deleted."`
	StateVersion int64           `json:"stateVersion"`
}

// EventPlayer is a player as player_joined carries it.
type EventPlayer struct {
	PlayerID  int    `json:"playerId"`
	Name      string `json:"name"`
	JoinedAt  string `json:"joinedAt" schema:"format=date-time"`
	Connected bool   `json:"connected"`
}

// PlayerJoinedEvent: a player joined.
type PlayerJoinedEvent struct {
	EventHeader
	Player EventPlayer `json:"player"`
	// ReservedSeats is set when the player took a seat held for them.
	ReservedSeats *int `json:"reservedSeats,omitempty" schema:"desc=Set when the player took a seat held for them: the room's reserved seats left."`
}

// LeaveReason says why a player left.
type LeaveReason string

// The reasons of player_left.
const (
	LeftByChoice     LeaveReason = "left"
	LeftKicked       LeaveReason = "kicked"
	LeftDisconnected LeaveReason = "disconnected"
)

// Enum lists every LeaveReason.
func (LeaveReason) Enum() []string {
	return []string{string(LeftByChoice), string(LeftKicked), string(LeftDisconnected)}
}

// PlayerLeftEvent: a player left, was kicked (or banned: a ban is never
// shown) or was removed after the disconnect grace.
type PlayerLeftEvent struct {
	EventHeader
	PlayerID int         `json:"playerId"`
	Reason   LeaveReason `json:"reason"`
}

// PlayerConnectedEvent: a player's first stream opened.
type PlayerConnectedEvent struct {
	EventHeader
	PlayerID int `json:"playerId"`
}

// PlayerDisconnectedEvent: a player's last stream closed (debounced).
type PlayerDisconnectedEvent struct {
	EventHeader
	PlayerID int `json:"playerId"`
}

// RoomChanges holds the fields of a room that an update changed, each with
// its new value.
type RoomChanges struct {
	Name          *string         `json:"name,omitempty"`
	Status        *Status         `json:"status,omitempty" schema:"ref=Status"`
	Locked        *bool           `json:"locked,omitempty"`
	MaxPlayers    *int            `json:"maxPlayers,omitempty"`
	Attributes    json.RawMessage `json:"attributes,omitempty" schema:"ref=Attributes"`
	Visibility    *Visibility     `json:"visibility,omitempty" schema:"ref=Visibility"`
	InviteCode    json.RawMessage `json:"inviteCode,omitempty" schema:"type=string,nullable,desc=The new invite code when the room turned private (members only); null when it turned public."`
	OwnerPlayerID *int            `json:"ownerPlayerId,omitempty" schema:"desc=The new owner, after the owner left."`
}

// RoomUpdatedEvent: fields of the room changed.
type RoomUpdatedEvent struct {
	EventHeader
	Changes RoomChanges `json:"changes"`
}

// MessageEventBody is a message as the message event carries it.
type MessageEventBody struct {
	From int             `json:"from" schema:"desc=The sender's playerId (0: the server)."`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data" schema:"desc=Any JSON."`
	To   []int           `json:"to,omitempty" schema:"desc=Only these players (and the sender) get the message."`
	// MessageID names the send for its sender's Idempotency-Key
	// (MessageID): "" without one.
	MessageID string `json:"messageId,omitempty" schema:"pattern=^[0-9a-f]{32}$,desc=Present when the sender gave an Idempotency-Key: the same for every send with that key and sender, a hash of both (32 hex digits). A message retried after a failover of Redis that lost the first is sent again, as another event, with the same messageId: a client that already has that messageId (it received the lost one, before its snapshot with resync) drops it."`
}

// MessageEvent: a message sent to the room or to some of its players.
type MessageEvent struct {
	EventHeader
	Message MessageEventBody `json:"message"`
}

// CloseReason says why a room closed.
type CloseReason string

// The reasons of room_closed.
const (
	// ClosedByOwner: the owner (or the server) deleted the room.
	ClosedByOwner CloseReason = "closed"
	// ClosedEmpty: the last player left.
	ClosedEmpty CloseReason = "empty"
	// ClosedExpired: idle past the idle timeout, or older than the room
	// lifetime.
	ClosedExpired CloseReason = "expired"
	// ClosedFinished: the finished room's retention ended.
	ClosedFinished CloseReason = "finished"
	// ClosedGone: the room's data vanished from the store.
	ClosedGone CloseReason = "gone"
)

// Enum lists every CloseReason.
func (CloseReason) Enum() []string {
	return []string{string(ClosedByOwner), string(ClosedEmpty), string(ClosedExpired), string(ClosedFinished), string(ClosedGone)}
}

// RoomClosedEvent: the room closed; the stream ends after it.
type RoomClosedEvent struct {
	EventHeader
	Reason CloseReason `json:"reason"`
}

// SeatsReservedEvent: seats were reserved for named users (not named
// here: a player's userId is private to them), or their hold renewed.
type SeatsReservedEvent struct {
	EventHeader
	Seats         int    `json:"seats" schema:"desc=The users whose seats this reservation holds (new or renewed)."`
	ReservedSeats int    `json:"reservedSeats" schema:"desc=The room's reserved seats in all, after."`
	ExpiresAt     string `json:"expiresAt" schema:"format=date-time,desc=When these seats are released unless taken."`
}

// ReservationExpiredEvent: reserved seats were released, their users
// having not joined in time, or (the matchmaker) their ticket having gone
// back to the queue.
type ReservationExpiredEvent struct {
	EventHeader
	Seats         int `json:"seats" schema:"desc=The seats released."`
	ReservedSeats int `json:"reservedSeats" schema:"desc=The room's reserved seats left."`
}

// ResumedEvent follows a replay from Last-Event-ID: nothing was missed.
// Its frame has no id.
type ResumedEvent struct {
	EventHeader
}

// TokenExpiringEvent is the last event of a stream whose identity token
// expires soon; its frame has no id.
type TokenExpiringEvent struct {
	Type      string `json:"type"`
	ExpiresAt string `json:"expiresAt" schema:"format=date-time"`
}

// Event types of a room stream.
const (
	EventSnapshot           = "snapshot"
	EventState              = "state"
	EventPlayerJoined       = "player_joined"
	EventPlayerLeft         = "player_left"
	EventPlayerConnected    = "player_connected"
	EventPlayerDisconnected = "player_disconnected"
	EventRoomUpdated        = "room_updated"
	EventMessage            = "message"
	EventRoomClosed         = "room_closed"
	EventSeatsReserved      = "seats_reserved"
	EventReservationExpired = "reservation_expired"
	EventResumed            = "resumed"
	EventTokenExpiring      = "token_expiring"
)

// EventKind names one event type and the Go type of its data.
type EventKind struct {
	Type string
	// New returns a pointer to a zero value of the event's type.
	New func() any
}

// RoomEvents lists every event of a room stream, in the order of the
// contract's table.
var RoomEvents = []EventKind{
	{EventSnapshot, func() any { return new(SnapshotEvent) }},
	{EventState, func() any { return new(StateEvent) }},
	{EventPlayerJoined, func() any { return new(PlayerJoinedEvent) }},
	{EventPlayerLeft, func() any { return new(PlayerLeftEvent) }},
	{EventPlayerConnected, func() any { return new(PlayerConnectedEvent) }},
	{EventPlayerDisconnected, func() any { return new(PlayerDisconnectedEvent) }},
	{EventRoomUpdated, func() any { return new(RoomUpdatedEvent) }},
	{EventMessage, func() any { return new(MessageEvent) }},
	{EventRoomClosed, func() any { return new(RoomClosedEvent) }},
	{EventSeatsReserved, func() any { return new(SeatsReservedEvent) }},
	{EventReservationExpired, func() any { return new(ReservationExpiredEvent) }},
	{EventResumed, func() any { return new(ResumedEvent) }},
	{EventTokenExpiring, func() any { return new(TokenExpiringEvent) }},
}

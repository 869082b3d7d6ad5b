package realsync

import (
	"encoding/json"
	"fmt"
	"time"
)

// Event is one item of an event stream: an event the server sent (room
// streams: *Snapshot, *StateChanged, *PlayerJoined, *PlayerLeft,
// *PlayerConnected, *PlayerDisconnected, *RoomUpdated, *MessageReceived,
// *RoomClosed, *SeatsReserved, *ReservationExpired, *TokenExpiring; lobby streams: *LobbyRooms, *LobbyChange;
// *UnknownEvent for a type this package does not know), or a notice of
// the stream's own life (*Connecting, *Opened, *Reconnecting, *Resumed,
// *Closed). Switch on the concrete type.
type Event interface {
	// EventType is the event's type ("snapshot", "player_joined", ...,
	// "connecting", "closed").
	EventType() string
}

// Header holds what every server event carries.
type Header struct {
	Type    string    `json:"type"`
	RoomID  string    `json:"roomId"`
	Version int64     `json:"version"`
	Ts      time.Time `json:"ts"`
	// ID is the event's SSE id ("<version>-<tag>"; "" for events without
	// one, as token_expiring and lobby events): the stream resumes after
	// it.
	ID string `json:"-"`
	// Raw is the event's JSON as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// EventType returns h.Type.
func (h *Header) EventType() string { return h.Type }

func (h *Header) header() *Header { return h }

// Snapshot is the whole room: the first event of a stream, and the one
// that replaces a resume the server could not replay (the events missed
// are no longer in its log, or the history changed in a failover).
type Snapshot struct {
	Header
	Room         Room  `json:"room"`
	State        State `json:"state"`
	StateVersion int64 `json:"stateVersion"`
}

// StateChanged is a state patch: Set keys took these values, Del keys
// were deleted. By is the writer's playerId, 0 for the server (an API
// key).
type StateChanged struct {
	Header
	By           int      `json:"by"`
	Set          State    `json:"set"`
	Del          []string `json:"del"`
	StateVersion int64    `json:"stateVersion"`
}

// PlayerJoined: a player joined the room. ReservedSeats is set when the
// player took a seat held for them: the room's held seats left.
type PlayerJoined struct {
	Header
	Player        Player `json:"player"`
	ReservedSeats *int   `json:"reservedSeats,omitempty"`
}

// SeatsReserved: Seats seats were held for named users (never named
// here) until ExpiresAt, or their hold renewed; ReservedSeats is the
// room's held seats in all.
type SeatsReserved struct {
	Header
	Seats         int       `json:"seats"`
	ReservedSeats int       `json:"reservedSeats"`
	ExpiresAt     time.Time `json:"expiresAt"`
}

// ReservationExpired: Seats held seats were released, their users having
// not joined in time; ReservedSeats are left.
type ReservationExpired struct {
	Header
	Seats         int `json:"seats"`
	ReservedSeats int `json:"reservedSeats"`
}

// PlayerLeft: a player left; Reason is "left", "kicked" or
// "disconnected". Own player: the stream ends after it.
type PlayerLeft struct {
	Header
	PlayerID int    `json:"playerId"`
	Reason   string `json:"reason"`
}

// PlayerConnected: a player opened a stream of the room.
type PlayerConnected struct {
	Header
	PlayerID int `json:"playerId"`
}

// PlayerDisconnected: a player's last stream of the room closed.
type PlayerDisconnected struct {
	Header
	PlayerID int `json:"playerId"`
}

// RoomUpdated carries the room fields that changed, with their new values
// ("status": "playing", "ownerPlayerId": 2).
type RoomUpdated struct {
	Header
	Changes map[string]json.RawMessage `json:"changes"`
}

// MessageReceived is a message sent to the room (From 0: the server).
type MessageReceived struct {
	Header
	Message struct {
		From int             `json:"from"`
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
		To   []int           `json:"to,omitempty"`
		// MessageID: of a message sent with an Idempotency-Key, the same
		// for every send of that key and sender ("" without one): a
		// message sent again after a failover of Redis that lost the
		// first comes as another event with the same MessageID; drop one
		// whose MessageID you have already.
		MessageID string `json:"messageId,omitempty"`
	} `json:"message"`
}

// RoomClosed: the room is gone; Reason is "closed", "empty", "expired",
// "finished" or "gone". The stream ends after it.
type RoomClosed struct {
	Header
	Reason string `json:"reason"`
}

// TokenExpiring: the stream ends because the identity token it was opened
// with expires soon (at ExpiresAt, by the server's clock). The reader asks
// the token source for a new token as if the server had refused the
// current one (Guest's refreshes it), reconnects at once with it and
// resumes: nothing is missed. While the token has 5 s left, a source that
// still gives it (none that expires after ExpiresAt) is asked again at the
// next token_expiring, the stream reconnecting with it at once (the server
// keeps it for half of what is left), and a source failing on the network
// (or with a 5xx, 408 or 429) is asked again after a backoff. A token that
// cannot be renewed (WithToken, a source that fails otherwise, or one that
// still gives no later token with under 5 s left) ends the stream with a
// 401 UNAUTHENTICATED *Error instead.
type TokenExpiring struct {
	Header
	ExpiresAt time.Time `json:"expiresAt"`
}

// LobbyRooms is the lobby's list of joinable rooms: the first event of a
// lobby stream and of every reconnection (replace the list).
type LobbyRooms struct {
	Header
	Rooms []Room `json:"rooms"`
}

// LobbyChange is room_added, room_updated (the room, still joinable) or
// room_removed (the room while it is public, else only its Id and
// Version). Keep per room the highest Version seen.
type LobbyChange struct {
	Header
	Room Room `json:"room"`
}

// UnknownEvent is an event of a type this package does not know (a newer
// server), or one that did not decode (Err says why); Raw holds it.
type UnknownEvent struct {
	Header
	Err error `json:"-"`
}

// header lets the decoder reach the Header of every server event.
type headed interface {
	Event
	header() *Header
}

// roomEventTypes makes the typed value of each room event type.
var roomEventTypes = map[string]func() headed{
	"snapshot":            func() headed { return new(Snapshot) },
	"state":               func() headed { return new(StateChanged) },
	"player_joined":       func() headed { return new(PlayerJoined) },
	"player_left":         func() headed { return new(PlayerLeft) },
	"player_connected":    func() headed { return new(PlayerConnected) },
	"player_disconnected": func() headed { return new(PlayerDisconnected) },
	"room_updated":        func() headed { return new(RoomUpdated) },
	"message":             func() headed { return new(MessageReceived) },
	"room_closed":         func() headed { return new(RoomClosed) },
	"seats_reserved":      func() headed { return new(SeatsReserved) },
	"reservation_expired": func() headed { return new(ReservationExpired) },
	"token_expiring":      func() headed { return new(TokenExpiring) },
}

// lobbyEventTypes makes the typed value of each lobby event type.
var lobbyEventTypes = map[string]func() headed{
	"rooms":          func() headed { return new(LobbyRooms) },
	"room_added":     func() headed { return new(LobbyChange) },
	"room_updated":   func() headed { return new(LobbyChange) },
	"room_removed":   func() headed { return new(LobbyChange) },
	"token_expiring": func() headed { return new(TokenExpiring) },
}

// decodeEvent decodes frame f with the types of one kind of stream, by the
// JSON's "type" (the SSE event name when the JSON has none).
func decodeEvent(types map[string]func() headed, f frame) (Event, error) {
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(f.data, &probe); err != nil {
		return nil, fmt.Errorf("realsync: event %q: %w", f.event, err)
	}
	if probe.Type == "" {
		probe.Type = f.event
	}
	mk, ok := types[probe.Type]
	if !ok {
		mk = func() headed { return new(UnknownEvent) }
	}
	ev := mk()
	if err := json.Unmarshal(f.data, ev); err != nil {
		return nil, fmt.Errorf("realsync: event %q: %w", probe.Type, err)
	}
	h := ev.header()
	h.Type, h.ID, h.Raw = probe.Type, f.id, json.RawMessage(f.data)
	return ev, nil
}

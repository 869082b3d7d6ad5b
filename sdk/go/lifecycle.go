package realsync

import "time"

// Connecting: a connection attempt starts. Attempt counts from 1 since
// the stream was last open (every connection the server accepted starts
// it over; the backoff's delays start over only after Backoff.Reset).
type Connecting struct{ Attempt int }

// Opened: the server accepted the connection; events follow.
type Opened struct{}

// Reconnecting: the connection failed or dropped for a transient reason
// (Err: a network error, a 5xx, 408 or 429 *Error, the end of the
// response, a *TokenError of a network failure); the stream reconnects
// after Delay (Backoff, at least a Retry-After). Attempt is the coming
// Connecting's.
type Reconnecting struct {
	Attempt int
	Delay   time.Duration
	Err     error
}

// Resumed: a connection after one that brought events has caught up.
// Snapshot false: the server replayed what was missed (zero or more
// events, read before Resumed) and said so with its resumed event, at
// once even in a quiet room; LastEventID and the room's Version do not
// change with it. Snapshot true: the server had to send a snapshot (the
// events missed were no longer in its log, or the history changed),
// which follows Resumed; a lobby stream always starts over with a rooms
// list.
type Resumed struct{ Snapshot bool }

// The reasons a stream ends (Closed.Reason).
const (
	// ClosedByCaller: Close was called, or the stream's context ended.
	ClosedByCaller = "closed"
	// ClosedRoomClosed: the room closed (a RoomClosed event came first),
	// or a reconnection of a stream that was open was refused 404
	// ROOM_NOT_FOUND where that can only mean the room is gone (a public
	// room, which answers non-members 403; an API key's stream).
	ClosedRoomClosed = "room_closed"
	// ClosedLeft: the stream's own player left or was kicked, or a
	// player's reconnection of a stream that was open was refused 403
	// NOT_A_MEMBER or (a private room) 404 ROOM_NOT_FOUND: removed while
	// away (REALSYNC_DISCONNECT_GRACE ran out, kicked), or gone.
	ClosedLeft = "left"
	// ClosedError: a permanent error (Err): 401 (after the token source
	// was asked for a new token, or a token_expiring whose token could
	// not be renewed), 403, 404, 410, another 4xx (on the first
	// connection, or other than the above), a *TokenError that is no
	// network failure, or an answer that is no event stream.
	ClosedError = "error"
)

// Closed is the last item of a stream. Err is the *Error (or other error)
// that ended it when Reason is ClosedError; with ClosedLeft or
// ClosedRoomClosed it is the refusal of a reconnection that told it (403
// NOT_A_MEMBER, 404 ROOM_NOT_FOUND: the player was removed while away, or
// the room is gone), if any, and Next pairs no error with it; else nil.
type Closed struct {
	Reason string
	Err    error
}

func (*Connecting) EventType() string   { return "connecting" }
func (*Opened) EventType() string       { return "open" }
func (*Reconnecting) EventType() string { return "reconnecting" }
func (*Resumed) EventType() string      { return "resumed" }
func (*Closed) EventType() string       { return "closed" }

package players

import "github.com/realsync/realsync/rooms"

// The events of a personal stream (GET /v1/me/events), as clients receive
// them in an SSE frame's data. As for rooms/events.go, these types are the
// contract: openapi.yaml's UserEvent union is generated from them.
//
// Two kinds of event: logged ones (UserEventHeader: session_replaced, and
// later invite, message, kicked, banned, room_closed, match_found) are
// appended to the user's own log (a capped, expiring Redis stream in the
// user's slot) and published on the user's channel by the same script;
// their SSE id "<seq>-<tag>" lets a client resume with Last-Event-ID.
// A new logged event type is one more struct here, one more EventKind in
// UserEvents and the script (or store call) that appends it. Presence
// events are not logged (a change would be one write per follower): they
// carry no id, and every (re)opened stream first gets the current status
// of every followed user.

// Event types of the personal stream.
const (
	EventSnapshot        = "snapshot"
	EventPresence        = "presence"
	EventSessionReplaced = "session_replaced"
	EventResumed         = "resumed"
	EventMatchFound      = "match_found"
)

// UserEventHeader starts every logged event.
type UserEventHeader struct {
	// Type is the event's type, also the SSE frame's `event:` line.
	Type string `json:"type"`
	// UserID is the user whose log holds the event.
	UserID string `json:"userId"`
	// Seq is the event's place in the user's log; the frame's id starts
	// with it.
	Seq int64 `json:"seq"`
	// TS is when the event happened, RFC 3339 UTC.
	TS string `json:"ts" schema:"format=date-time"`
}

// SnapshotEvent opens a fresh stream, and a resume whose Last-Event-ID
// the log could no longer serve (trimmed, expired, another history):
// logged events may have been missed. Its id is the log's position.
type SnapshotEvent struct {
	UserEventHeader
	// Platform and Session are this stream's session.
	Platform string `json:"platform"`
	Session  string `json:"session" schema:"desc=This stream's session id (session_replaced names the session it ends)."`
	// Resync: the stream resumed from a Last-Event-ID the log could not
	// serve.
	Resync bool `json:"resync"`
}

// ResumedEvent follows the replay of a resume that missed nothing; it
// carries no id.
type ResumedEvent struct {
	UserEventHeader
}

// SessionReplacedEvent ends the session it names: a new session of the
// same user and platform replaced it (REALSYNC_SESSION_POLICY replace).
// Only the replaced session's stream receives it; it is its last event.
type SessionReplacedEvent struct {
	UserEventHeader
	Platform string `json:"platform"`
	Session  string `json:"session" schema:"desc=The session replaced (the snapshot's session of the stream that ends)."`
	// By is the session that replaced it.
	By string `json:"by"`
}

// PresenceEvent is a followed user's status: the current one first (when
// the stream opens, and when the user is followed), then each change. It
// carries no id.
type PresenceEvent struct {
	Type      string   `json:"type"`
	UserID    string   `json:"userId"`
	Online    bool     `json:"online"`
	Platforms []string `json:"platforms" schema:"desc=The platforms of the user's open sessions, in the order pc, console, mobile, web."`
	Version   int64    `json:"version" schema:"desc=Orders the user's statuses: a larger one is later."`
	TS        string   `json:"ts" schema:"format=date-time"`
}

// MatchFoundEvent tells each user of a match that it was made
// (matchmaking tickets): the ticket, the match, its room (seats reserved
// for the match's users) and the user's team. Logged; delivered at least
// once (a matcher that completes a dead instance's match sends it again:
// matchId tells a repeat).
type MatchFoundEvent struct {
	UserEventHeader
	TicketID string `json:"ticketId"`
	MatchID  string `json:"matchId"`
	RoomID   string `json:"roomId" schema:"desc=The match's room: a private room with a seat reserved for the user (its owner for the match's first ticket's leader). Join it by id."`
	Mode     string `json:"mode"`
	Region   string `json:"region"`
	Team     int    `json:"team" schema:"desc=The user's team, 0-based."`
}

// UserEvents lists every event of a personal stream.
var UserEvents = []rooms.EventKind{
	{Type: EventSnapshot, New: func() any { return new(SnapshotEvent) }},
	{Type: EventPresence, New: func() any { return new(PresenceEvent) }},
	{Type: EventSessionReplaced, New: func() any { return new(SessionReplacedEvent) }},
	{Type: EventResumed, New: func() any { return new(ResumedEvent) }},
	{Type: EventMatchFound, New: func() any { return new(MatchFoundEvent) }},
	{Type: rooms.EventTokenExpiring, New: func() any { return new(rooms.TokenExpiringEvent) }},
}

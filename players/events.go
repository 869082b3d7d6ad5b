package players

import (
	"encoding/json"

	"github.com/realsync/realsync/rooms"
)

// The events of a personal stream (GET /v1/me/events), as clients receive
// them in an SSE frame's data. As for rooms/events.go, these types are the
// contract: openapi.yaml's UserEvent union is generated from them.
//
// Two kinds of event: logged ones (UserEventHeader: invite, message,
// kicked, banned, room_closed, match_found) are appended to the user's own
// log (a capped, expiring Redis stream in the user's slot) and published
// on the user's channel by the same script; their SSE id "<seq>-<tag>"
// lets a client resume with Last-Event-ID. A new logged event type is one
// more struct here, one more EventKind in UserEvents and the script (or
// store call) that appends it. Presence events are not logged (a change
// would be one write per follower): they carry no id, and every
// (re)opened stream first gets the current status of every followed user.
// session_replaced is not logged either (a client replacing its session
// over and over would push the other platforms' undelivered events out of
// the capped log): it is published to the replaced session, which ends
// with it, and kept a while as the replaced session's tombstone for its
// instance to read when the live message was lost; it carries no id.

// Event types of the personal stream.
const (
	EventSnapshot        = "snapshot"
	EventPresence        = "presence"
	EventSessionReplaced = "session_replaced"
	EventResumed         = "resumed"
	EventMatchFound      = "match_found"
	EventInvite          = "invite"
	EventMessage         = "message"
	EventKicked          = "kicked"
	EventBanned          = "banned"
	EventRoomClosed      = "room_closed"
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
// logged events may have been missed. Its id is the position the stream
// starts from: the Pending events of the platform's offline inbox follow
// it, then live events.
type SnapshotEvent struct {
	UserEventHeader
	// Platform and Session are this stream's session.
	Platform string `json:"platform"`
	Session  string `json:"session" schema:"desc=This stream's session id (session_replaced names the session it ends)."`
	// Resync: logged events were missed: the stream resumed from a
	// Last-Event-ID the log could not serve, or its platform's offline
	// inbox lost events before they were delivered (the personal log's
	// cap, REALSYNC_OFFLINE_MAX, dropped them).
	Resync bool `json:"resync" schema:"desc=Logged events were missed: the stream resumed from a Last-Event-ID the log could not serve (trimmed, expired, another history), or this platform's offline inbox lost events before they were delivered (the personal log's cap, REALSYNC_OFFLINE_MAX, dropped them, counted by realsync_offline_dropped_total; or they expired, REALSYNC_OFFLINE_TTL, counted by realsync_offline_expired_total). A client refreshes what it derives from logged events (its tickets, invites)."`
	// Pending counts the logged events that follow at once: those stored
	// while no session of this platform could take them (the offline
	// inbox), in order.
	Pending int `json:"pending" schema:"desc=The logged events that follow at once: what was sent while no session of this platform took it (its offline inbox), in order. Only the other sessions' session_replaced among them are not written."`
}

// ResumedEvent follows the replay of a resume that missed nothing; it
// carries no id.
type ResumedEvent struct {
	UserEventHeader
}

// SessionReplacedEvent ends the session it names: a new session of the
// same user and platform replaced it (REALSYNC_SESSION_POLICY replace).
// Only the replaced session's stream receives it; it is its last event.
// Not logged: it has no id, and its seq is the log's position when the
// session was replaced (as resumed's, it moves no resume position).
type SessionReplacedEvent struct {
	Type   string `json:"type"`
	UserID string `json:"userId"`
	// Seq is the user's log position at the replacement: the replaced
	// session was written the logged events up to it, the new one gets
	// those after it.
	Seq      int64  `json:"seq" schema:"desc=The user's log position when the session was replaced: the replaced session was written the logged events up to it, the new session gets those after it. Not an id: session_replaced is not logged and has no id, and it moves no resume position (an older release, during a rolling upgrade, logged it with a seq of its own)."`
	TS       string `json:"ts" schema:"format=date-time"`
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
// for the match's users) and the user's team. Logged once per user and
// match: a matcher that completes a match another instance died or
// stalled in does not send it again to a user told already (the user's
// log remembers the match for rooms.MessageKeyWindow, among its last
// rooms.MessageKeysKept keys; past them a repeat is sent: matchId tells
// it).
type MatchFoundEvent struct {
	UserEventHeader
	TicketID string `json:"ticketId"`
	MatchID  string `json:"matchId"`
	RoomID   string `json:"roomId" schema:"desc=The match's room: a private room with a seat reserved for the user until seatHeldUntil (its owner, in it already, for the match's first ticket's leader). Join it by id. A match_found read after seatHeldUntil (from the offline inbox) may name a room the user can no longer join (404 ROOM_NOT_FOUND, the room being private), and the ticket stays matched: queue again."`
	Mode     string `json:"mode"`
	Region   string `json:"region"`
	Team     int    `json:"team" schema:"desc=The user's team, 0-based."`
	// SeatHeldUntil is players.Timestamp of matchmaking.MatchFound's.
	SeatHeldUntil string `json:"seatHeldUntil,omitempty" schema:"format=date-time,desc=Until when the user's seat in the room is held (the mode's seatHold, 15 s by default, counted from just before the match's room was made, by the clock of the instance that made it, as ts; the hold itself ends by Redis' clock, which hosts kept in sync by NTP agree with to within milliseconds): join before it. Past it the seat may be given away, and a private room answers 404 ROOM_NOT_FOUND to a user without one. A join before it can still be refused when the room changed meanwhile (its owner banned the user, started or closed it). Absent from an event logged by a release before 2026-12-07."`
}

// Sender is who sent a message or an invite: a player (UserID and the
// name of their token) or the game's server (an API key: Server true, no
// UserID).
type Sender struct {
	UserID string `json:"userId,omitempty" schema:"desc=The sending player's user id, so the recipient can answer: sending a message or an invite discloses it to the recipient (in rooms, players still see only playerIds). Absent when the server sent it."`
	Name   string `json:"name,omitempty" schema:"desc=The sending player's name."`
	Server bool   `json:"server,omitempty" schema:"desc=Sent by the game's server (an API key)."`
}

// DirectMessageEvent is a message sent to the user (POST
// /v1/users/{userId}/messages). Logged, so it waits in the offline inbox
// of each platform without a session.
type DirectMessageEvent struct {
	UserEventHeader
	From    Sender            `json:"from"`
	Message DirectMessageBody `json:"message"`
	// MessageID names the send for its sender's Idempotency-Key
	// (MessageID): "" without one.
	MessageID string `json:"messageId,omitempty" schema:"pattern=^[0-9a-f]{32}$,desc=Present when the sender gave an Idempotency-Key: the same for every send with that key and sender, a hash of both (32 hex digits). A send retried after a failover of Redis that lost the first (its id then no longer resumes) may be delivered again as a new event with the same messageId: a client that already has that messageId drops it."`
}

// DirectMessageBody is a direct message as sent.
type DirectMessageBody struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data" schema:"desc=Any JSON."`
}

// InviteEvent invites the user to a room (POST
// /v1/rooms/{roomId}/invites), with what the user needs to join it.
// Logged.
type InviteEvent struct {
	UserEventHeader
	From   Sender `json:"from"`
	RoomID string `json:"roomId" schema:"desc=Join it by id (POST /v1/rooms/{roomId}/join), or by the invite code of a private room."`
	Name   string `json:"name" schema:"desc=The room's name."`
	Mode   string `json:"mode"`
	Region string `json:"region"`
	// InviteCode is the private room's code (POST
	// /v1/rooms/join-by-code); absent for a public room.
	InviteCode string `json:"inviteCode,omitempty" schema:"desc=A private room's invite code (POST /v1/rooms/join-by-code); absent for a public room."`
	// MessageID names the send for its sender's Idempotency-Key
	// (MessageID): "" without one.
	MessageID string `json:"messageId,omitempty" schema:"pattern=^[0-9a-f]{32}$,desc=Present when the sender gave an Idempotency-Key: the same for every send with that key and sender, a hash of both (32 hex digits). A send retried after a failover of Redis that lost the first (its id then no longer resumes) may be delivered again as a new event with the same messageId: a client that already has that messageId drops it."`
}

// KickedEvent tells the user they were removed from a room (banned: they
// may not join it again). Logged, sent to the user's personal stream
// whatever the room stream did.
type KickedEvent struct {
	UserEventHeader
	RoomID string `json:"roomId"`
}

// BannedEvent is KickedEvent for a ban.
type BannedEvent = KickedEvent

// RoomClosedEvent tells a member a room they were in closed: its owner or
// the server deleted it (closed), or the janitor closed it (expired,
// finished). Logged.
type RoomClosedEvent struct {
	UserEventHeader
	RoomID string            `json:"roomId"`
	Reason rooms.CloseReason `json:"reason"`
}

// UserEvents lists every event of a personal stream.
var UserEvents = []rooms.EventKind{
	{Type: EventSnapshot, New: func() any { return new(SnapshotEvent) }},
	{Type: EventPresence, New: func() any { return new(PresenceEvent) }},
	{Type: EventSessionReplaced, New: func() any { return new(SessionReplacedEvent) }},
	{Type: EventResumed, New: func() any { return new(ResumedEvent) }},
	{Type: EventMatchFound, New: func() any { return new(MatchFoundEvent) }},
	{Type: EventInvite, New: func() any { return new(InviteEvent) }},
	{Type: EventMessage, New: func() any { return new(DirectMessageEvent) }},
	{Type: EventKicked, New: func() any { return new(KickedEvent) }},
	{Type: EventBanned, New: func() any { return new(BannedEvent) }},
	{Type: EventRoomClosed, New: func() any { return new(RoomClosedEvent) }},
	{Type: rooms.EventTokenExpiring, New: func() any { return new(rooms.TokenExpiringEvent) }},
}

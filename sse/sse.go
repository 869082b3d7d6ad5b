// Package sse streams room events to clients over Server-Sent Events.
//
// One Hub per instance fans the events of the rooms its clients watch out
// to their streams. It subscribes a room's channel when the room's first
// local stream opens and unsubscribes when the last closes. Each stream is
// set up subscribe first, then read (replay or snapshot), then live, and
// drops what it already sent, so within one history a client sees every
// event once and in order. A version jump on the live feed is filled from
// the room log before anything later goes out. The package knows nothing of
// Redis: the store implements Source and Feed.
package sse

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/realsync/realsync/rooms"
)

// Event is one room event as logged and published: its version, the tag of
// the history it belongs to, and its one-line JSON.
type Event struct {
	Version int64
	Tag     string
	Data    []byte

	meta  meta
	frame []byte // the SSE frame, encoded once for every stream
}

// meta is what the hub reads from an event's JSON, once per instance.
type meta struct {
	Type     string `json:"type"`
	PlayerID int    `json:"playerId"`
	Message  *struct {
		From int   `json:"from"`
		To   []int `json:"to"`
	} `json:"message"`
}

// parse reads the event's type and addressing and encodes its frame.
func (e *Event) parse() {
	if e.frame == nil {
		json.Unmarshal(e.Data, &e.meta)
		e.frame = appendFrame(nil, e.ID(), e.meta.Type, e.Data)
	}
}

// visibleTo reports whether player pid may see the event: every event but
// a message to some players only (rooms.Visible).
func (e *Event) visibleTo(pid int) bool {
	m := e.meta.Message
	return e.meta.Type != "message" || m == nil || rooms.Visible(m.From, m.To, pid)
}

// ends says why a stream of player pid ends after this event, "" when it
// goes on: the room closed (EndRoomClosed), or the player left, was kicked
// or removed (EndLeft).
func (e *Event) ends(pid int) string {
	switch {
	case e.meta.Type == "room_closed":
		return EndRoomClosed
	case e.meta.Type == "player_left" && e.meta.PlayerID == pid:
		return EndLeft
	}
	return ""
}

// ID is the event's SSE id, "<version>-<tag>".
func (e *Event) ID() string {
	return formatID(e.Version, e.Tag)
}

func formatID(v int64, tag string) string {
	if tag == "" {
		return strconv.FormatInt(v, 10)
	}
	return strconv.FormatInt(v, 10) + "-" + tag
}

// Cursor is where a resuming client stands: the Last-Event-ID it sent.
type Cursor struct {
	Set     bool // false: no Last-Event-ID, start with a snapshot
	Version int64
	Tag     string // "" when the id carried no tag
}

// ParseCursor reads a Last-Event-ID ("<version>" or "<version>-<tag>").
// An empty id means none; an id that is not one of ours also means none, so
// the client starts over with a snapshot rather than an error. Ours means
// canonical: the version a decimal without sign or leading zero (at most
// 19 digits), the tag 1..16 characters of [A-Za-z0-9].
func ParseCursor(id string) Cursor {
	v, tag, hasTag := strings.Cut(id, "-")
	if v == "" || len(v) > 19 || (v[0] == '0' && len(v) > 1) || (hasTag && !validTag(tag)) {
		return Cursor{}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || v[0] == '+' {
		return Cursor{}
	}
	return Cursor{Set: true, Version: n, Tag: tag}
}

func validTag(tag string) bool {
	if tag == "" || len(tag) > 16 {
		return false
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// String is the Last-Event-ID c was read from ("" when not set).
func (c Cursor) String() string {
	if !c.Set {
		return ""
	}
	return formatID(c.Version, c.Tag)
}

// Verifiable reports whether a resume from c can be checked against the
// room's log: the server tags every event's id, and only the tag tells a
// version of this history from the same number in another (a room
// restored from a backup, a client that made an id up). A bare version
// is not verifiable: the stream starts with a snapshot.
func (c Cursor) Verifiable() bool { return c.Set && c.Tag != "" }

// Lease is one open stream's presence: while its instance renews it, the
// player shows as connected, and the stream counts among its user's open
// streams. A lobby stream's lease (Room "") has no presence, only the
// latter. A Server lease is the server's (an API key with rooms:read)
// watching the room or the lobby: no membership, no presence, nothing
// recorded, never renewed; its PlayerID is 0.
type Lease struct {
	Room     string // "" for a lobby stream
	UserID   string
	PlayerID int
	Stream   string // unique per stream across instances
	Server   bool
	// Platform is set for a personal stream's session lease (Room "",
	// ServeMe): renewed through UserSource.RenewSessions.
	Platform string
}

// Read says what OpenStream reads after recording the lease.
type Read int

// ReadNone only records the lease; ReadFrom reads the events after the
// cursor, or a snapshot when the log cannot serve them.
const (
	ReadNone Read = iota
	ReadFrom
)

// Opening is what a new stream sends first: the events after its cursor, or
// a snapshot. Version is the room version the read saw.
type Opening struct {
	PlayerID int
	Version  int64
	Replay   []Event
	Snapshot *Snapshot
}

// Snapshot is a room as of Version, tagged with the history it belongs to.
type Snapshot struct {
	Version int64
	Tag     string
	Room    rooms.Room
	State   rooms.State
}

// Source reads and writes what streams need from the room store. Errors are
// the rooms package's sentinels (ErrRoomNotFound, ErrNotMember,
// ErrStreamLimit, ErrUnavailable).
type Source interface {
	// OpenStream records the lease among l.UserID's open streams (not a
	// Server lease), refusing it with ErrStreamLimit (the room untouched)
	// when the user holds the most allowed; then it checks that l.UserID is
	// a member of l.Room, records the lease (player_connected when it is the
	// player's first stream; neither for a Server lease; the user's lease
	// dropped again when this fails) and, with
	// ReadFrom, reads the events after c, or a snapshot when there is no
	// cursor, the log no longer reaches back to it, it is more than limit
	// behind, or it belongs to another history. Returns the playerId.
	OpenStream(ctx context.Context, l Lease, read Read, c Cursor, limit int) (Opening, error)
	// CloseStream drops the lease; when it was the player's last stream,
	// player_disconnected follows and the removal grace starts.
	CloseStream(ctx context.Context, l Lease) error
	// OpenLobby records lobby stream l (Room "") among l.UserID's open
	// streams; ErrStreamLimit when the user holds the most allowed.
	// Recording a lease held already renews it.
	OpenLobby(ctx context.Context, l Lease) error
	// CloseLobby drops lobby stream l's lease.
	CloseLobby(ctx context.Context, l Lease) error
	// RenewStreams extends the leases (of room and lobby streams) and
	// returns those that were no longer held.
	RenewStreams(ctx context.Context, ls []Lease) (lost []Lease, err error)
	// Log returns the room's logged events with versions from..to, in
	// order (to < 0: to the end); fewer when the log no longer holds them.
	Log(ctx context.Context, room string, from, to int64) ([]Event, error)
	// Versions returns the current version of each room (0: gone).
	Versions(ctx context.Context, rooms []string) ([]int64, error)
}

// Feed is the instance's live subscription to room channels.
type Feed interface {
	// Subscribe subscribes the room's channel and returns once the
	// subscription is confirmed, so every event published afterwards is
	// delivered.
	Subscribe(ctx context.Context, room string) error
	// Unsubscribe ends the room's subscription.
	Unsubscribe(room string)
	// SubscribeLobby subscribes every shard's lobby channel and returns
	// once Redis confirmed them all; UnsubscribeLobby ends them.
	SubscribeLobby(ctx context.Context) error
	UnsubscribeLobby()
	// Close ends every subscription.
	Close() error
}

// Sink receives what a Feed delivers. Its methods must not block.
type Sink interface {
	// Deliver hands over an event published on the room's channel.
	Deliver(room string, e Event)
	// Resubscribed says the room's subscription (the lobby's when room is
	// "") was re-established after a reconnect: events may have been lost
	// meanwhile.
	Resubscribed(room string)
	// Lobby hands over a lobby notice.
	Lobby(n LobbyNotice)
}

// SilenceSink, when a Sink implements it too (the Hub does), is told of a
// feed connection that went silent (a probe published on it did not come
// back: a hung Redis node, a failover it did not follow, a partition) and
// was reopened. Its channels' Resubscribed follow, as after any reconnect.
type SilenceSink interface {
	// FeedSilent says the connection of shard, holding channels channels,
	// was found silent and reopened.
	FeedSilent(shard, channels int)
}

// LobbyNotice says a joinable room (public, waiting, unlocked, not full)
// was added (became joinable), updated (stayed joinable) or removed
// (stopped being joinable, or closed).
type LobbyNotice struct {
	Kind    string // added, updated, removed
	Room    string
	Version int64
	Mode    string
	Region  string
}

// LobbySource reads what lobby streams need.
type LobbySource interface {
	// Joinable returns up to limit joinable public rooms of mode and region
	// ("" for any) in fill order: fullest first, then oldest.
	Joinable(ctx context.Context, mode, region string, limit int) ([]rooms.Room, error)
	// Rooms reads rooms by id, without players; nil for a room that is gone.
	Rooms(ctx context.Context, ids []string) ([]*rooms.Room, error)
}

package sse

import (
	"context"
	"encoding/json"

	"github.com/realsync/realsync/players"
)

// KindMe is the personal stream's kind, as Metrics receives it.
const KindMe = "me"

// EndReplaced is why a personal stream ended after session_replaced: a new
// session of its user on its platform replaced it.
const EndReplaced = "replaced"

// Session is one personal stream's session: its user, its platform and
// its id (the stream's name, unique across instances).
type Session struct {
	UserID   string
	Platform string
	ID       string
}

// UserEvent is one logged event of a user's personal stream as logged and
// published: its place in the user's log, the tag of its write (each
// write has its own, as a room's events: after a failover that lost
// events, the new history's event of the same Seq has another) and its
// one-line JSON. A control message (Control set) is no event: the
// user's following changed. A notice (Notice set) is an event that is not
// logged, session_replaced: Seq is the log's position when it was
// published (the events up to it were logged before it), and it has no
// Tag. Every session_replaced, a notice or one an older release logged,
// is written without an id: it does not move the client's resume
// position (the stream ends after it, and its client does not resume).
type UserEvent struct {
	Seq     int64
	Tag     string
	Data    []byte
	Control bool
	Notice  bool

	meta struct {
		Type    string `json:"type"`
		Session string `json:"session"`
	}
	frame []byte
}

// parse reads the event's type and session and encodes its frame once:
// with the id "<seq>-<tag>", but for session_replaced (none).
func (e *UserEvent) parse() {
	if e.frame == nil {
		json.Unmarshal(e.Data, &e.meta)
		id := formatID(e.Seq, e.Tag)
		if e.Notice || e.meta.Type == players.EventSessionReplaced {
			id = ""
		}
		e.frame = appendFrame(nil, id, e.meta.Type, e.Data)
	}
}

// UserOpening is what a new personal stream starts from: the log's
// position (Seq) after the session was recorded, and the events after
// From (Replay, seqs From+1 on but for those lost), Tag being From's (the
// tag of its event's write, or the history's for a position without an
// event: 0, or one the log trimmed; the snapshot's id is
// "<From>-<Tag>"): for a cursor, the events after it (From is the
// cursor's seq, or past the first events after it when they were lost),
// or Gap when the log could not serve them all; without one (or for a
// gap), the events the session's platform was not delivered yet, its
// offline inbox. The replay may end short of Seq (its rest trimmed or
// rewritten while it was read): the stream then catches up from its last
// event at once. Replaced counts the sessions the open replaced.
type UserOpening struct {
	Seq      int64
	Tag      string
	From     int64
	Replay   []UserEvent
	Gap      bool
	Replaced int
	// Lost: the platform's offline inbox lost events before they were
	// delivered (the log's cap dropped them, or they are past the offline
	// TTL); the snapshot says resync, and once it is written the
	// platform's position moves to From, or past the Replay.
	Lost bool
	// Past, when not 0, is the position of the last event read for the
	// Replay, lost (past the offline TTL) after every event of it, and
	// PastTag its write's tag: the stream's position once the Replay is
	// written, so that neither its catch-up nor the platform's next
	// session meets that loss again.
	Past    int64
	PastTag string
}

// UserSource reads and writes what personal streams need. Errors:
// players.ErrSessionExists (policy reject-new), rooms.ErrStreamLimit,
// rooms.ErrUnavailable.
type UserSource interface {
	// OpenSession records session s under the deployment's session policy
	// (replacing, refusing or keeping a session of the same platform),
	// publishes the user's status when it changed, and reads the user's
	// log position, with c set the events after c (at most limit) or a gap,
	// without it (or for a gap) the events its platform was not delivered.
	// Events among those past the offline TTL are left out and make it a
	// loss (Lost), and with c set a gap too, the rest after c given, From
	// past those left out before them, Past at those left out after them.
	OpenSession(ctx context.Context, s Session, c Cursor, limit int) (UserOpening, error)
	// Delivered records that session s wrote its user's log up to seq to
	// its client, tag being the seq's (UserEvent.Tag, or UserOpening.Tag
	// for its From): its platform's offline inbox starts after it, unless
	// the log's seq is another write's or history's (a failover lost the
	// event written).
	Delivered(ctx context.Context, s Session, tag string, seq int64) error
	// CloseSession drops s; the status follows (published when changed).
	CloseSession(ctx context.Context, s Session) error
	// RenewSessions extends the sessions' leases and returns those no
	// longer held (replaced, or lapsed while the instance was cut off).
	RenewSessions(ctx context.Context, ss []Session) (lost []Session, err error)
	// UserLog returns the user's logged events after seq, whose tag is
	// tag (of its event's write, or the history's for a position without
	// an event), gap when the log no longer holds them all (trimmed, or
	// past the offline TTL) or seq's event is another write's (a failover
	// lost the one written) or history's.
	UserLog(ctx context.Context, user string, seq int64, tag string, limit int) (evs []UserEvent, gap bool, err error)
	// Replaced returns the session_replaced (a Notice) that ended session
	// s, kept a while after the replacement for s's instance to read when
	// the live message was lost; ok false when none is kept (s was not
	// replaced, or an older release replaced it: its session_replaced is
	// then in the user's log, which UserLog returns).
	Replaced(ctx context.Context, s Session) (ev UserEvent, ok bool, err error)
	// Following returns the users user follows.
	Following(ctx context.Context, user string) ([]string, error)
	// Statuses returns the status of each user (offline, Version 0, when
	// none is recorded).
	Statuses(ctx context.Context, users []string) ([]players.Status, error)
}

// UserFeed is the part of a Feed that carries personal streams: each
// user's channel (logged events and control messages) and each user's
// status channel. Subscribe… return once Redis confirmed.
type UserFeed interface {
	SubscribeUser(ctx context.Context, user string) error
	UnsubscribeUser(user string)
	SubscribeStatus(ctx context.Context, user string) error
	UnsubscribeStatus(user string)
}

// UserSink receives what a UserFeed delivers (the Hub). Its methods must
// not block.
type UserSink interface {
	// DeliverUser hands over a logged event or control message published
	// on user's channel.
	DeliverUser(user string, e UserEvent)
	// DeliverStatus hands over a status published on its user's status
	// channel.
	DeliverStatus(s players.Status)
	// ResubscribedUser and ResubscribedStatus say the subscription was
	// re-established after a reconnect: messages may have been lost.
	ResubscribedUser(user string)
	ResubscribedStatus(user string)
}

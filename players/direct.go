package players

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/realsync/realsync/rooms"
)

// Inbox appends logged events to users' personal logs, which are also
// their offline inboxes (the store implements it: store/userlog): a
// session of the user open on any instance gets the event at once, a
// platform without one when its next session opens.
type Inbox interface {
	// Send appends ev, one of this package's logged events with Seq 0 (the
	// log numbers it), to user uid's log. Errors: rooms.ErrUnavailable.
	Send(ctx context.Context, uid string, ev any) error
	// SendToMany appends ev (UserID "", Seq 0) to the log of each of
	// uids, its body stored once. Errors: rooms.ErrUnavailable.
	SendToMany(ctx context.Context, uids []string, ev any) error
	// SendOnce is Send of an event named by once: when uid's inbox
	// remembers once.Key (for rooms.MessageKeyWindow, its last
	// rooms.MessageKeysKept keys; none when empty), nothing is sent and
	// the first send's At is returned (rooms.ErrKeyReused when its Digest
	// differs); else ev is sent and once.At returned; either with the
	// receipt of the send (Sent). A send from a user uid does not follow
	// (once.From), when uid follows someone, is refused,
	// rooms.ErrInboxFull, while such senders' events none of uid's
	// platforms was delivered fill half of uid's log. Errors:
	// rooms.ErrUnavailable too.
	SendOnce(ctx context.Context, uid string, ev any, once Once) (Sent, error)
}

// Once names a send (Inbox.SendOnce): its sender's Idempotency-Key, and
// its sender.
type Once struct {
	// Key is "<Idempotency-Key> <sender's user id>" (a key holds no
	// space; "": the send is not keyed); Digest tells the message's
	// content (rooms.MessageDigest).
	Key, Digest string
	// From is the sender's user id when a player sent it ("": the
	// server's)
	From string
	// At is when this send was made, the answer's time.
	At time.Time
}

// Direct sends direct messages and invites.
type Direct struct {
	inbox Inbox
	rooms *rooms.Service
}

// Notices tells players what rooms did to them (rooms.Notifier), on their
// personal streams.
type Notices struct{ Inbox Inbox }

var _ rooms.Notifier = Notices{}

// NewDirect sends through inbox, and reads rooms (for invites) and checks
// messages with rs.
func NewDirect(inbox Inbox, rs *rooms.Service) *Direct { return &Direct{inbox: inbox, rooms: rs} }

// Sent is what a send returns: when it was sent, and of a keyed send
// (Inbox.SendOnce) the store's receipt of its write ("": none; opaque),
// which a replay of the answer of its Idempotency-Key checks against the
// recipient's log (see internal/idempotency's Answer.Receipt).
type Sent struct {
	TS      time.Time
	Receipt string
}

// DirectMessageParams is a direct message as the client sent it.
type DirectMessageParams struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
	// Key is the sender's Idempotency-Key ("": none; not of the body): the
	// recipient's inbox remembers it as a room remembers its messages'
	// (rooms.Message.Key), so the message sent again is sent once.
	Key string `json:"-"`
}

// NewHeader is the header of a logged event of type typ to user uid at
// now (Seq 0: the log numbers it; uid "" for an event sent to many).
func NewHeader(typ, uid string, now time.Time) UserEventHeader {
	return UserEventHeader{Type: typ, UserID: uid, TS: Timestamp(now)}
}

// Timestamp is t as the personal events write times: RFC 3339 in UTC, to
// the millisecond.
func Timestamp(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
}

func senderOf(u rooms.User) Sender {
	if u.Server {
		return Sender{Server: true}
	}
	return Sender{UserID: u.ID, Name: u.Name}
}

// checkRecipient checks the user id a message or an invite goes to: a
// player's (no API key's), not the sender's own.
func checkRecipient(u rooms.User, to string) error {
	switch {
	case !rooms.ValidUserID(to):
		return rooms.Invalid("userId", "%s", rooms.UserIDRule)
	case strings.HasPrefix(to, rooms.ServerUserPrefix):
		return rooms.Invalid("userId", "must be a player's user id, not an API key's")
	case to == u.ID:
		return rooms.Invalid("userId", "must be another user's: one cannot send to oneself")
	}
	return nil
}

// SendMessage sends a direct message from u (a player, or the server with
// ScopeWrite) to user to: the type and data rules of room messages apply.
// The recipient gets the `message` event on their personal stream, or
// when a session of each platform opens, within REALSYNC_OFFLINE_TTL.
// Any user id is accepted: users are who tokens name, there is no
// registry. With p.Key the message is sent once (Inbox.SendOnce): sent
// again, it answers the first send's time. Errors: a ValidationError
// (nothing sent), rooms.ErrScopeRequired, rooms.ErrKeyReused,
// rooms.ErrInboxFull (to follows others but not u, and its inbox holds as
// many undelivered events of such senders as it takes),
// rooms.ErrUnavailable.
func (d *Direct) SendMessage(ctx context.Context, u rooms.User, to string, p DirectMessageParams) (Sent, error) {
	if err := rooms.RequireScope(u, rooms.ScopeWrite); err != nil {
		return Sent{}, err
	}
	if err := checkRecipient(u, to); err != nil {
		return Sent{}, err
	}
	data, err := d.rooms.CheckDirectMessage(p.Type, p.Data)
	if err != nil {
		return Sent{}, err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	ev := DirectMessageEvent{UserEventHeader: NewHeader(EventMessage, to, now), From: senderOf(u),
		Message: DirectMessageBody{Type: p.Type, Data: data}}
	once := Once{From: senderOf(u).UserID, At: now}
	if p.Key != "" {
		ev.MessageID = rooms.MessageID(p.Key, u.ID)
		once.Key, once.Digest = p.Key+" "+u.ID, rooms.MessageDigest(p.Type, data, nil)
	}
	return d.send(ctx, to, ev, once)
}

// send sends ev to to with once (SendOnce); an unkeyed send answers now,
// without a receipt.
func (d *Direct) send(ctx context.Context, to string, ev any, once Once) (Sent, error) {
	sent, err := d.inbox.SendOnce(ctx, to, ev, once)
	if once.Key == "" {
		return Sent{TS: once.At}, err
	}
	return sent, err
}

// Invite invites user to to room id on behalf of u, a member (or the
// server, ScopeWrite): the `invite` event carries the room's id, name,
// mode and region, and a private room's invite code. With key (the
// caller's Idempotency-Key, "": none) the invite is sent once, as a keyed
// direct message (Inbox.SendOnce): sent again, it answers the first
// send's time; the key with an invite to another room is
// rooms.ErrKeyReused. Errors:
// rooms.ErrRoomNotFound (also a private room u is not in),
// rooms.ErrNotMember, rooms.ErrRoomFinished, a ValidationError on userId,
// rooms.ErrScopeRequired, rooms.ErrKeyReused, rooms.ErrInboxFull (as
// SendMessage), rooms.ErrUnavailable.
func (d *Direct) Invite(ctx context.Context, u rooms.User, id, to, key string) (Sent, error) {
	if err := rooms.RequireScope(u, rooms.ScopeWrite); err != nil {
		return Sent{}, err
	}
	if err := checkRecipient(u, to); err != nil {
		return Sent{}, err
	}
	ru := u
	if u.Server {
		ru.Scopes |= rooms.ScopeRead // a key that may invite may see the room it invites to
	}
	r, err := d.rooms.Get(ctx, ru, id)
	if err != nil {
		return Sent{}, err
	}
	if _, ok := r.Member(u.ID); !ok && !u.Server {
		return Sent{}, rooms.ErrNotMember
	}
	if r.Status == rooms.Finished {
		return Sent{}, rooms.ErrRoomFinished
	}
	now := time.Now().UTC().Truncate(time.Millisecond) // the event's ts (NewHeader), answered as is
	ev := InviteEvent{UserEventHeader: NewHeader(EventInvite, to, now), From: senderOf(u), RoomID: r.ID,
		Name: r.Name, Mode: r.Mode, Region: r.Region, InviteCode: r.InviteCode}
	once := Once{From: senderOf(u).UserID, At: now}
	if key != "" {
		ev.MessageID = rooms.MessageID(key, u.ID)
		once.Key, once.Digest = key+" "+u.ID, rooms.MessageDigest(EventInvite, []byte(r.ID), nil)
	}
	return d.send(ctx, to, ev, once)
}

// Kicked implements rooms.Notifier.
func (d Notices) Kicked(ctx context.Context, uid, room string, banned bool) error {
	typ := EventKicked
	if banned {
		typ = EventBanned
	}
	return d.Inbox.Send(ctx, uid, KickedEvent{UserEventHeader: NewHeader(typ, uid, time.Now()), RoomID: room})
}

// Closed implements rooms.Notifier: one body for every member, each
// member's log referring to it.
func (d Notices) Closed(ctx context.Context, uids []string, room string, reason rooms.CloseReason) error {
	if len(uids) == 0 {
		return nil
	}
	return d.Inbox.SendToMany(ctx, uids, RoomClosedEvent{UserEventHeader: NewHeader(EventRoomClosed, "", time.Now()), RoomID: room, Reason: reason})
}

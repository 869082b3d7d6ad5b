package rooms

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// Message limits.
const (
	MaxMessageData    = 4 << 10 // bytes of compacted JSON
	MaxRecipients     = 100
	MessageHistoryMin = 200 // messages kept at least, whatever else happens in the room
	DefaultMessages   = 50
	MaxMessagesPage   = 100
	// A room remembers the Idempotency-Keys of its messages this long, its
	// last MessageKeysKept at most (Message.Key).
	MessageKeyWindow = 10 * time.Minute
	MessageKeysKept  = 1000
)

// MessageParams is a message as the client sent it.
type MessageParams struct {
	Type string          `json:"type" validate:"min=1,max=32,nocontrol"`
	Data json.RawMessage `json:"data"`
	// To limits delivery to these players (and the sender); nil: everyone.
	To []int `json:"to" validate:"omitnil,recipients,unique,dive,min=1"`
	// Key is the sender's Idempotency-Key ("": none; not of the body): see
	// Message.Key.
	Key string `json:"-"`
}

// Message is one message of a room's history.
type Message struct {
	Version int64           `json:"version"`
	From    int             `json:"from"`
	Type    string          `json:"type"`
	Data    json.RawMessage `json:"data"`
	To      []int           `json:"to,omitempty"`
	TS      time.Time       `json:"ts"`
	// MessageID: of a message sent with an Idempotency-Key, MessageID's
	// ("": none).
	MessageID string `json:"messageId,omitempty"`
	// Key, when sending, is the sender's Idempotency-Key ("": none): the
	// room remembers it for MessageKeyWindow (its last MessageKeysKept
	// keyed messages), and the same sender sending with it again sends
	// nothing and gets the first message's version, so a message sent
	// again after a lost answer is sent once; ErrKeyReused when the key
	// sent another message (type, data or recipients).
	Key string `json:"-"`
}

// MessageDigest tells one message from another under one Idempotency-Key
// (Message.Key): its type, its data (compacted, as checkMessage makes it)
// and its recipients; a direct message has none.
func MessageDigest(typ string, data []byte, to []int) string {
	h := sha256.New()
	h.Write([]byte(typ))
	h.Write([]byte{0})
	h.Write(data)
	for _, p := range to {
		h.Write([]byte{0})
		h.Write(strconv.AppendInt(nil, int64(p), 10))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// MessageID is the messageId of a room message, direct message or
// invite sent with the Idempotency-Key key by the user sender (the API
// key's user id for the server): the same for every send of that key and
// sender, whatever history holds it. The room (the recipient's inbox)
// sends once per key while it remembers the key; a failover of Redis
// that lost the first send (and the key with it) lets a retry send it
// again, as a new event (another version or seq), which a client that
// received the lost one tells by this id. A hash, so that the recipients
// do not learn the sender's key.
func MessageID(key, sender string) string {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(sender))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// VisibleTo reports whether player pid may see m (see Visible).
func (m Message) VisibleTo(pid int) bool { return Visible(m.From, m.To, pid) }

// Visible is the one rule of who sees a message from player from to the
// players to: everyone when to is empty; otherwise only the recipients and
// the sender. pid 0 is the server, which sees every message. The message
// history and the live streams both apply it.
func Visible(from int, to []int, pid int) bool {
	return len(to) == 0 || from == pid || pid == 0 || slices.Contains(to, pid)
}

// Sent is where a message sent landed: its version, and the store's
// receipt of its write ("": none; opaque), which a replay of the answer
// of its Idempotency-Key checks against the room's history (see
// internal/idempotency's Answer.Receipt).
type Sent struct {
	Version int64
	Receipt string
}

// MessageStore keeps room messages.
type MessageStore interface {
	// SendMessage appends m (Version, TS and From are set by the store) on
	// behalf of member u (or the server: From 0) and returns where it
	// landed; with m.Key, once (see Message.Key), with a receipt.
	// ErrRoomNotFound, ErrNotMember, ErrKeyReused, or a validation error
	// on "to" naming a non-member.
	SendMessage(ctx context.Context, u User, room string, m Message) (Sent, error)
	// Messages returns the caller's playerId (0 for the server, which needs
	// no membership) and the room's message history
	// with versions below before (0: all), newest first, unfiltered.
	Messages(ctx context.Context, u User, room string, before int64) (int, []Message, error)
}

// SendMessage validates p and sends it; returns where the message landed
// (MessageStore.SendMessage). Data is required JSON of at most
// MaxMessageData bytes once compacted. The server (ScopeWrite) sends as
// player 0 and needs no membership.
func (s *Service) SendMessage(ctx context.Context, u User, room string, p MessageParams) (Sent, error) {
	if err := RequireScope(u, ScopeWrite); err != nil {
		return Sent{}, err
	}
	data, err := s.checkMessage(p)
	if err != nil {
		return Sent{}, err
	}
	if !ValidRoomID(room) {
		return Sent{}, ErrRoomNotFound
	}
	return s.store.SendMessage(ctx, u, room, Message{Type: p.Type, Data: data, To: p.To, Key: p.Key})
}

// checkMessage applies the rules of a message (also a direct one, which
// has no To): returns its data compacted, or a ValidationError naming every
// bad field.
func (s *Service) checkMessage(p MessageParams) ([]byte, error) {
	errs := structErrors(s.validate, p)
	var data bytes.Buffer
	switch {
	case len(p.Data) == 0:
		errs.add("data", "is required")
	case bytes.Equal(bytes.TrimSpace(p.Data), []byte("null")):
		errs.add("data", "must be a JSON value other than null")
	case json.Compact(&data, p.Data) != nil:
		errs.add("data", "must be valid JSON")
	case data.Len() > MaxMessageData:
		errs.add("data", "must be at most %d bytes of JSON", MaxMessageData)
	case !FiniteNumbers(data.Bytes()):
		errs.add("data", finiteRule)
	}
	return data.Bytes(), errs.err()
}

// CheckDirectMessage applies the rules of a room message's type and data
// to a direct message (players.Service.SendMessage): returns its data
// compacted, or a ValidationError.
func (s *Service) CheckDirectMessage(typ string, data json.RawMessage) ([]byte, error) {
	return s.checkMessage(MessageParams{Type: typ, Data: data})
}

// MessageQuery is a history request as the client sent it; "" is absent.
// Both are decimals in canonical form (ParseCanonical).
type MessageQuery struct {
	Limit  string // 1..100, default 50
	Before string // a version: only older messages
}

// Messages returns up to q.Limit messages the caller may see with versions
// below q.Before, newest first. A validation error names a bad parameter.
// The server (ScopeRead) sees every message.
func (s *Service) Messages(ctx context.Context, u User, room string, q MessageQuery) ([]Message, error) {
	if err := RequireScope(u, ScopeRead); err != nil {
		return nil, err
	}
	limit, before := DefaultMessages, int64(0)
	var errs fieldErrors
	if q.Limit != "" {
		n, ok := ParseCanonical(q.Limit)
		if !ok || n < 1 || n > MaxMessagesPage {
			errs.add("limit", "must be an integer 1..%d", MaxMessagesPage)
		}
		limit = int(n)
	}
	if q.Before != "" {
		n, ok := ParseCanonical(q.Before)
		if !ok || n < 1 {
			errs.add("before", "must be a version (an integer of at least 1, in canonical form)")
		}
		before = n
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	if !ValidRoomID(room) {
		return nil, ErrRoomNotFound
	}
	pid, all, err := s.store.Messages(ctx, u, room, before)
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, limit)
	for _, m := range all {
		if len(out) == limit {
			break
		}
		if m.VisibleTo(pid) {
			out = append(out, m)
		}
	}
	return out, nil
}

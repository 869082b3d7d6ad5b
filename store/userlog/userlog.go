// Package userlog keeps each user's personal log in Redis: the logged
// events of the personal stream (GET /v1/me/events), which are also the
// user's offline inbox. Everything of a user lies in the slot of the
// user's shard (redisx.Base.UserShard), so each script touches one slot:
//   - the log: a stream of event JSON (ids "<seq>-0", field d), capped
//     exactly at Config.MaxLen entries (the oldest dropped, counted), each
//     with the tag of its write (field g, after d or r): the event's SSE id is
//     "<seq>-<tag>", so an event a failover lost and the new history's
//     event of the same seq have different ids, and a resume, a catch-up
//     or an Ack from the lost one is told from the new one (as a room's
//     events, store/internal/roomlua/lua/prelude.lua emit);
//   - its meta: hash seq (the last event's), tag (the history: a log that
//     expired starts a new one, so a resume from the old one is a gap);
//     the tag of a position without an entry (0, or trimmed) and of an
//     older release's entries (without g);
//   - the strangers' entries: a sorted set of the seqs (with when each was
//     sent) of the events senders the user does not follow sent, and the
//     history they are of: when the user follows someone, the events no
//     platform of the user was delivered hold at most half of
//     Config.MaxLen of them (Once.From;
//     rooms.ErrInboxFull past it), so that strangers writing while the
//     user is away cannot push the events of the users they follow, or
//     the server's, out of the capped log; it expires with the log;
//   - the delivery cursors: hash platform → the last seq a session of that
//     platform delivered (Ack). A session that opens without
//     Last-Event-ID gets what its platform has not been delivered yet, in
//     order (the offline inbox of that user and platform); a platform
//     without a cursor (never used, or its cursor expired) gets what the
//     other platforms were not delivered, after the last FirstInbox they
//     were (what the log holds, when none has a cursor).
//
// An entry is dropped once every platform with a cursor was delivered it,
// but for the last ResumeMargin delivered ones, which a resume may still
// ask for, and the one before them (the position a resume that asks for
// them all names: its tag tells it from another history's). Each event expires Config.TTL (REALSYNC_OFFLINE_TTL) after it
// was sent: Resolve drops older ones from what is read. Log, meta and
// cursors expire Config.TTL after the last event, or stream open of the
// user. Each event's body
// is stored once per user whatever the number of platforms.
//
// The store's session scripts (store/sessions) read and extend the same
// keys; Keys is their one definition.
package userlog

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/jsonout"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store/idempotency"
	"github.com/realsync/realsync/store/internal/redisx"
)

// Defaults and bounds of Config.
const (
	DefaultMaxLen = 1000
	DefaultTTL    = 7 * 24 * time.Hour
	// ResumeMargin is how many delivered events the log keeps for resumes:
	// a client's Last-Event-ID may lag what the server wrote by as much as
	// the connection took and never handed it (a half-open connection, a
	// suspended app, each a socket buffer of events: a tester's client
	// that stopped reading lagged 900 events, and lost them all with a
	// margin of 100). As many as a resume replays (sse's ReplayLimit), so
	// with the default cap (DefaultMaxLen) the log keeps what it holds,
	// delivered or not, until the cap or the TTL drops it.
	ResumeMargin = sse.DefaultReplayLimit
	// FirstInbox is how many of the events the user's other platforms
	// were delivered a platform's first session gets (with all they were
	// not): the log keeps ResumeMargin of them for resumes, not for it (a
	// new platform would get a week of old invites and matches).
	FirstInbox = 100
	// MinMaxLen keeps some inbox; MaxMaxLen bounds a log's memory (a few
	// hundred bytes an event).
	MinMaxLen = 200
	MaxMaxLen = 100_000
	// MinTTL and MaxTTL bound Config.TTL.
	MinTTL = time.Minute
	MaxTTL = 90 * 24 * time.Hour
)

// Config bounds the logs.
type Config struct {
	// MaxLen caps each user's log (REALSYNC_OFFLINE_MAX); DefaultMaxLen
	// when 0.
	MaxLen int
	// TTL: an event expires this long after it was sent, a log this long
	// after its last event or the user's last stream open
	// (REALSYNC_OFFLINE_TTL); DefaultTTL when 0.
	TTL time.Duration
	// Dropped, when set, is told how many undelivered or kept events a cap
	// dropped (for metrics).
	Dropped func(n int)
	// Expired, when set, is told how many events past the TTL a session's
	// opening found after its platform's position, which its client is
	// told it missed (for metrics; counted by the opening only, not by the
	// live catch-ups that end at such events: their client resumes into
	// an opening).
	Expired func(n int)
}

// Check returns an error for a bound out of range (after defaults).
func (c Config) Check() error {
	if c.MaxLen != 0 && (c.MaxLen < MinMaxLen || c.MaxLen > MaxMaxLen) {
		return fmt.Errorf("the personal log cap %d is out of range %d..%d", c.MaxLen, MinMaxLen, MaxMaxLen)
	}
	if c.TTL != 0 && (c.TTL < MinTTL || c.TTL > MaxTTL) {
		return fmt.Errorf("the personal log TTL %s is out of range 1m..2160h", c.TTL)
	}
	return nil
}

//go:embed lua/user_send.lua
var sendLua string

//go:embed lua/user_ack.lua
var ackLua string

var (
	sendScript = redisx.Plain("user_send", sendLua)
	ackScript  = redisx.Plain("user_ack", ackLua)
)

// Log appends to and acknowledges users' logs.
type Log struct {
	b   *redisx.Base
	cfg Config
	// NewTag makes a new history's tag.
	newTag func() string
}

// New keeps logs with b's client and layout; newTag makes a new history's
// tag (the store's event tags).
func New(b *redisx.Base, cfg Config, newTag func() string) *Log {
	if cfg.MaxLen == 0 {
		cfg.MaxLen = DefaultMaxLen
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	return &Log{b: b, cfg: cfg, newTag: newTag}
}

// Config returns the bounds in force.
func (l *Log) Config() Config { return l.cfg }

// Keys are a user's log keys; Seen and SeenAt remember the
// Idempotency-Keys of the messages sent to the user (SendEventOnce).
type Keys struct {
	Log, Meta, Cursors, Channel string
	Seen, SeenAt                string
	Strangers                   string
}

// KeysOf returns uid's keys.
func (l *Log) KeysOf(uid string) Keys {
	t := l.b.Tag(l.b.UserShard(uid))
	// the user id last, after a name of its own for each key: user ids may
	// hold ":", so no key of one user can be another's
	return Keys{Log: t + ":ulog:" + uid, Meta: t + ":ulogm:" + uid, Cursors: t + ":ulogc:" + uid,
		Channel: t + ":uch:" + uid, Seen: t + ":ulogk:" + uid, SeenAt: t + ":ulogkt:" + uid, Strangers: t + ":ulogx:" + uid}
}

// NewTag is a new history's tag.
func (l *Log) NewTag() string { return l.newTag() }

// SendCall is user_send.lua's descriptor.
type SendCall struct {
	K      Keys
	PubCmd string
	MaxLen int
	TTL    time.Duration
	// Tag is the write's (a new history's too).
	Tag string
	// Event is the event's JSON object without its seq.
	Event []byte
	// Ref, when set, is the key of the event's body stored once for many
	// users (SendToMany): the log keeps the key, not the event.
	Ref string
	// Once, when its Key is set, sends the event once per key
	// (SendEventOnce); its From names the sender.
	Once Once
	// CheckOnly sends nothing: the reply says whether a send of Once.From
	// would be refused (Log.StrangersFull).
	CheckOnly bool
}

// Once names a send for its sender's Idempotency-Key: Key, Digest of the
// content, AtMs the send's time (ms) that the first send's answer keeps;
// the user's inbox remembers a key for Window, its last Kept keys at most.
// Renew: a send of a key the inbox remembers writes all the same (renews
// the key sets' expiry), so that a WAIT after it waits for the first
// send's write too (match_found's); else it writes nothing (a direct
// message's retry is answered by a master that refuses writes).
type Once struct {
	Key, Digest string
	AtMs        int64
	Window      time.Duration
	Kept        int
	Renew       bool
	// From is the sender's user id, a player's ("": the server's event, or
	// the rooms'), and Following the key of the set of the users the
	// recipient follows, in the recipient's slot: a sender not in it,
	// when the recipient follows someone, is a stranger, whose events no
	// platform of the recipient was delivered hold at most StrangersShare
	// of the log (rooms.ErrInboxFull past it).
	From, Following string
	// Counted: a stranger's event past the share is counted, not refused
	// (a match_found of a party's leader: the match stands).
	Counted bool
}

// StrangersShare is how many of a log of maxLen entries the events of
// senders the user does not follow may hold while no platform of the user
// was delivered them: half.
func StrangersShare(maxLen int) int { return maxLen / 2 }

func (SendCall) Script() *redisx.Script { return sendScript }
func (c SendCall) KeysArgs() ([]string, []any) {
	keys := []string{c.K.Log, c.K.Meta, c.K.Cursors, c.K.Seen, c.K.SeenAt, c.K.Strangers}
	if c.Once.From != "" {
		keys = append(keys, c.Once.Following)
	}
	return keys, []any{c.K.Channel, c.PubCmd, c.MaxLen, c.TTL.Milliseconds(), c.Tag, c.Event, c.Ref,
		c.Once.Key, c.Once.Digest, c.Once.AtMs, c.Once.Window.Milliseconds(), c.Once.Kept, renew(c.Once.Renew),
		c.Once.From, StrangersShare(c.MaxLen), c.mode()}
}

// mode is user_send's ARGV[16]: what a stranger's send past the share
// does (Once.Counted, CheckOnly).
func (c SendCall) mode() string {
	switch {
	case c.CheckOnly:
		return "check"
	case c.Once.Counted:
		return "count"
	}
	return ""
}

// renew is Once.Renew as user_send takes it.
func renew(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// AckCall is user_ack.lua's descriptor.
type AckCall struct {
	K             Keys
	Platform, Tag string
	Seq           int64
	Margin        int
	TTL           time.Duration
}

func (AckCall) Script() *redisx.Script { return ackScript }
func (c AckCall) KeysArgs() ([]string, []any) {
	return []string{c.K.Log, c.K.Meta, c.K.Cursors},
		[]any{c.Platform, c.Tag, c.Seq, c.Margin, c.TTL.Milliseconds()}
}

// Send appends event (a JSON object without "seq": the log numbers it) to
// uid's log and publishes it to uid's open personal streams, in one
// script; returns its seq. Errors: the store's (redisx.Wrap).
func (l *Log) Send(ctx context.Context, uid string, event []byte) (int64, error) {
	if len(event) < 2 || event[len(event)-1] != '}' {
		return 0, fmt.Errorf("userlog: event %.40q is not a JSON object", event)
	}
	return l.send(ctx, uid, event, "")
}

func (l *Log) send(ctx context.Context, uid string, event []byte, ref string) (int64, error) {
	sent, err := l.sendOnce(ctx, uid, event, ref, Once{}, nil)
	return sent.Seq, err
}

// Sent is where a send landed: its event's seq, the send's time (ms), its
// write's tag ("" for a key remembered whose entry was trimmed) and the
// log's history tag (a log that expired starts another).
type Sent struct {
	Seq, AtMs    int64
	Tag, History string
}

// receiptMargin is how much earlier than its TTL after a send a receipt
// deems the log may have expired (Receipt): the send's time is its
// instance's clock, the expiry Redis'.
const receiptMargin = time.Minute

// Receipt is the receipt of sent, a keyed send to uid (store/idempotency's
// Receipt): its entry in uid's log, of its history, which cannot have
// expired (or started anew) for the TTL after the send.
func (l *Log) Receipt(uid string, sent Sent) string {
	k := l.KeysOf(uid)
	return idempotency.Receipt{Log: k.Log, Head: k.Meta, Field: "seq", Pos: sent.Seq, Tag: sent.Tag,
		HistoryField: "tag", History: sent.History, Until: time.UnixMilli(sent.AtMs).Add(l.cfg.TTL - receiptMargin)}.String()
}

// Run runs a call of the log's and returns its reply: a caller's own way
// (tickets' match_found waits for replicas), where Runner.Run's will not do.
// A run that fails after the script ran (short of replicas) returns its
// reply with the error: the entries the send dropped are counted still.
type Run func(ctx context.Context, c redisx.Call) (any, error)

// sendOnce runs user_send, with run (nil: Runner.Run, its errors
// redisx.Wrap'd; run's are returned as they are); returns where it landed
// (the send's time: once.AtMs, or the first send's when once.Key was
// known, and then the first's seq and tag). Errors: rooms.ErrKeyReused,
// rooms.ErrInboxFull (once.From a stranger's), the store's.
func (l *Log) sendOnce(ctx context.Context, uid string, event []byte, ref string, once Once, run Run) (Sent, error) {
	call := SendCall{K: l.KeysOf(uid), PubCmd: l.b.PubCmd, MaxLen: l.cfg.MaxLen,
		TTL: l.cfg.TTL, Tag: l.newTag(), Event: event, Ref: ref, Once: once}
	var reply any
	var err error
	if run == nil {
		reply, err = l.b.Runner.Run(ctx, call).Result()
		err = redisx.Wrap(err)
	} else {
		reply, err = run(ctx, call)
	}
	res, _ := reply.([]any)
	ok := len(res) == 6 && res[0] == "OK"
	if ok && l.cfg.Dropped != nil {
		if n, _ := res[2].(int64); n > 0 {
			l.cfg.Dropped(int(n))
		}
	}
	if err != nil {
		return Sent{}, err
	}
	if len(res) == 1 && res[0] == "KEY_REUSED" {
		return Sent{}, rooms.ErrKeyReused
	}
	if len(res) == 1 && res[0] == "INBOX_FULL" {
		return Sent{}, rooms.ErrInboxFull
	}
	if !ok {
		return Sent{}, fmt.Errorf("userlog: unexpected reply %v", res)
	}
	var sent Sent
	sent.Seq, _ = res[1].(int64)
	sent.AtMs, _ = res[3].(int64)
	sent.Tag, _ = res[4].(string)
	sent.History, _ = res[5].(string)
	return sent, nil
}

// seqZero is how a logged event's header marshals its Seq 0: SendEvent
// drops it for the log to number the event. Header fields come first, and
// inside a JSON string a quote is escaped, so the first match is the
// header's.
var seqZero = []byte(`"seq":0,`)

// SendEvent is Send of ev, a logged event of package players marshalled
// to JSON with its Seq 0.
func (l *Log) SendEvent(ctx context.Context, uid string, ev any) (int64, error) {
	sent, err := l.SendEventOnce(ctx, uid, ev, Once{})
	return sent.Seq, err
}

// SendEventOnce is SendEvent once per once.Key (none: every time): when uid's inbox remembers
// the key (once.Window, its last once.Kept keys), nothing is sent and the
// first send's seq, time (ms) and tag are returned, or rooms.ErrKeyReused
// when its digest differs; else the event is sent, with once.AtMs, unless
// once.From is a stranger's whose share of the log is full
// (rooms.ErrInboxFull).
func (l *Log) SendEventOnce(ctx context.Context, uid string, ev any, once Once) (Sent, error) {
	return l.SendEventOnceBy(ctx, uid, ev, once, nil)
}

// SendEventOnceBy is SendEventOnce with run running the script's call
// (nil: as SendEventOnce); run's errors are returned as they are. A run
// that waits for replicas (WAIT) after the call sets once.Renew.
func (l *Log) SendEventOnceBy(ctx context.Context, uid string, ev any, once Once, run Run) (Sent, error) {
	b, err := jsonout.Marshal(ev)
	if err != nil {
		return Sent{}, err
	}
	i := bytes.Index(b, seqZero)
	if i < 0 {
		return Sent{}, fmt.Errorf("userlog: %T has no seq 0", ev)
	}
	return l.sendOnce(ctx, uid, append(b[:i], b[i+len(seqZero):]...), "", once, run)
}

// userIDEmpty is how a logged event's header marshals an empty UserID.
var userIDEmpty = []byte(`"userId":"",`)

// SendToMany sends ev, a logged event of package players marshalled with
// an empty UserID and Seq 0, to each of uids: its body is stored once (a
// key of its own, expiring with the logs' TTL), each user's log keeps its
// key, and each user's open streams get the whole event at once. Readers
// splice the user's id and seq back in (Resolve). A body that expired
// (the TTL after it was sent) takes its entries with it. Errors: the
// store's, the first of them (the other users are still sent to).
func (l *Log) SendToMany(ctx context.Context, uids []string, ev any) error {
	b, err := jsonout.Marshal(ev)
	if err != nil {
		return err
	}
	for _, strip := range [][]byte{seqZero, userIDEmpty} {
		i := bytes.Index(b, strip)
		if i < 0 {
			return fmt.Errorf("userlog: %T has no %s", ev, strip)
		}
		b = append(b[:i], b[i+len(strip):]...)
	}
	id := l.newTag() + l.newTag()
	key := l.b.Tag(l.b.UserShard(id)) + ":ubody:" + id
	if err := l.b.Client.Set(ctx, key, b, l.cfg.TTL).Err(); err != nil {
		return redisx.Wrap(err)
	}
	var first error
	for _, uid := range uids {
		name, _ := json.Marshal(uid)
		event := append(append(append([]byte(`{"userId":`), name...), ','), b[1:]...)
		if _, err := l.send(ctx, uid, event, key); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Entry is a logged event as a log holds it: the tag of its write (its
// SSE id is "<Seq>-<Tag>"), its JSON, or the key of its body stored once
// for many users (Ref; Data empty until Resolve).
type Entry struct {
	Seq  int64
	Tag  string
	Data []byte
	Ref  string
}

// RefMark starts an entry the session_open script replies with for a
// body stored once, before the body's key.
const RefMark = "\x01"

// EntryOf reads a reply's entry of seq: its tag, a space, then its JSON,
// or RefMark and a key. The tag is a copy (a stream keeps the tags of the
// events it wrote, not the entries).
func EntryOf(seq int64, s string) Entry {
	tag, s, _ := strings.Cut(s, " ")
	tag = strings.Clone(tag)
	if key, ok := strings.CutPrefix(s, RefMark); ok {
		return Entry{Seq: seq, Tag: tag, Ref: key}
	}
	return Entry{Seq: seq, Tag: tag, Data: []byte(s)}
}

// TagOf is the tag of a log entry's write, its field g; history, the
// history's tag (the log's meta), for an older release's entry (none).
func TagOf(x redis.XMessage, history string) string {
	if g, ok := x.Values["g"].(string); ok {
		return g
	}
	return history
}

// Expired is what Resolve left out: N entries, Head the last of them
// before every entry kept and Tail the last of them after every entry
// kept (Seq 0: none; both the last entry when none is kept), positions a
// reader moves to past them.
type Expired struct {
	N          int
	Head, Tail Position
}

// Position is a place in a user's log: an entry's seq and the tag of its
// write.
type Position struct {
	Seq int64
	Tag string
}

// Resolve fills the Data of uid's entries that refer to a body stored
// once (one read per body, in one pipeline), splicing in uid and the
// entry's seq, and drops every entry older than the TTL by its ts (an
// event expires TTL after it was sent, wherever its body is kept: a log
// renewed by newer events keeps older entries, a shared body expires TTL
// after it was written) or whose body expired, and says what it dropped:
// events the reader will not be given, a loss it must tell its client of.
// Errors: the store's (a body that could not be read is not taken as
// expired).
func (l *Log) Resolve(ctx context.Context, uid string, es []Entry) (kept []Entry, expired Expired, err error) {
	p := l.b.Client.Pipeline()
	cmds := map[string]*redis.StringCmd{}
	for _, e := range es {
		if e.Ref != "" && cmds[e.Ref] == nil {
			cmds[e.Ref] = p.Get(ctx, e.Ref)
		}
	}
	if len(cmds) > 0 {
		// Exec's error is the first command's that failed: a missing
		// body's redis.Nil may hide another's failure
		_, _ = p.Exec(ctx)
		for _, c := range cmds {
			if err := c.Err(); err != nil && err != redis.Nil {
				return nil, Expired{}, redisx.Wrap(err)
			}
		}
	}
	name, _ := json.Marshal(uid)
	oldest := time.Now().Add(-l.cfg.TTL)
	out := es[:0]
	drop := func(e Entry) {
		expired.N++
		expired.Tail = Position{e.Seq, e.Tag}
		if len(out) == 0 {
			expired.Head = expired.Tail
		}
	}
	for _, e := range es {
		if e.Ref != "" {
			body, err := cmds[e.Ref].Bytes()
			if err != nil || len(body) < 2 {
				drop(e) // expired: gone with its body
				continue
			}
			d := append(append([]byte(`{"userId":`), name...), fmt.Sprintf(`,"seq":%d,`, e.Seq)...)
			e.Data, e.Ref = append(d, body[1:]...), ""
		}
		var h struct {
			TS time.Time `json:"ts"`
		}
		if json.Unmarshal(e.Data, &h) == nil && !h.TS.IsZero() && h.TS.Before(oldest) {
			drop(e) // expired
			continue
		}
		out = append(out, e)
		expired.Tail = Position{}
	}
	return out, expired, nil
}

// Ack records that a session of platform delivered uid's log up to seq,
// whose event's tag (of its write: Entry.Tag) is tag; reports whether the
// platform's cursor moved: not when the log's entry seq is another write's
// (a failover lost the event delivered) or another history's. Errors: the
// store's.
func (l *Log) Ack(ctx context.Context, uid, platform, tag string, seq int64) (bool, error) {
	n, err := l.b.Runner.Run(ctx, AckCall{K: l.KeysOf(uid), Platform: platform, Tag: tag, Seq: seq,
		Margin: ResumeMargin, TTL: l.cfg.TTL}).Int()
	return n == 1, redisx.Wrap(err)
}

// StrangersFull reports whether uid's log would refuse an event of from, a
// sender, past the strangers' share (rooms.ErrInboxFull; see Once.From),
// following the key of the set of the users uid follows; it sends
// nothing (but forgets the strangers' entries that no longer count).
// Errors: the store's.
func (l *Log) StrangersFull(ctx context.Context, uid, from, following string) (bool, error) {
	res, err := l.b.Runner.Run(ctx, SendCall{K: l.KeysOf(uid), PubCmd: l.b.PubCmd, MaxLen: l.cfg.MaxLen, TTL: l.cfg.TTL,
		Event: []byte("{}"), Once: Once{From: from, Following: following}, CheckOnly: true}).StringSlice()
	if err != nil {
		return false, redisx.Wrap(err)
	}
	if len(res) != 1 || (res[0] != "INBOX_FULL" && res[0] != "FITS") {
		return false, fmt.Errorf("userlog: unexpected reply %v to a check", res)
	}
	return res[0] == "INBOX_FULL", nil
}

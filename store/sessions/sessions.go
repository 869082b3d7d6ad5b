// Package sessions keeps the player layer's per-user state in Redis:
// personal streams' sessions (GET /v1/me/events), online status, the users
// a user follows, and a user's open event streams of every kind (the
// per-user stream cap, streams.go). Everything of a user lives in the slot
// of the user's shard (redisx.Base.UserShard), so each script touches one
// slot:
//   - sessions: zset "<platform>/<session>" scored by lease expiry (ms),
//     renewed by the hub with its other leases (session_renew, batched per
//     user shard at a third of the TTL); expires with its last lease;
//   - status: hash v (version, µs of the Redis clock, kept increasing) and
//     p (the platforms, "pc,web"); derived from the sessions by every
//     script that changes them and published on the user's status channel
//     only when p changed; a platform whose last session closed or
//     lapsed stays in p for the debounce (Config.Debounce), its deadline
//     (outlived by the record by statusLinger) in field
//     "g:<platform>" (ms), and a session of it opened meanwhile changes
//     nothing; p "" once the user went offline, the status
//     then kept offlineStatusTTL with its version (a client that saw the
//     user online must read the offline status as the later one); while
//     online it expires statusLinger after the last lease (the janitor's
//     sweep publishes "offline" before that; when no instance swept for
//     so long, the user is still in the online index: Statuses reads
//     offline at a version above every online one, and the sweep, once
//     instances are back, announces the offline: lapsed_online);
//   - the user's log, its meta and its delivery cursors per platform
//     (store/userlog: the personal events, also the user's offline inbox),
//     expiring REALSYNC_OFFLINE_TTL after the last event or open;
//   - the replaced sessions: zset "<session> <session_replaced JSON>"
//     scored by when (ms), a tombstone of each session a new one replaced
//     (policy replace), for the replaced session's instance to end it
//     with its session_replaced when the live message was lost
//     (Replaced); session_replaced is not logged, so a client replacing
//     its sessions over and over pushes nothing out of the capped log.
//     Tombstones are kept replacedKeep (three lease TTLs), at most
//     ReplacedKept; the key expires replacedKeep after the last;
//   - following: a set of user ids, replaced by PUT /v1/me/following,
//     expiring followingTTL (a guest's: guestFollowingTTL) after the
//     last PUT or stream open;
//   - party: the leader whose party the user joined (PUT /v1/me/party,
//     party.go), expiring players.PartyTTL after the last join;
//   - the shard's online index: zset userId → the user's earliest lease
//     expiry or platform deadline. The janitor of the shard sweeps the
//     users whose earliest lease or deadline is due (sessions_sweep, SweepBatch users a call, as many calls
//     as a visit finds due): a dead instance's sessions lapse, their
//     platforms are debounced as closed ones, and their users go offline
//     (published) within the TTL plus the debounce plus two janitor
//     intervals, however many they are. Its size is the shard's online
//     users.
// The user's channel carries the logged events ("E <seq> <tag> <json>",
// the tag of the event's write: store/userlog),
// session_replaced ("R <json>", not logged) and control messages ("F":
// the following changed); the status channel "<version> <platforms>".

package sessions

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/userlog"
)

const (
	// followingTTL: a user's following expires this long after it was last
	// set or a personal stream of the user opened; a guest's after
	// guestFollowingTTL, its token's lifetime (followingTTLOf).
	followingTTL      = 30 * 24 * time.Hour
	guestFollowingTTL = 24 * time.Hour
	// statusLinger: a status outlives its user's last lease by this much,
	// so that the janitor's sweep of a dead instance's sessions still finds
	// it and publishes "offline".
	statusLinger = 10 * time.Minute
	// offlineStatusTTL: an offline status (its version) is kept this long
	// after the user went offline, as long as its followers' lists live
	// (a guest's too: its followers need not be guests): a user offline
	// longer reads as never seen (version 0).
	offlineStatusTTL = followingTTL
	// ReplacedKept is the most tombstones of replaced sessions a user's
	// key holds: past it the oldest go (a session replaced more than so
	// many replacements ago, its live message lost, ends lapsed).
	ReplacedKept = 100
)

// followingTTLOf is how long user uid's following is kept after its last
// PUT or stream open: a guest's as long as a guest token lives (a guest
// who stays away longer has lost its identity unless it refreshed it),
// so the accounts an address may mint (the guests rate limit) each store
// a list for a day, not a month.
func followingTTLOf(uid string) time.Duration {
	if strings.HasPrefix(uid, rooms.GuestPrefix) {
		return guestFollowingTTL
	}
	return followingTTL
}

var (
	_ players.Inbox  = (*Sessions)(nil)
	_ players.Store  = (*Sessions)(nil)
	_ sse.UserSource = (*Sessions)(nil)
)

// Config is what the sessions need of the store.
type Config struct {
	Base *redisx.Base
	// Renewals is what the lease renewals (RenewStreams, RenewSessions)
	// run on: connections of their own, so that they never wait behind
	// the requests' (nil: Base)
	Renewals *redisx.Base
	Logs     *userlog.Log // the personal logs
	// TTL is a session's and a stream's lease (REALSYNC_PRESENCE_TTL),
	// renewed by the hub at a third of it.
	TTL time.Duration
	// Policy: what a new session does to an open one of the same user and
	// platform.
	Policy players.Policy
	// Debounce (REALSYNC_PRESENCE_DEBOUNCE, as the rooms' presence): a
	// platform whose last session closes stays shown this long, and a
	// session of it opened meanwhile changes nothing (no status event: a
	// reconnect or a flapping client is not shown offline); then the
	// janitor's sweep takes it away (user_offline for the last platform).
	// A platform whose sessions lapsed (their instance died) is debounced
	// alike, from when a sweep, an open or a close finds it lapsed. 0: at
	// once.
	Debounce time.Duration
	// StreamsPerUser caps a user's open streams of every kind, on every
	// instance (0: no cap; streams.go).
	StreamsPerUser int
	// Outbox is a user shard's webhook outbox key, OutboxLen its MAXLEN ~
	// (0: webhooks off): status changes are queued there.
	Outbox    func(shard int) string
	OutboxLen int
}

// Sessions implements sse.UserSource, players.Inbox and players.Store.
// Safe for concurrent use.
type Sessions struct {
	b   *redisx.Base
	cfg Config
}

// New keeps sessions with cfg.Base's client and layout.
func New(cfg Config) *Sessions { return &Sessions{b: cfg.Base, cfg: cfg} }

// renewals is what the lease renewals run on (Config.Renewals).
func (s *Sessions) renewals() *redisx.Base { return cmp.Or(s.cfg.Renewals, s.b) }

func (s *Sessions) tag(uid string) string          { return s.b.Tag(s.b.UserShard(uid)) }
func (s *Sessions) sessionsKey(uid string) string  { return s.tag(uid) + ":sess:" + uid }
func (s *Sessions) statusKey(uid string) string    { return s.tag(uid) + ":status:" + uid }
func (s *Sessions) followingKey(uid string) string { return s.tag(uid) + ":follow:" + uid }
func (s *Sessions) replacedKey(uid string) string  { return s.tag(uid) + ":urepl:" + uid }

// OnlineKey is shard's schedule of the users with sessions, scored by
// when Sweep must look at each (ms): the janitor's due key for Sweep.
func (s *Sessions) OnlineKey(shard int) string { return s.b.Tag(shard) + ":online" }

// replacedKeep is how long a replaced session's tombstone is kept: three
// lease TTLs. Its instance finds the lease gone at its first renewal
// after the replacement (a renewal runs every third of the TTL, and a
// stream not renewed for a TTL ends lapsed): within a TTL, and the
// catch-up that reads the tombstone follows at once; the rest is margin
// (a slow renewal call, a stream's queue).
func (s *Sessions) replacedKeep() time.Duration { return 3 * s.cfg.TTL }

// StreamsKey is user uid's open event streams on every room, the lobby and
// every instance (streams.go).
func (s *Sessions) StreamsKey(uid string) string { return s.tag(uid) + ":streams:" + uid }

// StatusChannel carries user uid's status changes, "<version>
// <platforms>" (ParseStatus); the user's channel (userlog.Keys.Channel)
// carries the logged events and control messages (ParseUserEvent).
func (s *Sessions) StatusChannel(uid string) string { return s.tag(uid) + StatusChannelInfix + uid }

// The infixes that tell a user's channel and status channel from others.
const (
	UserChannelInfix   = "}:uch:"
	StatusChannelInfix = "}:st:"
)

func sessionMember(s sse.Session) string { return s.Platform + "/" + s.ID }

func (s *Sessions) outbox(shard int) (string, int) {
	if s.cfg.OutboxLen <= 0 {
		return "", 0
	}
	return s.cfg.Outbox(shard), s.cfg.OutboxLen
}

// OpenSession implements sse.UserSource. The log holds up to its cap: so
// many events may be replayed, whatever limit. Its call waits for Redis up
// to redisx.OpeningBound.
func (s *Sessions) OpenSession(ctx context.Context, ss sse.Session, c sse.Cursor, limit int) (sse.UserOpening, error) {
	ctx = redisx.Opening(ctx)
	logs := s.cfg.Logs
	limit = max(limit, logs.Config().MaxLen)
	if err := players.CheckPlatform(ss.Platform); err != nil {
		return sse.UserOpening{}, err
	}
	res, err := s.b.Runner.Run(ctx, sessionOpenCall{x: s, s: ss, cursor: c, limit: limit, offline: logs.Config().MaxLen,
		now: time.Now(), newTag: logs.NewTag()}).Result()
	if err != nil {
		return sse.UserOpening{}, redisx.Wrap(err)
	}
	arr, _ := res.([]any)
	if len(arr) == 0 {
		return sse.UserOpening{}, fmt.Errorf("store: unexpected session reply %v", res)
	}
	switch st, _ := arr[0].(string); st {
	case "OK":
	case "SESSION_EXISTS": // the lease's time left: none from an older instance's script
		var left time.Duration
		if len(arr) > 1 {
			left = time.Duration(redisx.Int(arr[1])) * time.Millisecond
		}
		return sse.UserOpening{}, &players.SessionExistsError{Platform: ss.Platform, Left: left}
	case "STREAM_LIMIT":
		return sse.UserOpening{}, fmt.Errorf("%w (%d)", rooms.ErrStreamLimit, s.cfg.StreamsPerUser)
	default:
		return sse.UserOpening{}, fmt.Errorf("store: unexpected session reply %v", arr)
	}
	if len(arr) < 7 {
		return sse.UserOpening{}, fmt.Errorf("store: unexpected session reply %v", arr)
	}
	o := sse.UserOpening{Seq: redisx.Int(arr[1]), Tag: arr[2].(string), Gap: arr[3] == "1",
		Replaced: int(redisx.Int(arr[4])), From: redisx.Int(arr[5]), Lost: arr[6] == "1"}
	es := make([]userlog.Entry, 0, len(arr)-7)
	for i, d := range arr[7:] {
		str, _ := d.(string)
		es = append(es, userlog.EntryOf(o.From+1+int64(i), str))
	}
	// the reply stops at a page (replayPage entries, replayBytes): the rest
	// of the replay, up to the log's last entry when the script ran, in
	// pages. An entry trimmed or rewritten meanwhile ends it short (the
	// stream catches up from there at once and finds the gap: EndGap, the
	// client resumes into a snapshot).
	if n := len(es); n > 0 && es[n-1].Seq < o.Seq && n < limit {
		rest, _, err := s.logAfter(ctx, ss.UserID, es[n-1].Seq, es[n-1].Tag, o.Seq, limit-n, false)
		if err != nil {
			s.abandon(ctx, ss)
			return sse.UserOpening{}, err
		}
		es = append(es, rest...)
	}
	es, expired, err := logs.Resolve(ctx, ss.UserID, es)
	if err != nil {
		s.abandon(ctx, ss)
		return sse.UserOpening{}, err
	}
	if expired.N > 0 {
		// events the client would have been given are past the offline
		// TTL: a loss, told as the cap's is (a resume becomes a snapshot
		// that says resync, the rest following it), the snapshot's
		// position past those before the rest, and the stream's past
		// those after it (Past), so that the platform's position moves
		// past them once it is written
		o.Lost, o.Gap = true, o.Gap || c.Set
		if count := logs.Config().Expired; count != nil {
			count(expired.N)
		}
		if expired.Head.Seq > 0 {
			o.From, o.Tag = expired.Head.Seq, expired.Head.Tag
		}
		if expired.Tail.Seq > o.From {
			o.Past, o.PastTag = expired.Tail.Seq, expired.Tail.Tag
		}
	}
	for _, e := range es {
		o.Replay = append(o.Replay, sse.UserEvent{Seq: e.Seq, Tag: e.Tag, Data: e.Data})
	}
	return o, nil
}

// abandon closes session ss, opened by a session_open whose replay could
// not be read (best effort): its caller fails, and the lease, the online
// status and the stream's slot would otherwise stay until the lease lapses
// (under reject-new, the client's retry refused that long).
func (s *Sessions) abandon(ctx context.Context, ss sse.Session) {
	_, _ = s.closeSession(context.WithoutCancel(ctx), ss.UserID, sessionMember(ss))
}

// Delivered implements sse.UserSource, even when ctx is done: tag is the
// tag of the event seq written (userlog.Log.Ack).
func (s *Sessions) Delivered(ctx context.Context, ss sse.Session, tag string, seq int64) error {
	_, err := s.cfg.Logs.Ack(context.WithoutCancel(ctx), ss.UserID, ss.Platform, tag, seq)
	return err
}

// Send implements players.Inbox.
func (s *Sessions) Send(ctx context.Context, uid string, ev any) error {
	_, err := s.cfg.Logs.SendEvent(ctx, uid, ev)
	return err
}

// SendOnce implements players.Inbox, with the receipt of the send
// (userlog.Log.Receipt).
func (s *Sessions) SendOnce(ctx context.Context, uid string, ev any, once players.Once) (players.Sent, error) {
	sent, err := s.cfg.Logs.SendEventOnce(ctx, uid, ev, userlog.Once{Key: once.Key, Digest: once.Digest,
		AtMs: once.At.UnixMilli(), Window: rooms.MessageKeyWindow, Kept: rooms.MessageKeysKept,
		From: once.From, Following: s.followingKey(uid)})
	if err != nil {
		return players.Sent{}, err
	}
	return players.Sent{TS: time.UnixMilli(sent.AtMs).UTC(), Receipt: s.cfg.Logs.Receipt(uid, sent)}, nil
}

// SendToMany implements players.Inbox: the body stored once.
func (s *Sessions) SendToMany(ctx context.Context, uids []string, ev any) error {
	return s.cfg.Logs.SendToMany(ctx, uids, ev)
}

// CloseSession implements sse.UserSource, even when ctx is done.
func (s *Sessions) CloseSession(ctx context.Context, ss sse.Session) error {
	_, err := s.closeSession(context.WithoutCancel(ctx), ss.UserID, sessionMember(ss))
	return err
}

// closeSession runs session_close for member; reports whether the status
// changed.
func (s *Sessions) closeSession(ctx context.Context, uid, member string) (bool, error) {
	res, err := s.b.Runner.Run(ctx, sessionCloseCall{x: s, user: uid, member: member, now: time.Now()}).Result()
	if err != nil {
		return false, redisx.Wrap(err)
	}
	arr, _ := res.([]any)
	if len(arr) < 2 || arr[0] != "OK" {
		return false, fmt.Errorf("store: unexpected session reply %v", res)
	}
	return arr[1] == "1", nil
}

// RenewSessions implements sse.UserSource: one script per user shard and
// redisx.RenewBatch sessions, all in one pipeline.
func (s *Sessions) RenewSessions(ctx context.Context, ss []sse.Session) ([]sse.Session, error) {
	if len(ss) == 0 {
		return nil, nil
	}
	return redisx.RenewByUser(ctx, s.renewals(), ss, func(x sse.Session) string { return x.UserID },
		func(sh int, batch []sse.Session) redisx.Call { return sessionRenewCall{x: s, shard: sh, ss: batch} })
}

// UserLog implements sse.UserSource: tag must be the tag of the log's
// entry seq (its write's), or the history's for a position without an
// entry (0, or trimmed: the oldest entry is seq+1), as session_open's
// resume checks a cursor. The log holds up to its cap: so many may be
// replayed, whatever limit; they are read in pages (logAfter).
func (s *Sessions) UserLog(ctx context.Context, uid string, seq int64, tag string, limit int) ([]sse.UserEvent, bool, error) {
	logs := s.cfg.Logs
	es, gap, err := s.logAfter(ctx, uid, seq, tag, 0, max(limit, logs.Config().MaxLen), true)
	if err != nil || gap {
		return nil, gap, err
	}
	es, expired, err := logs.Resolve(ctx, uid, es)
	if err != nil || expired.N > 0 {
		// events past the offline TTL in what the stream has not written:
		// a gap (the client resumes into a snapshot that says resync)
		return nil, expired.N > 0, err
	}
	out := make([]sse.UserEvent, len(es))
	for i, e := range es {
		out[i] = sse.UserEvent{Seq: e.Seq, Tag: e.Tag, Data: e.Data}
	}
	return out, false, nil
}

// Replay bounds: session_open reads replayPage entries at most and its
// reply carries at most replayBytes of them (at least one); the rest of a
// replay, as every read of a user's log, is read replayPage entries at a
// time. A log holds up to its cap of entries of up to ~4 KiB each
// (rooms.MaxMessageData): read whole, in one script or one XRANGE, it held
// Redis for its whole reply (a tester's 1 000-entry log: 0.16-0.2 s an
// open, 4-6 s with 20 opens at once, every client of the Redis waiting).
const (
	replayBytes = 64 << 10
	replayPage  = 64
)

// logAfter reads uid's log after position seq, whose entry (or the
// history, for a position without an entry) carries tag, up to entry
// until (0: the last), in pages of replayPage entries, limit in all at
// most: unresolved (userlog.Log.Resolve). Each page after the first goes
// on from the last entry read, its write checked again. A position the
// log no longer serves (trimmed past it by new writes or another
// platform's ack, rewritten by another history after a failover lost it,
// more than limit behind the log), at the first page or any after it, is
// a gap (nil, true) when strict; else (the rest of an opening's replay,
// after the script's page) the read ends short there, without a gap, at
// what was read whole: the stream catches up from there at once and
// finds the gap (sse's openMe).
func (s *Sessions) logAfter(ctx context.Context, uid string, seq int64, tag string, until int64, limit int, strict bool) ([]userlog.Entry, bool, error) {
	k := s.cfg.Logs.KeysOf(uid)
	var es []userlog.Entry
	for first := true; ; first = false {
		p := s.b.Client.Pipeline()
		meta := p.HMGet(ctx, k.Meta, "seq", "tag")
		evs := p.XRangeN(ctx, k.Log, fmt.Sprintf("%d-0", seq), "+", replayPage+1)
		if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
			return nil, false, redisx.Wrap(err)
		}
		m := meta.Val()
		cur := redisx.Int(m[0])
		history, _ := m[1].(string)
		if until <= 0 || until > cur {
			until = cur
		}
		xs := evs.Val()
		// the limit is a strict read's (a catch-up's: the log too far ahead
		// of it is a gap); the rest of an opening's replay is bounded by it
		// below (a log longer than this instance's cap, written by one of
		// another cap or before it was lowered, replays limit events)
		ok := history != "" && cur >= seq && !(strict && first && until-seq > int64(limit))
		switch {
		case !ok:
		case len(xs) > 0 && xs[0].ID == fmt.Sprintf("%d-0", seq):
			ok = userlog.TagOf(xs[0], history) == tag
			xs = xs[1:]
		case tag != history || (seq < cur && (len(xs) == 0 || xs[0].ID != fmt.Sprintf("%d-0", seq+1))):
			ok = false
		}
		if !ok {
			return cut(es, strict)
		}
		for i, x := range xs {
			n := seq + 1 + int64(i)
			if n > until || len(es) == limit {
				return es, false, nil
			}
			if x.ID != fmt.Sprintf("%d-0", n) {
				return cut(es, strict)
			}
			d, _ := x.Values["d"].(string)
			ref, _ := x.Values["r"].(string)
			es = append(es, userlog.Entry{Seq: n, Tag: userlog.TagOf(x, history), Data: []byte(d), Ref: ref})
		}
		if len(xs) == 0 || len(es) == 0 || es[len(es)-1].Seq >= until {
			return es, false, nil
		}
		seq, tag = es[len(es)-1].Seq, es[len(es)-1].Tag
	}
}

// cut is how logAfter ends at a position the log no longer serves: a gap
// when strict, else what was read.
func cut(es []userlog.Entry, strict bool) ([]userlog.Entry, bool, error) {
	if strict {
		return nil, true, nil
	}
	return es, false, nil
}

// Replaced implements sse.UserSource: the tombstone of session ss, kept
// by the open that replaced it (session_open), as the live message
// carried it; ok false when there is none (not replaced by this release's
// open, or replaced longer than replacedKeep ago, or more than
// ReplacedKept replacements ago). A session replaced by an instance of
// an older release finds its session_replaced in the user's log instead
// (UserLog).
func (s *Sessions) Replaced(ctx context.Context, ss sse.Session) (sse.UserEvent, bool, error) {
	ms, err := s.b.Client.ZRange(ctx, s.replacedKey(ss.UserID), 0, -1).Result()
	if err != nil {
		return sse.UserEvent{}, false, redisx.Wrap(err)
	}
	for _, m := range ms {
		if id, ev, ok := strings.Cut(m, " "); ok && id == ss.ID {
			e, err := replacedEvent(ev)
			return e, err == nil, err
		}
	}
	return sse.UserEvent{}, false, nil
}

// replacedEvent is session_replaced's JSON as an sse.UserEvent: not
// logged (Notice), its Seq the log's position when it was published.
func replacedEvent(ev string) (sse.UserEvent, error) {
	var h players.UserEventHeader
	if err := json.Unmarshal([]byte(ev), &h); err != nil || h.Type != players.EventSessionReplaced {
		return sse.UserEvent{}, fmt.Errorf("store: malformed session_replaced %.60q", ev)
	}
	return sse.UserEvent{Seq: h.Seq, Data: []byte(ev), Notice: true}, nil
}

// Following implements sse.UserSource.
func (s *Sessions) Following(ctx context.Context, uid string) ([]string, error) {
	ids, err := s.b.Client.SMembers(ctx, s.followingKey(uid)).Result()
	slices.Sort(ids)
	return ids, redisx.Wrap(err)
}

// FollowingKey is the key of the set of the users uid follows, in uid's
// slot (store/tickets' match_found counts a leader uid does not follow).
func (s *Sessions) FollowingKey(uid string) string { return s.followingKey(uid) }

// StrangersFull implements matchmaking.Inboxes: whether uid's log would
// refuse an event of from past the strangers' share (userlog).
func (s *Sessions) StrangersFull(ctx context.Context, uid, from string) (bool, error) {
	return s.cfg.Logs.StrangersFull(ctx, uid, from, s.followingKey(uid))
}

// Follows implements players.Store: one SISMEMBER in uid's slot.
func (s *Sessions) Follows(ctx context.Context, uid, other string) (bool, error) {
	ok, err := s.b.Client.SIsMember(ctx, s.followingKey(uid), other).Result()
	return ok, redisx.Wrap(err)
}

// SetFollowing implements players.Store: it replaces the users uid follows
// (checked by the caller) and tells uid's personal streams, which then
// load them again.
func (s *Sessions) SetFollowing(ctx context.Context, uid string, ids []string) error {
	return redisx.Wrap(s.b.Runner.Run(ctx, followingSetCall{x: s, user: uid, ids: ids}).Err())
}

// Statuses implements sse.UserSource and players.Store: one HMGET per
// user, in one pipeline. A user without a status record who is still in
// the shard's online index had the record expire while online (no
// instance swept for the linger: every one was down) and reads offline
// at the version of the user's earliest lease expiry (lapsedVersion),
// later than any version the user had online; for those without a record
// only, statuses_lapsed asks the index, one call per shard on the index's
// node, comparing the leases with that node's clock (the one they were
// scored by; a keyless TIME would ask any Cluster node). The others without one were
// never seen, or offline longer than offlineStatusTTL: version 0.
func (s *Sessions) Statuses(ctx context.Context, uids []string) ([]players.Status, error) {
	if len(uids) == 0 {
		return nil, nil
	}
	p := s.b.Client.Pipeline()
	cmds := make([]*redis.SliceCmd, len(uids))
	for i, uid := range uids {
		cmds[i] = p.HMGet(ctx, s.statusKey(uid), "v", "p")
	}
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		return nil, redisx.Wrap(err)
	}
	out := make([]players.Status, len(uids))
	var absent []int
	for i, uid := range uids {
		v := cmds[i].Val()
		ver, _ := v[0].(string)
		ps, _ := v[1].(string)
		out[i] = ParseStatus(uid, ver+" "+ps)
		if ver == "" {
			absent = append(absent, i)
		}
	}
	return out, s.lapsedStatuses(ctx, out, absent)
}

// lapsedStatuses gives out[i] of each i of absent (no status record) the
// version of a status that lapsed while online, when the user is still in
// the shard's online index.
func (s *Sessions) lapsedStatuses(ctx context.Context, out []players.Status, absent []int) error {
	if len(absent) == 0 {
		return nil
	}
	// one call per shard, on the node of its online index: the leases'
	// clock is that node's, not this instance's nor another node's
	byShard := map[int][]int{}
	for _, i := range absent {
		sh := s.b.UserShard(out[i].UserID)
		byShard[sh] = append(byShard[sh], i)
	}
	calls := make([]redisx.Call, 0, len(byShard))
	of := make([][]int, 0, len(byShard))
	for sh, is := range byShard {
		c := statusesLapsedCall{key: s.OnlineKey(sh)}
		for _, i := range is {
			c.users = append(c.users, out[i].UserID)
		}
		calls, of = append(calls, c), append(of, is)
	}
	cmds, err := s.b.Runner.RunAll(ctx, calls)
	if err != nil {
		return redisx.Wrap(err)
	}
	for j, cmd := range cmds {
		// a lease still running is a session opened since the first read
		// (or one whose record is gone otherwise): not a lapsed status, and
		// its version, from the future, would hide the user's next
		// statuses from followers (a reviewer's find)
		ms, err := cmd.Int64Slice()
		if err != nil || len(ms) != len(of[j]) {
			return fmt.Errorf("store: statuses_lapsed replied %v: %w", cmd.Val(), redisx.Wrap(err))
		}
		for k, i := range of[j] {
			if ms[k] > 0 {
				out[i].Version = lapsedVersion(ms[k])
			}
		}
	}
	return nil
}

// lapsedVersion is the version of the offline status of a user whose
// status record lapsed while online, from the user's entry in the online
// index, the earliest lease expiry (ms of the Redis clock): in µs, it is
// above every version the user had online. Each version is the Redis
// clock (µs) of a change, and every script that changes the status purges
// the lapsed leases first and adds only later ones, so every lease left
// expires, and the index holds, a later ms than the last change's.
func lapsedVersion(earliestLeaseMs int64) int64 { return earliestLeaseMs * 1000 }

// ParseStatus reads a status "<version> <platforms>" of uid, as
// StatusChannel carries it.
func ParseStatus(uid, payload string) players.Status {
	v, p, _ := strings.Cut(payload, " ")
	st := players.Status{UserID: uid, Version: redisx.Int(v), Platforms: []string{}}
	if p != "" {
		st.Platforms = strings.Split(p, ",")
		st.Online = true
	}
	return st
}

// OnlineUsers counts the users shown online, over every shard: with a
// session, or a platform within its debounce (Config.Debounce).
func (s *Sessions) OnlineUsers(ctx context.Context) (int64, error) {
	p := s.b.Client.Pipeline()
	cmds := make([]*redis.IntCmd, s.b.Shards)
	for sh := range s.b.Shards {
		cmds[sh] = p.ZCard(ctx, s.OnlineKey(sh))
	}
	if _, err := p.Exec(ctx); err != nil {
		return 0, redisx.Wrap(err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// SweepBatch is the most users one sessions_sweep call handles. A script
// blocks Redis while it runs (every other client waits, their events
// too): a user taken offline costs about 20 µs of Redis time in the
// script with webhooks on, so a full batch holds Redis for 1–2 ms
// (BenchmarkDeadInstanceSweep: 10 000 users over 16 shards, 163 calls of
// 1.4 ms on average, the longest 2.4–4 ms, on a loaded 2-core machine),
// and a dead instance's 10 000 users go offline in one janitor pass of
// about 0.3 s. (One session_close a user, 100 users a shard and visit,
// as before: 7 passes, 60 µs a user.)
const SweepBatch = 64

// Sweep takes the shard's users whose earliest lease or deadline is due
// through sessions_sweep, SweepBatch at a time, as long as each batch
// comes back full and due and until the time until: their lapsed
// sessions are purged, the platforms those leave get their debounce
// deadline (Config.Debounce; 0: dropped at once), the platforms whose
// deadline passed are dropped, and their status follows, published when
// it changed. Returns how many users it found with a lapse (a platform
// whose leases lapsed: their instance died), the janitor's
// session_lapsed, counted when found; a drop at a deadline is not
// counted. The
// shard's janitor calls it on every visit that finds a user due in
// OnlineKey (its lease's script looks), so a dead instance's sessions
// lapse within the TTL and one visit, however many they are; until
// bounds a visit (the janitor's lease), the rest waits for the next.
// Sweeps may race (on several instances): each user's change is made,
// and announced, once.
func (s *Sessions) Sweep(ctx context.Context, shard int, until time.Time) (int, error) {
	n := 0
	for {
		due, err := s.b.Client.ZRangeByScore(ctx, s.OnlineKey(shard), &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(time.Now().UnixMilli(), 10), Count: SweepBatch}).Result()
		if err != nil || len(due) == 0 {
			return n, redisx.Wrap(err)
		}
		changed, found, err := s.sweep(ctx, shard, due)
		n += changed
		// a batch not full, or with users not due by the Redis clock
		// (this instance's runs ahead): nothing else is due yet
		if err != nil || len(due) < SweepBatch || found < len(due) || !time.Now().Before(until) {
			return n, err
		}
	}
}

// sweep runs sessions_sweep for users of shard; reports how many it found
// with a lapse and how many were due.
func (s *Sessions) sweep(ctx context.Context, shard int, users []string) (changed, due int, err error) {
	res, err := s.b.Runner.Run(ctx, sessionsSweepCall{x: s, shard: shard, users: users, now: time.Now()}).Result()
	if err != nil {
		return 0, 0, redisx.Wrap(err)
	}
	arr, _ := res.([]any)
	if len(arr) != 4 || arr[0] != "OK" {
		return 0, 0, fmt.Errorf("store: unexpected sweep reply %v", res)
	}
	return int(redisx.Int(arr[1])), int(redisx.Int(arr[2])), nil
}

// ParseUserEvent decodes a message of the user's channel: "E <seq> <tag>
// <json>", a logged event, or "R <json>", a session_replaced (not
// logged: Notice). The tag is a copy: a stream keeps the tags of the
// events it wrote, not the messages.
func ParseUserEvent(payload string) (sse.UserEvent, error) {
	if ev, ok := strings.CutPrefix(payload, "R "); ok {
		return replacedEvent(ev)
	}
	f := strings.SplitN(payload, " ", 4)
	if len(f) != 4 || f[0] != "E" {
		return sse.UserEvent{}, fmt.Errorf("store: malformed user event %.60q", payload)
	}
	return sse.UserEvent{Seq: redisx.Int(f[1]), Tag: strings.Clone(f[2]), Data: []byte(f[3])}, nil
}

package store

import (
	"context"
	_ "embed"
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

// Personal streams (GET /v1/me/events) and online status. Everything of a
// user lives in the slot of the user's shard (userShard), so each script
// touches one slot:
//   - sessions: zset "<platform>/<session>" scored by lease expiry (ms),
//     renewed by the hub with its other leases (session_renew, batched per
//     user shard at a third of the TTL); expires with its last lease;
//   - status: hash v (version, µs of the Redis clock, kept increasing) and
//     p (the platforms, "pc,web"); derived from the sessions by every
//     script that changes them and published on the user's status channel
//     only when p changed; deleted when the user goes offline; expires
//     statusLinger after the last lease (the janitor's sweep publishes
//     "offline" before that);
//   - the user's log, its meta and its delivery cursors per platform
//     (store/userlog: the personal events, also the user's offline inbox),
//     expiring REALSYNC_OFFLINE_TTL after the last event or open;
//   - following: a set of user ids, replaced by PUT /v1/me/following,
//     expiring followingTTL after the last PUT or stream open;
//   - the shard's online index: zset userId → the user's earliest lease
//     expiry. The janitor of the shard sweeps the users whose earliest
//     lease is due (session_close without a member): a dead instance's
//     sessions lapse and their users go offline (published) within the TTL
//     plus a janitor interval. Its size is the shard's online users.
// The user's channel carries the logged events ("E <seq> <tag> <json>")
// and control messages ("F": the following changed); the status channel
// "<version> <platforms>".

//go:embed lua/session_open.lua
var sessionOpenLua string

//go:embed lua/session_close.lua
var sessionCloseLua string

//go:embed lua/session_renew.lua
var sessionRenewLua string

//go:embed lua/following_set.lua
var followingSetLua string

var (
	sessionOpen  = plain("session_open", sessionOpenLua)
	sessionClose = plain("session_close", sessionCloseLua)
	sessionRenew = plain("session_renew", sessionRenewLua)
	followingSet = plain("following_set", followingSetLua)
)

const (
	// followingTTL: a user's following expires this long after it was last
	// set or a personal stream of the user opened.
	followingTTL = 30 * 24 * time.Hour
	// statusLinger: a status outlives its user's last lease by this much,
	// so that the janitor's sweep of a dead instance's sessions still finds
	// it and publishes "offline" (then deletes it).
	statusLinger = 10 * time.Minute
)

var (
	_ players.Inbox  = (*Store)(nil)
	_ sse.UserSource = (*Store)(nil)
	_ sse.UserFeed   = (*Feed)(nil)
)

func (k keys) sessions(shard int, uid string) string  { return k.tag(shard) + ":sess:" + uid }
func (k keys) status(shard int, uid string) string    { return k.tag(shard) + ":status:" + uid }
func (k keys) following(shard int, uid string) string { return k.tag(shard) + ":follow:" + uid }
func (k keys) online(shard int) string                { return k.tag(shard) + ":online" }

// statusChannel carries a user's status changes (the user's channel,
// userlog.Keys.Channel, the logged events and control messages).
func (k keys) statusChannel(shard int, uid string) string { return k.tag(shard) + ":st:" + uid }

const (
	userChannelInfix   = "}:uch:"
	statusChannelInfix = "}:st:"
)

func sessionMember(s sse.Session) string { return s.Platform + "/" + s.ID }

// sessionOpenCall is session_open.lua's descriptor.
type sessionOpenCall struct {
	keys    keys
	shard   int
	s       sse.Session
	policy  players.Policy
	ttl     time.Duration
	quota   int
	pubcmd  string
	cursor  sse.Cursor
	limit   int
	now     time.Time
	newTag  string
	log     userlog.Keys
	logTTL  time.Duration
	maxLen  int
	offline int // the most events replayed without a cursor
	follows time.Duration
	// outbox is the user shard's webhook outbox, outboxLen its MAXLEN ~;
	// 0: webhooks off (no outbox key, ARGV[19] "").
	outbox    string
	outboxLen int
}

func (sessionOpenCall) Script() *redisx.Script { return sessionOpen }

func (c sessionOpenCall) KeysArgs() ([]string, []any) {
	k, sh, u := c.keys, c.shard, c.s.UserID
	keys := []string{k.sessions(sh, u), k.status(sh, u), c.log.Log, c.log.Meta, k.online(sh),
		k.userStreams(sh, u), k.following(sh, u), c.log.Cursors}
	cseq, ctag := "", ""
	if c.cursor.Verifiable() {
		cseq, ctag = fmt.Sprint(c.cursor.Version), c.cursor.Tag
	}
	args := []any{u, c.s.Platform, c.s.ID, string(c.policy), c.ttl.Milliseconds(), c.quota,
		c.log.Channel, k.statusChannel(sh, u), c.pubcmd, c.maxLen, c.logTTL.Milliseconds(), c.newTag,
		cseq, ctag, c.limit, c.now.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano), c.follows.Milliseconds(),
		statusLinger.Milliseconds(), outboxArg(c.outboxLen), c.offline}
	if c.outboxLen > 0 {
		keys = append(keys, c.outbox)
	}
	return keys, args
}

// outboxArg is a session script's outbox MAXLEN argument: "" when webhooks
// are off.
func outboxArg(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// OpenSession implements sse.UserSource. The log holds up to its cap: so
// many events may be replayed, whatever limit.
func (s *Store) OpenSession(ctx context.Context, ss sse.Session, c sse.Cursor, limit int) (sse.UserOpening, error) {
	limit = max(limit, s.ulog.Config().MaxLen)
	if err := players.CheckPlatform(ss.Platform); err != nil {
		return sse.UserOpening{}, err
	}
	call := sessionOpenCall{keys: s.keys, shard: redisx.UserShard(ss.UserID, s.shards), s: ss, policy: s.sessionPolicy,
		ttl: s.presenceTTL, quota: s.quotas.StreamsPerUser, pubcmd: s.pubcmd, cursor: c, limit: limit,
		now: time.Now(), newTag: eventTag(), log: s.ulog.KeysOf(ss.UserID), logTTL: s.ulog.Config().TTL,
		maxLen: s.ulog.Config().MaxLen, offline: s.ulog.Config().MaxLen, follows: followingTTL, outboxLen: s.outboxLen}
	if s.outboxLen > 0 {
		call.outbox = s.keys.webhookOutbox(call.shard)
	}
	res, err := s.runner.Run(ctx, call).Result()
	if err != nil {
		return sse.UserOpening{}, redisx.Wrap(err)
	}
	arr, _ := res.([]any)
	if len(arr) == 0 {
		return sse.UserOpening{}, fmt.Errorf("store: unexpected session reply %v", res)
	}
	switch st, _ := arr[0].(string); st {
	case "OK":
	case "SESSION_EXISTS":
		return sse.UserOpening{}, fmt.Errorf("%w (platform %s)", players.ErrSessionExists, ss.Platform)
	case "STREAM_LIMIT":
		return sse.UserOpening{}, fmt.Errorf("%w (%d)", rooms.ErrStreamLimit, s.quotas.StreamsPerUser)
	default:
		return sse.UserOpening{}, fmt.Errorf("store: unexpected session reply %v", arr)
	}
	o := sse.UserOpening{Seq: atoi64(arr[1].(string)), Tag: arr[2].(string), Gap: arr[3] == "1",
		Replaced: int(atoi64(arr[4].(string))), From: atoi64(arr[5].(string))}
	es := make([]userlog.Entry, 0, len(arr)-6)
	for i, d := range arr[6:] {
		str, _ := d.(string)
		es = append(es, userlog.EntryOf(o.From+1+int64(i), str))
	}
	if es, err = s.ulog.Resolve(ctx, ss.UserID, es); err != nil {
		return sse.UserOpening{}, err
	}
	for _, e := range es {
		o.Replay = append(o.Replay, sse.UserEvent{Seq: e.Seq, Tag: o.Tag, Data: e.Data})
	}
	return o, nil
}

// Delivered implements sse.UserSource, even when ctx is done.
func (s *Store) Delivered(ctx context.Context, ss sse.Session, tag string, seq int64) error {
	_, err := s.ulog.Ack(context.WithoutCancel(ctx), ss.UserID, ss.Platform, tag, seq)
	return err
}

// Send implements players.Inbox.
func (s *Store) Send(ctx context.Context, uid string, ev any) error {
	_, err := s.ulog.SendEvent(ctx, uid, ev)
	return err
}

// SendToMany implements players.Inbox: the body stored once.
func (s *Store) SendToMany(ctx context.Context, uids []string, ev any) error {
	return s.ulog.SendToMany(ctx, uids, ev)
}

// UserLogs returns the personal logs (store/userlog), for the concept
// packages that send personal events (tickets' match_found).
func (s *Store) UserLogs() *userlog.Log { return s.ulog }

// CloseSession implements sse.UserSource, even when ctx is done.
func (s *Store) CloseSession(ctx context.Context, ss sse.Session) error {
	_, err := s.closeSession(context.WithoutCancel(ctx), ss.UserID, sessionMember(ss))
	return err
}

// closeSession runs session_close for member ("" only purges the lapsed
// leases); reports whether the status changed.
func (s *Store) closeSession(ctx context.Context, uid, member string) (bool, error) {
	sh := redisx.UserShard(uid, s.shards)
	call := sessionCloseCall{keys: s.keys, shard: sh, user: uid, member: member, pubcmd: s.pubcmd,
		now: time.Now(), outboxLen: s.outboxLen}
	if s.outboxLen > 0 {
		call.outbox = s.keys.webhookOutbox(sh)
	}
	arr, err := s.result(ctx, call)
	if err != nil {
		return false, err
	}
	return arr[0] == "1", nil
}

// sessionCloseCall is session_close.lua's descriptor: member
// "<platform>/<session>" of user, or "" to purge the lapsed leases only.
type sessionCloseCall struct {
	keys         keys
	shard        int
	user, member string
	pubcmd       string
	now          time.Time
	// outbox and outboxLen as sessionOpenCall's.
	outbox    string
	outboxLen int
}

func (sessionCloseCall) Script() *redisx.Script { return sessionClose }

func (c sessionCloseCall) KeysArgs() ([]string, []any) {
	k, sh, u := c.keys, c.shard, c.user
	keys := []string{k.sessions(sh, u), k.status(sh, u), k.online(sh), k.userStreams(sh, u)}
	if c.outboxLen > 0 {
		keys = append(keys, c.outbox)
	}
	return keys, []any{u, c.member, k.statusChannel(sh, u), c.pubcmd,
		c.now.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano), outboxArg(c.outboxLen)}
}

// sessionRenewCall is session_renew.lua's descriptor: the sessions ss of
// one user shard.
type sessionRenewCall struct {
	keys        keys
	shard       int
	ss          []sse.Session
	ttl, linger time.Duration
	quota       bool
}

func (sessionRenewCall) Script() *redisx.Script { return sessionRenew }

func (c sessionRenewCall) KeysArgs() ([]string, []any) {
	quota := "0"
	if c.quota {
		quota = "1"
	}
	keys := []string{c.keys.online(c.shard)}
	args := []any{c.ttl.Milliseconds(), quota, c.linger.Milliseconds()}
	for _, x := range c.ss {
		keys = append(keys, c.keys.sessions(c.shard, x.UserID), c.keys.status(c.shard, x.UserID), c.keys.userStreams(c.shard, x.UserID))
		args = append(args, x.UserID, sessionMember(x))
	}
	return keys, args
}

// followingSetCall is following_set.lua's descriptor.
type followingSetCall struct {
	keys    keys
	shard   int
	user    string
	channel string // the user's
	ids     []string
	pubcmd  string
}

func (followingSetCall) Script() *redisx.Script { return followingSet }

func (c followingSetCall) KeysArgs() ([]string, []any) {
	args := []any{followingTTL.Milliseconds(), c.channel, c.pubcmd}
	for _, id := range c.ids {
		args = append(args, id)
	}
	return []string{c.keys.following(c.shard, c.user)}, args
}

// RenewSessions implements sse.UserSource: one script per user shard and
// renewBatch sessions, all in one pipeline.
func (s *Store) RenewSessions(ctx context.Context, ss []sse.Session) ([]sse.Session, error) {
	if len(ss) == 0 {
		return nil, nil
	}
	return renewByUser(ctx, s, ss, func(x sse.Session) string { return x.UserID },
		func(sh int, batch []sse.Session) redisx.Call {
			return sessionRenewCall{keys: s.keys, shard: sh, ss: batch, ttl: s.presenceTTL,
				linger: statusLinger, quota: s.capsStreams()}
		})
}

// UserLog implements sse.UserSource.
// The log holds up to its cap: so many may be replayed, whatever limit.
func (s *Store) UserLog(ctx context.Context, uid string, seq int64, tag string, limit int) ([]sse.UserEvent, bool, error) {
	limit = max(limit, s.ulog.Config().MaxLen)
	p := s.client.Pipeline()
	k := s.ulog.KeysOf(uid)
	meta := p.HMGet(ctx, k.Meta, "seq", "tag")
	evs := p.XRangeN(ctx, k.Log, fmt.Sprintf("(%d-0", seq), "+", int64(limit))
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		return nil, false, redisx.Wrap(err)
	}
	m := meta.Val()
	cur, _ := m[0].(string)
	t, _ := m[1].(string)
	if t != tag || atoi64(cur) < seq || atoi64(cur)-seq > int64(limit) {
		return nil, true, nil
	}
	var es []userlog.Entry
	for i, x := range evs.Val() {
		if x.ID != fmt.Sprintf("%d-0", seq+1+int64(i)) {
			return nil, true, nil
		}
		d, _ := x.Values["d"].(string)
		ref, _ := x.Values["r"].(string)
		es = append(es, userlog.Entry{Seq: seq + 1 + int64(i), Data: []byte(d), Ref: ref})
	}
	es, err := s.ulog.Resolve(ctx, uid, es)
	if err != nil {
		return nil, false, err
	}
	out := make([]sse.UserEvent, len(es))
	for i, e := range es {
		out[i] = sse.UserEvent{Seq: e.Seq, Tag: t, Data: e.Data}
	}
	return out, false, nil
}

// Following implements sse.UserSource.
func (s *Store) Following(ctx context.Context, uid string) ([]string, error) {
	ids, err := s.client.SMembers(ctx, s.keys.following(redisx.UserShard(uid, s.shards), uid)).Result()
	slices.Sort(ids)
	return ids, redisx.Wrap(err)
}

// SetFollowing replaces the users uid follows (checked by the caller) and
// tells uid's personal streams, which then load them again.
func (s *Store) SetFollowing(ctx context.Context, uid string, ids []string) error {
	return redisx.Wrap(s.runner.Run(ctx, followingSetCall{keys: s.keys, shard: redisx.UserShard(uid, s.shards), user: uid,
		channel: s.ulog.KeysOf(uid).Channel, ids: ids, pubcmd: s.pubcmd}).Err())
}

// Statuses implements sse.UserSource: one HMGET per user, in one pipeline.
func (s *Store) Statuses(ctx context.Context, uids []string) ([]players.Status, error) {
	if len(uids) == 0 {
		return nil, nil
	}
	p := s.client.Pipeline()
	cmds := make([]*redis.SliceCmd, len(uids))
	for i, uid := range uids {
		cmds[i] = p.HMGet(ctx, s.keys.status(redisx.UserShard(uid, s.shards), uid), "v", "p")
	}
	if _, err := p.Exec(ctx); err != nil && err != redis.Nil {
		return nil, redisx.Wrap(err)
	}
	out := make([]players.Status, len(uids))
	for i, uid := range uids {
		v := cmds[i].Val()
		ver, _ := v[0].(string)
		ps, _ := v[1].(string)
		out[i] = parseStatus(uid, ver+" "+ps)
	}
	return out, nil
}

// parseStatus reads a status "<version> <platforms>" of uid.
func parseStatus(uid, payload string) players.Status {
	v, p, _ := strings.Cut(payload, " ")
	st := players.Status{UserID: uid, Version: atoi64(v), Platforms: []string{}}
	if p != "" {
		st.Platforms = strings.Split(p, ",")
		st.Online = true
	}
	return st
}

// OnlineUsers counts the users with a session, over every shard.
func (s *Store) OnlineUsers(ctx context.Context) (int64, error) {
	p := s.client.Pipeline()
	cmds := make([]*redis.IntCmd, s.shards)
	for sh := range s.shards {
		cmds[sh] = p.ZCard(ctx, s.keys.online(sh))
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

// sweepSessions purges the lapsed sessions of the shard's users whose
// earliest lease is due (up to sweepBatch): their status follows,
// published when it changed ("presence_offline" counts the changes).
func (s *Store) sweepSessions(ctx context.Context, shard int, rep Report) error {
	due, err := s.due(ctx, s.keys.online(shard))
	if err != nil {
		return err
	}
	for _, uid := range due {
		changed, err := s.closeSession(ctx, uid, "")
		if err != nil {
			return err
		}
		if changed {
			rep.add("session_lapsed", 1)
		}
	}
	return nil
}

// SubscribeUser implements sse.UserFeed.
func (f *Feed) SubscribeUser(ctx context.Context, uid string) error {
	sh := redisx.UserShard(uid, f.s.shards)
	return f.subscribe(ctx, sh, f.s.ulog.KeysOf(uid).Channel)
}

// UnsubscribeUser implements sse.UserFeed.
func (f *Feed) UnsubscribeUser(uid string) {
	sh := redisx.UserShard(uid, f.s.shards)
	f.unsubscribe(sh, f.s.ulog.KeysOf(uid).Channel)
}

// SubscribeStatus implements sse.UserFeed.
func (f *Feed) SubscribeStatus(ctx context.Context, uid string) error {
	sh := redisx.UserShard(uid, f.s.shards)
	return f.subscribe(ctx, sh, f.s.keys.statusChannel(sh, uid))
}

// UnsubscribeStatus implements sse.UserFeed.
func (f *Feed) UnsubscribeStatus(uid string) {
	sh := redisx.UserShard(uid, f.s.shards)
	f.unsubscribe(sh, f.s.keys.statusChannel(sh, uid))
}

// userMessage hands a message of a user or status channel to the sink;
// reports whether channel was one.
func (f *Feed) userMessage(channel, payload string) bool {
	us, ok := f.sink.(sse.UserSink)
	if _, uid, found := strings.Cut(channel, userChannelInfix); found {
		if ok {
			if payload == "F" {
				us.DeliverUser(uid, sse.UserEvent{Control: true})
			} else if e, err := parseUserEvent(payload); err == nil {
				us.DeliverUser(uid, e)
			}
		}
		return true
	}
	if _, uid, found := strings.Cut(channel, statusChannelInfix); found {
		if ok {
			us.DeliverStatus(parseStatus(uid, payload))
		}
		return true
	}
	return false
}

// userResubscribed tells the sink a user or status channel was
// resubscribed; reports whether channel was one.
func (f *Feed) userResubscribed(channel string) bool {
	us, ok := f.sink.(sse.UserSink)
	if _, uid, found := strings.Cut(channel, userChannelInfix); found {
		if ok {
			us.ResubscribedUser(uid)
		}
		return true
	}
	if _, uid, found := strings.Cut(channel, statusChannelInfix); found {
		if ok {
			us.ResubscribedStatus(uid)
		}
		return true
	}
	return false
}

// parseUserEvent decodes "E <seq> <tag> <json>".
func parseUserEvent(payload string) (sse.UserEvent, error) {
	f := strings.SplitN(payload, " ", 4)
	if len(f) != 4 || f[0] != "E" {
		return sse.UserEvent{}, fmt.Errorf("store: malformed user event %.60q", payload)
	}
	return sse.UserEvent{Seq: atoi64(f[1]), Tag: f[2], Data: []byte(f[3])}, nil
}

package sessions

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/userlog"
)

//go:embed lua/prelude.lua
var preludeLua string

//go:embed lua/session_open.lua
var sessionOpenLua string

//go:embed lua/session_close.lua
var sessionCloseLua string

//go:embed lua/sessions_sweep.lua
var sessionsSweepLua string

//go:embed lua/session_renew.lua
var sessionRenewLua string

//go:embed lua/following_set.lua
var followingSetLua string

//go:embed lua/party_members_add.lua
var partyMembersAddLua string

//go:embed lua/party_members_drop.lua
var partyMembersDropLua string

//go:embed lua/party_set.lua
var partySetLua string

//go:embed lua/party_leave.lua
var partyLeaveLua string

//go:embed lua/statuses_lapsed.lua
var statusesLapsedLua string

//go:embed lua/userstreams_open.lua
var userStreamsOpenLua string

//go:embed lua/userstreams_renew.lua
var userStreamsRenewLua string

//go:embed lua/userstreams_close.lua
var userStreamsCloseLua string

var (
	sessionOpen      = redisx.Plain("session_open", prelude()+sessionOpenLua)
	statusesLapsed   = redisx.ReadOnly("statuses_lapsed", statusesLapsedLua)
	sessionClose     = redisx.Plain("session_close", prelude()+sessionCloseLua)
	sessionsSweep    = redisx.Plain("sessions_sweep", prelude()+sessionsSweepLua)
	sessionRenew     = redisx.Plain("session_renew", prelude()+sessionRenewLua)
	followingSet     = redisx.Plain("following_set", followingSetLua)
	userStreamsOpen  = redisx.Plain("userstreams_open", userStreamsOpenLua)
	userStreamsRenew = redisx.Plain("userstreams_renew", userStreamsRenewLua)
	userStreamsClose = redisx.Idempotent("userstreams_close", userStreamsCloseLua)
	partyMembersAdd  = redisx.Idempotent("party_members_add", partyMembersAddLua)
	partyMembersDrop = redisx.Idempotent("party_members_drop", partyMembersDropLua)
	partySet         = redisx.Plain("party_set", partySetLua)
	partyLeaveScript = redisx.Plain("party_leave", partyLeaveLua)
)

// prelude is what runs in front of session_open, session_close,
// sessions_sweep and session_renew:
// PLATFORMS, players.Platforms in their order, STATUS_LINGER
// (statusLinger, ms), then lua/prelude.lua.
func prelude() string {
	quoted := make([]string, len(players.Platforms))
	for i, p := range players.Platforms {
		quoted[i] = "'" + p + "'"
	}
	return "local PLATFORMS = {" + strings.Join(quoted, ", ") + "}\n" +
		"local STATUS_LINGER = " + strconv.FormatInt(statusLinger.Milliseconds(), 10) + "\n" + preludeLua + "\n"
}

// sessionOpenCall is session_open.lua's descriptor: session s opens with
// cursor, replaying up to limit events (offline: the most replayed
// without a cursor); now is the event time, newTag a new log's tag.
type sessionOpenCall struct {
	x       *Sessions
	s       sse.Session
	cursor  sse.Cursor
	limit   int
	offline int
	now     time.Time
	newTag  string
}

func (sessionOpenCall) Script() *redisx.Script { return sessionOpen }

func (c sessionOpenCall) KeysArgs() ([]string, []any) {
	x, u := c.x, c.s.UserID
	shard := x.b.UserShard(u)
	log := x.cfg.Logs.KeysOf(u)
	keys := []string{x.sessionsKey(u), x.statusKey(u), log.Log, log.Meta, x.OnlineKey(shard),
		x.StreamsKey(u), x.followingKey(u), log.Cursors, x.replacedKey(u)}
	cseq, ctag := "", ""
	if c.cursor.Verifiable() {
		cseq, ctag = fmt.Sprint(c.cursor.Version), c.cursor.Tag
	}
	outbox, outboxLen := x.outbox(shard)
	args := []any{u, c.s.Platform, c.s.ID, string(x.cfg.Policy), x.cfg.TTL.Milliseconds(), x.cfg.StreamsPerUser,
		log.Channel, x.StatusChannel(u), x.b.PubCmd, x.cfg.Logs.Config().MaxLen, x.cfg.Logs.Config().TTL.Milliseconds(), c.newTag,
		cseq, ctag, c.limit, c.now.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano), followingTTLOf(u).Milliseconds(),
		statusLinger.Milliseconds(), outboxArg(outboxLen), c.offline, offlineStatusTTL.Milliseconds(),
		x.replacedKeep().Milliseconds(), ReplacedKept, replayBytes, replayPage, userlog.FirstInbox, x.cfg.Debounce.Milliseconds()}
	if outboxLen > 0 {
		keys = append(keys, outbox)
	}
	return keys, args
}

// outboxArg is a session script's outbox MAXLEN argument: "" when webhooks
// are off (no outbox key).
func outboxArg(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// sessionCloseCall is session_close.lua's descriptor: member
// "<platform>/<session>" of user, or "" to purge the lapsed leases only;
// now is the event time.
type sessionCloseCall struct {
	x            *Sessions
	user, member string
	now          time.Time
}

func (sessionCloseCall) Script() *redisx.Script { return sessionClose }

func (c sessionCloseCall) KeysArgs() ([]string, []any) {
	x, u := c.x, c.user
	shard := x.b.UserShard(u)
	keys := []string{x.sessionsKey(u), x.statusKey(u), x.OnlineKey(shard), x.StreamsKey(u)}
	outbox, outboxLen := x.outbox(shard)
	if outboxLen > 0 {
		keys = append(keys, outbox)
	}
	return keys, []any{u, c.member, x.StatusChannel(u), x.b.PubCmd,
		c.now.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano), outboxArg(outboxLen), offlineStatusTTL.Milliseconds(),
		x.cfg.Debounce.Milliseconds()}
}

// sessionsSweepCall is sessions_sweep.lua's descriptor: the users of one
// shard whose earliest lease is due; now is the event time.
type sessionsSweepCall struct {
	x     *Sessions
	shard int
	users []string
	now   time.Time
}

func (sessionsSweepCall) Script() *redisx.Script { return sessionsSweep }

func (c sessionsSweepCall) KeysArgs() ([]string, []any) {
	x := c.x
	keys := []string{x.OnlineKey(c.shard)}
	outbox, outboxLen := x.outbox(c.shard)
	if outboxLen > 0 {
		keys = append(keys, outbox)
	}
	args := []any{x.b.PubCmd, c.now.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano), outboxArg(outboxLen),
		offlineStatusTTL.Milliseconds(), x.cfg.Debounce.Milliseconds()}
	for _, u := range c.users {
		keys = append(keys, x.sessionsKey(u), x.statusKey(u))
		args = append(args, u, x.StatusChannel(u))
	}
	return keys, args
}

// sessionRenewCall is session_renew.lua's descriptor: the sessions ss of
// one user shard.
type sessionRenewCall struct {
	x     *Sessions
	shard int
	ss    []sse.Session
}

func (sessionRenewCall) Script() *redisx.Script { return sessionRenew }

func (c sessionRenewCall) KeysArgs() ([]string, []any) {
	quota := "0"
	if c.x.capsStreams() {
		quota = "1"
	}
	keys := []string{c.x.OnlineKey(c.shard)}
	args := []any{c.x.cfg.TTL.Milliseconds(), quota, statusLinger.Milliseconds()}
	for _, s := range c.ss {
		keys = append(keys, c.x.sessionsKey(s.UserID), c.x.statusKey(s.UserID), c.x.StreamsKey(s.UserID))
		args = append(args, s.UserID, sessionMember(s))
	}
	return keys, args
}

// followingSetCall is following_set.lua's descriptor: user follows ids.
type followingSetCall struct {
	x    *Sessions
	user string
	ids  []string
}

func (followingSetCall) Script() *redisx.Script { return followingSet }

func (c followingSetCall) KeysArgs() ([]string, []any) {
	args := []any{followingTTLOf(c.user).Milliseconds(), c.x.cfg.Logs.KeysOf(c.user).Channel, c.x.b.PubCmd}
	for _, id := range c.ids {
		args = append(args, id)
	}
	return []string{c.x.followingKey(c.user)}, args
}

// streamTakeCall is userstreams_open.lua: member joins the user's open
// streams (key), at most limit at once, with a lease of ttlMs.
type streamTakeCall struct {
	key, member string
	limit       int
	ttlMs       int64
}

func (streamTakeCall) Script() *redisx.Script { return userStreamsOpen }
func (c streamTakeCall) KeysArgs() ([]string, []any) {
	return []string{c.key}, []any{c.member, c.limit, c.ttlMs}
}

// streamDropCall is userstreams_close.lua: member leaves the user's open
// streams (key).
type streamDropCall struct{ key, member string }

func (streamDropCall) Script() *redisx.Script { return userStreamsClose }
func (c streamDropCall) KeysArgs() ([]string, []any) {
	return []string{c.key}, []any{c.member}
}

// partyMembersAddCall is party_members_add.lua's descriptor: user listed
// in the leader's party members (key) until exp (ms), at now (ms), the
// list kept for ttl.
type partyMembersAddCall struct {
	key, user string
	exp, now  int64
	ttl       time.Duration
}

func (partyMembersAddCall) Script() *redisx.Script { return partyMembersAdd }
func (c partyMembersAddCall) KeysArgs() ([]string, []any) {
	return []string{c.key}, []any{c.user, c.exp, c.now, c.ttl.Milliseconds(), PartyMembersKept}
}

// partySetCall is party_set.lua's descriptor: the user's party (key)
// set to leader's, expiring at exp (ms) unless it holds an expiry as
// late, kept for ttl.
type partySetCall struct {
	key, leader string
	exp         int64
	ttl         time.Duration
}

func (partySetCall) Script() *redisx.Script { return partySet }
func (c partySetCall) KeysArgs() ([]string, []any) {
	return []string{c.key}, []any{c.exp, c.leader, c.ttl.Milliseconds()}
}

// partyLeaveCall is party_leave.lua's descriptor: the user's party (key)
// left.
type partyLeaveCall struct{ key string }

func (partyLeaveCall) Script() *redisx.Script { return partyLeaveScript }
func (c partyLeaveCall) KeysArgs() ([]string, []any) {
	return []string{c.key}, nil
}

// partyMembersDropCall is party_members_drop.lua's descriptor: user
// dropped from the leader's party members (key) while listed until exp
// (ms).
type partyMembersDropCall struct {
	key, user string
	exp       int64
}

func (partyMembersDropCall) Script() *redisx.Script { return partyMembersDrop }
func (c partyMembersDropCall) KeysArgs() ([]string, []any) {
	return []string{c.key}, []any{c.user, c.exp}
}

// statusesLapsedCall is statuses_lapsed.lua's descriptor: users of the
// shard whose online index is key.
type statusesLapsedCall struct {
	key   string
	users []string
}

func (statusesLapsedCall) Script() *redisx.Script { return statusesLapsed }
func (c statusesLapsedCall) KeysArgs() ([]string, []any) {
	args := make([]any, len(c.users))
	for i, u := range c.users {
		args[i] = u
	}
	return []string{c.key}, args
}

// Package ratelimit keeps RealSync's rate-limit counters in Redis: one GCRA
// script (lua/gcra_check.lua) per counter group, every group of a request
// sent in one pipeline, so a request costs one round trip however many
// counters it is checked on (on a Cluster, the pipeline's commands go to
// their nodes in parallel). It works on standalone Redis, Redis Cluster
// and the embedded store (miniredis runs the script: TIME, SET PX).
//
// Why not github.com/go-redis/redis_rate: it checks one key per call (a
// user's and an address's limit would be two round trips), cannot be
// pipelined (it reads each reply at once), and puts its keys under its own
// "rate:" prefix instead of the deployment's.
package ratelimit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/limits"
)

//go:embed lua/gcra_check.lua
var gcraCheckLua string

// gcraCheck is run only through run: EVALSHA, EVAL on NOSCRIPT.
var gcraCheck = redis.NewScript(gcraCheckLua)

// Config is what a Limiter needs.
type Config struct {
	Client redis.UniversalClient
	// Prefix is the deployment's key prefix (REALSYNC_KEY_PREFIX).
	Prefix string
	// RoomTag returns the hash tag of a room's keys (store.Store.RoomTag),
	// false for an id the deployment never issued: a room's counters live
	// beside the room. nil: a tag of the room id's own.
	RoomTag func(roomID string) (string, bool)
	// LeaseTTL is how long this instance may count requests it took from
	// a user's or address's counter ahead (lease.go); 0: every request is
	// counted in Redis.
	LeaseTTL time.Duration
	// Checked, when set, is told where each counted check was decided:
	// "instance" (from a lease) or "redis". Safe for concurrent use.
	Checked func(where string)
}

// Limiter implements the api's rate limiter on Redis. Safe for concurrent
// use.
type Limiter struct {
	client  redis.UniversalClient
	prefix  string
	roomTag func(string) (string, bool)
	leases  *leaseTable // nil: no leases
	checked func(string)
}

// New returns a limiter on cfg.Client.
func New(cfg Config) *Limiter {
	tag := cfg.RoomTag
	if tag == nil {
		tag = func(id string) (string, bool) { return "{" + cfg.Prefix + ":rl:" + id + "}", true }
	}
	l := &Limiter{client: cfg.Client, prefix: cfg.Prefix, roomTag: tag, checked: cfg.Checked}
	if cfg.LeaseTTL > 0 {
		l.leases = newLeaseTable(cfg.LeaseTTL)
	}
	if l.checked == nil {
		l.checked = func(string) {}
	}
	return l
}

// Keys:
//
//	<prefix>:rl:{u:<userId>}:<name>@<limit>          a user's counter
//	<prefix>:rl:{ip:<address>}:<name>@<limit>        a client address's counter
//	<room tag>:rl:<roomId>:<name>@<limit>    a room's counter, in the room's slot
//	<room tag>:rl:<roomId>:<name>@<limit>:m:<userId>   a member's share of it
//
// Each holds the counter's TAT (µs) and expires when it has drained. A
// counter's TAT means something only under the settings that wrote it, so
// its key names them (<limit>: the interval in µs, "x", the burst): a
// limit changed (a restart with other REALSYNC_RATE_LIMITS) starts a
// counter of its own, and the old one drains away. One counter read
// under two settings either locked a client out after a limit was raised
// (the old TAT read against the new rate: an hour for guests) or, taken
// as a full burst of the new limit, let instances of a laxer setting
// reset it for those of a stricter one during a rolling change.

// key is the key of c's counter; false for a room id the deployment never
// issued or an unknown scope (no counter).
func (l *Limiter) key(c limits.Check) (string, bool) {
	switch c.Scope {
	case limits.User:
		return l.prefix + ":rl:{u:" + c.Subject + "}:" + counterName(c), true
	case limits.IP:
		return l.prefix + ":rl:{ip:" + c.Subject + "}:" + counterName(c), true
	case limits.Room:
		tag, ok := l.roomTag(c.Subject)
		if !ok {
			return "", false
		}
		return tag + ":rl:" + c.Subject + ":" + counterName(c), true
	}
	return "", false
}

// counterName is c's limit's name and settings, "<name>@<interval µs>x<burst>".
func counterName(c limits.Check) string {
	return c.Name + "@" + strconv.FormatInt(c.Limit.Interval().Microseconds(), 10) + "x" + strconv.Itoa(c.Limit.Burst)
}

// call is what gcra_check.lua takes for c, whose counter is key: the keys
// (a member's share after the room's counter) and its arguments, how
// (the mode, or "lease") then, per key, the interval (µs) and the burst;
// capacity is left for a lease's three more.
func call(c limits.Check, key, how string) ([]string, []any) {
	if c.Scope == limits.Room && c.Member != "" {
		share := limits.MemberShare(c.Limit)
		return []string{key, key + ":m:" + c.Member},
			[]any{how, c.Limit.Interval().Microseconds(), c.Limit.Burst, share.Interval().Microseconds(), share.Burst}
	}
	args := make([]any, 3, 6)
	args[0], args[1], args[2] = how, c.Limit.Interval().Microseconds(), c.Limit.Burst
	return []string{key}, args
}

// Do applies mode to every check in one pipeline and returns one decision
// per check, in order: Start, then its finish when it returns one.
// Errors: Redis failures (nothing is known then).
func (l *Limiter) Do(ctx context.Context, mode limits.Mode, checks []limits.Check) ([]limits.Decision, error) {
	out, finish := l.Start(mode, checks)
	if finish == nil {
		return out, nil
	}
	return finish(ctx)
}

// Start applies mode to every check, one decision per check, in order. A
// Room check with a Member is decided on both counters at once: allowed
// when both allow, the smaller remaining, the longer waits. A check whose
// room id the deployment never issued, or of an unknown scope, or with a
// zero limit, is allowed without a counter. With leases on, a Take of a
// user's or address's counter may be decided here from requests taken
// ahead (lease.go), its remaining then counting them. When every check is
// decided so, Start returns the decisions and a nil finish, without a
// round trip; otherwise finish sends the rest in one pipeline and returns
// every decision (errors: Redis failures, nothing known then). A finish
// returned must be called exactly once: a lease it fetches is told its
// answer, or its failure, only there.
func (l *Limiter) Start(mode limits.Mode, checks []limits.Check) ([]limits.Decision, func(context.Context) ([]limits.Decision, error)) {
	out := make([]limits.Decision, len(checks))
	var calls []sent
	now := time.Now()
	for i, c := range checks {
		out[i] = limits.Decision{Allowed: true}
		if c.Limit.Zero() {
			continue
		}
		key, ok := l.key(c)
		if !ok {
			continue
		}
		e := l.lease(mode, c, key, now)
		if e != nil {
			if d, ok := e.spend(now, l.leases.ttl); ok {
				out[i] = d
				l.checked("instance")
				continue
			}
		}
		if e != nil {
			keys, args := call(c, key, "lease")
			n, back, fetching := e.want(c.Limit)
			calls = append(calls, sent{i, keys, append(args, n, back.n, back.tat), e, fetching, leaseLife(c.Limit, l.leases.ttl)})
			continue
		}
		keys, args := call(c, key, string(mode))
		calls = append(calls, sent{i, keys, args, nil, false, 0})
	}
	if len(calls) == 0 {
		return out, nil
	}
	return out, func(ctx context.Context) ([]limits.Decision, error) {
		return l.finish(ctx, mode, now, out, calls)
	}
}

// sent is a check Start left to Redis.
type sent struct {
	i        int
	keys     []string
	args     []any
	lease    *lease
	fetching bool          // of the lease: abort or grant must end it
	life     time.Duration // of the lease
}

// finish sends calls in one pipeline and fills out with their decisions.
func (l *Limiter) finish(ctx context.Context, mode limits.Mode, now time.Time, out []limits.Decision, calls []sent) ([]limits.Decision, error) {
	granted := false
	defer func() {
		if granted {
			return
		}
		for _, c := range calls {
			if c.fetching {
				c.lease.abort()
			}
		}
	}()
	cmds, err := l.run(ctx, len(calls), func(p redis.Pipeliner, i int, eval bool) *redis.Cmd {
		if eval {
			return gcraCheck.Eval(ctx, p, calls[i].keys, calls[i].args...)
		}
		return gcraCheck.EvalSha(ctx, p, calls[i].keys, calls[i].args...)
	})
	if err != nil {
		return nil, err
	}
	decisions := make([]limits.Decision, len(cmds))
	grants := make([]leaseGrant, len(cmds))
	for j, cmd := range cmds {
		if decisions[j], grants[j], err = decode(cmd, calls[j].lease != nil); err != nil {
			return nil, err
		}
	}
	granted = true
	for j, c := range calls {
		d := decisions[j]
		if c.lease != nil {
			d = c.lease.grant(d, grants[j], c.fetching, now, c.life)
		}
		if mode == limits.Take {
			l.checked("redis")
		}
		out[c.i] = d
	}
	return out, nil
}

// lease is c's lease when a check in mode may be counted from one (nil:
// leases off, a check never leased, or the table full).
func (l *Limiter) lease(mode limits.Mode, c limits.Check, key string, now time.Time) *lease {
	if mode != limits.Take || l.leases == nil || !leasable(c) {
		return nil
	}
	return l.leases.get(key, now)
}

// run sends n script calls in one pipeline with EVALSHA; the calls Redis
// answered NOSCRIPT (after a restart or SCRIPT FLUSH; on a Cluster, a node
// that never ran it) go again with EVAL, which loads the script. A NOSCRIPT
// call changed nothing, and only those are sent again, so nothing is
// counted twice.
func (l *Limiter) run(ctx context.Context, n int, call func(p redis.Pipeliner, i int, eval bool) *redis.Cmd) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, n)
	p := l.client.Pipeline()
	for i := range n {
		cmds[i] = call(p, i, false)
	}
	p.Exec(ctx) // each command's own error is looked at below
	var again []int
	for i, c := range cmds {
		if err := c.Err(); err != nil {
			if !redis.HasErrorPrefix(err, "NOSCRIPT") {
				return nil, fmt.Errorf("rate limit check: %w", err)
			}
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return cmds, nil
	}
	p = l.client.Pipeline()
	for _, i := range again {
		cmds[i] = call(p, i, true)
	}
	if _, err := p.Exec(ctx); err != nil {
		return nil, fmt.Errorf("rate limit check: %w", err)
	}
	return cmds, nil
}

// decode reads {"OK"|"LIMITED", then per counter: allowed, remaining,
// retry µs, reset µs} into one decision (the worst of the counters); a
// lease's reply ends with the requests it took and the TAT it left.
func decode(cmd *redis.Cmd, lease bool) (d limits.Decision, g leaseGrant, err error) {
	v, err := cmd.Slice()
	if err != nil {
		return limits.Decision{}, g, err
	}
	if lease {
		if len(v) != 7 {
			return limits.Decision{}, g, errors.New("rate limit check: malformed lease reply")
		}
		n, err := toInt(v[5])
		if err != nil {
			return limits.Decision{}, g, err
		}
		if g.tat, err = toInt(v[6]); err != nil {
			return limits.Decision{}, g, err
		}
		g.taken, v = int(n), v[:5]
	}
	if len(v) < 5 || (len(v)-1)%4 != 0 {
		return limits.Decision{}, g, errors.New("rate limit check: malformed reply")
	}
	d = limits.Decision{Allowed: true, Remaining: -1}
	for i := 1; i < len(v); i += 4 {
		n := [4]int64{}
		for j := range n {
			n[j], err = toInt(v[i+j])
			if err != nil {
				return limits.Decision{}, g, err
			}
		}
		d.Allowed = d.Allowed && n[0] == 1
		if d.Remaining < 0 || int(n[1]) < d.Remaining {
			d.Remaining = int(n[1])
		}
		d.Retry = max(d.Retry, time.Duration(n[2])*time.Microsecond)
		d.Reset = max(d.Reset, time.Duration(n[3])*time.Microsecond)
	}
	return d, g, nil
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("rate limit check: unexpected %T in reply", v)
}

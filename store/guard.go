package store

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/conn"
	"github.com/realsync/realsync/store/internal/redisx"
)

// guard is what the janitor's checks of Redis itself (not of the rooms)
// last found: the layout record (guardLayout) and the masters' eviction
// policies (guardEviction). Safe for concurrent use.
type guard struct {
	mu        sync.Mutex
	layoutErr error // the meta hash disagrees with this store: ErrLayout

	// policies is each master's maxmemory-policy as last read (address:
	// policy); refused: CONFIG GET was refused once (logged then)
	policies map[string]string
	refused  bool
	checking atomic.Bool // a guardEviction runs
}

// GuardMetrics is implemented by a Config.Metrics that reports what the
// janitor's checks of Redis found.
type GuardMetrics interface {
	// RedisEvictionUnsafe records whether a master, as last read, has an
	// evicting maxmemory-policy (anything but noeviction).
	RedisEvictionUnsafe(unsafe bool)
}

// safePolicy is the only maxmemory-policy that never evicts a key. A room
// is several keys kept consistent by the scripts: any evicting policy
// (allkeys-* and volatile-*: most keys have a TTL) takes one of them
// away and corrupts the room (a tester's allkeys-lru run: 218 invariant
// violations, no error anywhere).
const safePolicy = "noeviction"

// guardEvictionTimeout bounds a check of the policies.
const guardEvictionTimeout = 2 * time.Second

// startGuardEviction runs guardEviction in a goroutine of its own unless
// one still runs, so that a master that hangs (CONFIG GET unanswered for
// guardEvictionTimeout) never holds up the janitor's tick; wg counts it,
// so that the janitor waits for it before it returns.
func (s *Store) startGuardEviction(ctx context.Context, wg *sync.WaitGroup, log *slog.Logger) {
	if !s.guard.checking.CompareAndSwap(false, true) {
		return
	}
	wg.Go(func() {
		defer s.guard.checking.Store(false)
		s.guardEviction(ctx, log)
	})
}

// guardEviction reads maxmemory-policy (CONFIG GET) on the server, or on
// every master of a Cluster that serves the store's shards
// (conn.Masters), on every janitor tick (the first one within
// a second of the start), and reports to GuardMetrics whether one of them
// evicts. A policy found evicting, or changed, is logged at warn naming
// the node and policy; a node back to noeviction at info. CONFIG refused
// (an ACL without it, a managed Redis that renames or hides it) is logged
// once at info, reported to GuardMetrics as not evicting (not checked: a
// report of an evicting policy read before is withdrawn) and the check is
// not made again: nothing is refused, as a managed service may need its
// own policy. A node that cannot be reached
// keeps the policy last read. The embedded store never evicts and is not
// checked.
func (s *Store) guardEviction(ctx context.Context, log *slog.Logger) {
	if s.Embedded() {
		return
	}
	s.guard.mu.Lock()
	refused := s.guard.refused
	s.guard.mu.Unlock()
	if refused {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, guardEvictionTimeout)
	defer cancel()
	type answer struct {
		addr, policy string
		err          error
	}
	var mu sync.Mutex
	var answers []answer
	read := func(ctx context.Context, n *redis.Client) {
		res, err := n.ConfigGet(ctx, "maxmemory-policy").Result()
		mu.Lock()
		answers = append(answers, answer{n.Options().Addr, res["maxmemory-policy"], err})
		mu.Unlock()
	}
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		masters, err := conn.Masters(ctx, c, s.keys, s.shards)
		if err != nil {
			return // no layout yet: next tick
		}
		var wg sync.WaitGroup
		for _, m := range masters {
			wg.Go(func() { read(ctx, m) })
		}
		wg.Wait()
	case *redis.Client:
		read(ctx, c)
	default:
		return
	}
	s.guard.mu.Lock()
	defer s.guard.mu.Unlock()
	before := s.guard.policies
	now := map[string]string{}
	unsafe := false
	for _, a := range answers {
		switch {
		case configRefused(a.err):
			s.guard.refused = true
			s.guard.policies = nil
			if m, ok := s.metrics.(GuardMetrics); ok {
				m.RedisEvictionUnsafe(false) // not checked: as the metric's help says
			}
			log.Info("janitor: Redis refuses CONFIG GET maxmemory-policy; the eviction policy is not checked (it must be noeviction)",
				"node", a.addr, "err", a.err)
			return
		case a.err != nil: // unreachable, or not now: as last read
			if p, ok := before[a.addr]; ok {
				now[a.addr] = p
			}
		default:
			now[a.addr] = a.policy
		}
	}
	for addr, p := range now {
		if p != safePolicy && p != "" {
			unsafe = true
		}
		old, seen := before[addr]
		switch {
		case p == old || p == "":
		case p != safePolicy:
			log.Warn("Redis may evict keys: maxmemory-policy is not noeviction, and an evicted key corrupts a room; set maxmemory-policy noeviction",
				"node", addr, "policy", p)
		case seen:
			log.Info("Redis evicts no keys again: maxmemory-policy noeviction", "node", addr)
		}
	}
	s.guard.policies = now
	if m, ok := s.metrics.(GuardMetrics); ok {
		m.RedisEvictionUnsafe(unsafe)
	}
}

// Ready reports whether this instance should get traffic: the store's
// layout agrees with the one recorded in Redis (as the janitor last found
// it, see guardLayout), and Redis answers (Ping). Errors: ErrLayout, or
// Ping's.
func (s *Store) Ready(ctx context.Context) error {
	s.guard.mu.Lock()
	err := s.guard.layoutErr
	s.guard.mu.Unlock()
	if err != nil {
		return err
	}
	return s.Ping(ctx)
}

// guardLayout re-asserts the layout record on every janitor tick: the
// shard count and schema version that Init records (HSETNX) at an
// instance's start would otherwise be gone for good once Redis lost its
// data (a restart without persistence, a FLUSHALL), and an instance
// started then with another REALSYNC_SHARDS would be accepted and place
// rooms where the others never look. A record restored is logged at warn
// (Redis lost the data it had). A record that disagrees with this store
// (another instance wrote its own first, or an operator changed it) is
// logged at error once, and makes Ready fail with ErrLayout until the
// record agrees again: the instance leaves the load balancer's rotation
// rather than serve rooms laid out otherwise than the record says; it
// goes on answering the requests that still reach it. Redis unreachable
// changes nothing: the next tick checks again.
func (s *Store) guardLayout(ctx context.Context, log *slog.Logger) {
	restored, err := s.checkMeta(ctx)
	if err != nil && !errors.Is(err, ErrLayout) {
		return
	}
	if restored {
		log.Warn("janitor: the layout record was missing (Redis lost its data?), restored from this instance's settings",
			"key", s.keys.Meta(), "shards", s.shards, "schema", s.Schema())
	}
	// one janitor per store: nothing else writes layoutErr meanwhile; it
	// is logged before Ready sees it
	s.guard.mu.Lock()
	before := s.guard.layoutErr
	s.guard.mu.Unlock()
	switch {
	case err != nil && (before == nil || before.Error() != err.Error()):
		log.Error("janitor: the layout recorded in Redis disagrees with this instance's; /readyz answers 503 until it agrees",
			"key", s.keys.Meta(), "err", err)
	case err == nil && before != nil:
		log.Info("janitor: the layout recorded in Redis agrees with this instance's again", "key", s.keys.Meta())
	}
	s.guard.mu.Lock()
	s.guard.layoutErr = err
	s.guard.mu.Unlock()
}

// configRefused reports whether err is Redis refusing CONFIG GET for good
// (NOPERM, an unknown command where it is renamed or hidden), not a reply
// that means not now: LOADING and the others redisx.Unavailable knows,
// BUSY (a slow script runs: every command but a few is answered so until
// it ends) and NOAUTH (a connection not authenticated yet).
func configRefused(err error) bool {
	if err == nil || !serverError(err) || redisx.Unavailable(err) {
		return false
	}
	msg := err.Error()
	return !strings.HasPrefix(msg, "BUSY ") && !strings.HasPrefix(msg, "NOAUTH ")
}

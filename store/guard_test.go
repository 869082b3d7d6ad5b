package store_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/testlog"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/store"
)

// runJanitor runs s's janitor every 20 ms until tb ends, logging to the
// returned buffer (written by the janitor's goroutine, read by the test's).
func runJanitor(tb testing.TB, s *store.Store) *testlog.Buffer {
	tb.Helper()
	buf := &testlog.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.RunJanitor(ctx, "guard-test", 20*time.Millisecond, slog.New(slog.NewTextHandler(buf, nil)))
	}()
	tb.Cleanup(func() { cancel(); <-done })
	return buf
}

// Once Redis lost the layout record (a restart without persistence, a
// FLUSHALL), a running instance's janitor writes it again, so a store
// started with another shard count is refused as before; a record that
// disagrees with the running store (another instance's, written first)
// makes its Ready fail with ErrLayout, logged at error, until it agrees
// again.
func TestJanitorRestoresTheLayoutRecord(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s := openStore(t, b) // 8 shards
		meta := s.Prefix() + ":meta"
		if err := s.Client().Del(ctx, meta).Err(); err != nil {
			t.Fatal(err)
		}
		log := runJanitor(t, s)
		wait.Until(t, "the layout record is not restored", func() bool {
			v, _ := s.Client().HMGet(ctx, meta, "shards", "schema").Result()
			return len(v) == 2 && v[0] == "8" && v[1] != nil
		})
		wait.Until(t, "no warning that the layout record was restored", func() bool {
			return strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "layout record was missing")
		})
		if b.Name != "embedded" { // the embedded store is the process' own
			other, err := store.Open(ctx, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: s.Prefix(), Shards: 4})
			if err == nil {
				other.Close()
			}
			if !errors.Is(err, store.ErrLayout) {
				t.Fatalf("open with 4 shards after the record was restored: %v, want ErrLayout", err)
			}
		}
		if err := s.Ready(ctx); err != nil {
			t.Fatalf("Ready, the record agreeing: %v", err)
		}
		if err := s.Client().HSet(ctx, meta, "shards", 4).Err(); err != nil {
			t.Fatal(err)
		}
		wait.Until(t, "Ready does not fail with ErrLayout", func() bool { return errors.Is(s.Ready(ctx), store.ErrLayout) })
		wait.Until(t, "no error naming the recorded shard count", func() bool {
			return strings.Contains(log.String(), "level=ERROR") && strings.Contains(log.String(), "4 shards")
		})
		if err := s.Client().HSet(ctx, meta, "shards", 8).Err(); err != nil {
			t.Fatal(err)
		}
		wait.Until(t, "Ready still fails", func() bool { return s.Ready(ctx) == nil })
	})
}

// guardRecorder is a store.Metrics that keeps what GuardMetrics last got.
type guardRecorder struct{ unsafe atomic.Int32 } // -1: nothing yet, 0, 1

func (*guardRecorder) ScriptCall(string, string, time.Duration) {}
func (*guardRecorder) RedisError(string)                        {}
func (g *guardRecorder) RedisEvictionUnsafe(unsafe bool) {
	v := int32(0)
	if unsafe {
		v = 1
	}
	g.unsafe.Store(v)
}

var _ store.GuardMetrics = (*guardRecorder)(nil)

// guardedJanitor opens a store on b whose metrics are a guardRecorder
// (its report -1 until the first) and runs its janitor until tb ends; it
// returns the store, the recorder and the janitor's log.
func guardedJanitor(tb testing.TB, b redistest.Backend) (*store.Store, *guardRecorder, *testlog.Buffer) {
	tb.Helper()
	rec := &guardRecorder{}
	rec.unsafe.Store(-1)
	s := openStoreWith(tb, b, func(c *store.Config) { c.Metrics = rec })
	return s, rec, runJanitor(tb, s)
}

// The janitor reads maxmemory-policy on the server, or every Cluster
// master: an evicting policy (here allkeys-lru, then volatile-ttl on a
// Cluster master) is reported to GuardMetrics and logged at warn naming
// it; back to noeviction, the report says so. Servers of the test's own,
// as it changes their configuration.
func TestJanitorWarnsOfAnEvictingPolicy(t *testing.T) {
	srv, c := ownRedis(t)
	type backend struct {
		b     redistest.Backend
		node  string // the node whose policy changes; "": the master of shard 0
		evict string
	}
	backends := []backend{{redistest.Backend{Name: "standalone", URL: "redis://" + srv.Addr}, srv.Addr, "allkeys-lru"}}
	if c != nil {
		backends = append(backends, backend{redistest.Backend{Name: "cluster", ClusterAddrs: c.Addrs()}, "", "volatile-ttl"}) // shard 0's master
	}
	for _, be := range backends {
		t.Run(be.b.Name, func(t *testing.T) {
			ctx := context.Background()
			s, rec, log := guardedJanitor(t, be.b)
			wait.Until(t, "no report of a safe policy", func() bool { return rec.unsafe.Load() == 0 })
			if be.node == "" { // a master that serves the store (a fixed node may serve none of its 8 shards)
				m, err := s.Client().(*redis.ClusterClient).MasterForKey(ctx, s.Base().Tag(0))
				if err != nil {
					t.Fatal(err)
				}
				be.node = m.Options().Addr
			}
			node := redis.NewClient(&redis.Options{Addr: be.node})
			defer node.Close()
			set := func(policy string) {
				if err := node.ConfigSet(ctx, "maxmemory-policy", policy).Err(); err != nil {
					t.Fatal(err)
				}
			}
			set(be.evict)
			defer set("noeviction")
			wait.Until(t, "no report of the evicting policy", func() bool { return rec.unsafe.Load() == 1 })
			wait.Until(t, "no warning naming the policy and node", func() bool {
				l := log.String()
				return strings.Contains(l, "level=WARN") && strings.Contains(l, "policy="+be.evict) && strings.Contains(l, "node="+be.node)
			})
			set("noeviction")
			wait.Until(t, "the report still says evicting", func() bool { return rec.unsafe.Load() == 0 })
		})
	}
}

// A Redis that refuses CONFIG (an ACL without it, as a managed service
// may have) is not checked: one line at info says so, the store works on,
// and GuardMetrics is never told the policy is unsafe.
func TestJanitorGoesOnWithoutConfig(t *testing.T) {
	ctx := context.Background()
	b, _ := aclServer(t, []string{"--maxmemory-policy", "allkeys-lru"}, "noconfig", "+@all", "-config", "~*", "&*")
	s, rec, log := guardedJanitor(t, b)
	wait.Until(t, "no info line about CONFIG", func() bool { return strings.Contains(log.String(), "refuses CONFIG GET") })
	// the janitor went on: another visit restores a deleted layout record
	if err := s.Client().Del(ctx, s.Prefix()+":meta").Err(); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the janitor stopped", func() bool { return s.Client().Exists(ctx, s.Prefix()+":meta").Val() == 1 })
	l := log.String()
	if n := strings.Count(l, "refuses CONFIG GET"); n != 1 || !strings.Contains(l, "level=INFO") || strings.Contains(l, "level=WARN msg=\"Redis may evict") {
		t.Errorf("log %q, want one info line about CONFIG and no eviction warning", l)
	}
	if v := rec.unsafe.Load(); v == 1 {
		t.Errorf("GuardMetrics told unsafe (%d) though the policy could not be read", v)
	}
}

// heldRecorder is a store.Metrics whose first RedisEvictionUnsafe call
// (the janitor's first policy check) signals entered and waits for release.
type heldRecorder struct {
	once             sync.Once
	entered, release chan struct{}
}

func (*heldRecorder) ScriptCall(string, string, time.Duration) {}
func (*heldRecorder) RedisError(string)                        {}
func (h *heldRecorder) RedisEvictionUnsafe(bool) {
	h.once.Do(func() {
		close(h.entered)
		<-h.release
	})
}

// RunJanitor returns only once the policy check it runs beside its tick
// has ended: main closes the store once RunJanitor returned, and a check
// still running would call Redis through a closed client and report to
// the metrics and the log after the shutdown.
func TestJanitorWaitsForItsPolicyCheck(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		if b.Name == "embedded" {
			continue // its policy is not checked
		}
		t.Run(b.Name, func(t *testing.T) {
			rec := &heldRecorder{entered: make(chan struct{}), release: make(chan struct{})}
			s := openStoreWith(t, b, func(c *store.Config) { c.Metrics = rec })
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.RunJanitor(ctx, "guard-test", 20*time.Millisecond, slog.New(slog.DiscardHandler))
			}()
			<-rec.entered // the first check is held in its report
			cancel()
			var released atomic.Bool
			go func() {
				time.Sleep(200 * time.Millisecond)
				released.Store(true)
				close(rec.release)
			}()
			<-done
			if !released.Load() {
				t.Fatal("RunJanitor returned while the policy check it started still ran")
			}
		})
	}
}

// A Redis that starts refusing CONFIG (an ACL changed) after it reported
// an evicting policy clears the report (0 where CONFIG is refused, as the
// metric says): the policy is no longer checked, and an alert left firing
// could never be resolved short of a restart.
func TestJanitorClearsTheReportWhenConfigIsRefused(t *testing.T) {
	ctx := context.Background()
	b, admin := aclServer(t, []string{"--maxmemory-policy", "allkeys-lru"}, "later", "+@all", "~*", "&*")
	_, rec, log := guardedJanitor(t, b)
	wait.Until(t, "no report of the evicting policy", func() bool { return rec.unsafe.Load() == 1 })
	if err := admin.Do(ctx, "ACL", "SETUSER", "later", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "no info line about CONFIG", func() bool { return strings.Contains(log.String(), "refuses CONFIG GET") })
	if v := rec.unsafe.Load(); v != 0 {
		t.Errorf("GuardMetrics says %d once CONFIG GET is refused, want 0", v)
	}
}

// A Redis busy with a slow script answers BUSY to CONFIG GET: not now, not
// a refusal. The check goes on after it (an evicting policy set then is
// reported), and no line says CONFIG is refused.
func TestJanitorPolicyCheckOutlivesABusyRedis(t *testing.T) {
	srv := ownServer(t, "--busy-reply-threshold", "100")
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 10 * time.Second})
	defer admin.Close()
	_, rec, log := guardedJanitor(t, redistest.Backend{Name: "standalone", URL: "redis://" + srv.Addr})
	wait.Until(t, "no report of a safe policy", func() bool { return rec.unsafe.Load() == 0 })
	// 1.5 s of a script that answers nothing: every other client gets BUSY
	// after 100 ms, the janitor's checks (every 20 ms) among them
	busy := `local s = redis.call('TIME')
repeat local n = redis.call('TIME') until (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > 1500000
return 1`
	if err := admin.Eval(ctx, busy, nil).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "no report of the evicting policy after the busy script", func() bool { return rec.unsafe.Load() == 1 })
	if l := log.String(); strings.Contains(l, "refuses CONFIG GET") {
		t.Errorf("a BUSY reply was taken for a refusal of CONFIG:\n%s", l)
	}
}

// flushBeforeHMGet is a hook that deletes key (with del) before the first
// HMGET of it once armed: Redis losing its data between the janitor's
// HSETNX of the layout record and its read of it.
type flushBeforeHMGet struct {
	key   string
	del   func() error
	armed atomic.Bool
	fired atomic.Bool
}

func (h *flushBeforeHMGet) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *flushBeforeHMGet) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && strings.EqualFold(cmd.Name(), "hmget") && args[1] == h.key && h.armed.CompareAndSwap(true, false) {
			if err := h.del(); err != nil {
				return err
			}
			h.fired.Store(true)
		}
		return next(ctx, cmd)
	}
}
func (h *flushBeforeHMGet) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A layout record lost between the janitor's HSETNX and its read (Redis
// lost its data right then) is not a record that disagrees: the janitor
// writes it again on its next tick, and meanwhile Ready does not fail and
// no error says the layout disagrees.
func TestJanitorLayoutRecordLostWhileChecked(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s := openStore(t, b)
		meta := s.Prefix() + ":meta"
		h := &flushBeforeHMGet{key: meta, del: func() error { return s.Client().Del(ctx, meta).Err() }}
		s.Client().AddHook(h)
		h.armed.Store(true)
		log := runJanitor(t, s)
		wait.Until(t, "the record was not deleted while checked", h.fired.Load)
		wait.Until(t, "the layout record is not restored", func() bool {
			return strings.Contains(log.String(), "layout record was missing") && s.Client().HGet(ctx, meta, "shards").Val() == "8"
		})
		if err := s.Ready(ctx); err != nil {
			t.Errorf("Ready: %v, want nil", err)
		}
		if l := log.String(); strings.Contains(l, "disagrees") {
			t.Errorf("a record lost while checked was taken for one that disagrees:\n%s", l)
		}
	})
}

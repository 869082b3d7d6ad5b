package sse_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/testlog"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// failover is a UserSource whose session renewals fail at once for length,
// from the first renewal that succeeds after start is called, as during a
// Cluster failover (the dead master refuses connections, then CLUSTERDOWN
// until its replica is promoted); the first renewal after it takes
// reconnect longer (the client dials the new master and re-reads the
// slot layout). It records the sessions the store said were lost.
type failover struct {
	sse.UserSource
	length, reconnect time.Duration

	mu      sync.Mutex
	armed   bool
	until   time.Time // renewals fail before it
	after   bool      // the first renewal after the failover is still to come
	failed  int
	lostIDs []string
}

func (f *failover) start() {
	f.mu.Lock()
	f.armed = true
	f.mu.Unlock()
}

func (f *failover) RenewSessions(ctx context.Context, ss []sse.Session) ([]sse.Session, error) {
	f.mu.Lock()
	failing := time.Now().Before(f.until)
	first := !failing && f.after
	if failing {
		f.failed++
	}
	if first {
		f.after = false
	}
	f.mu.Unlock()
	if failing {
		return nil, rooms.ErrUnavailable
	}
	if first {
		time.Sleep(f.reconnect)
	}
	lost, err := f.UserSource.RenewSessions(ctx, ss)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range lost {
		f.lostIDs = append(f.lostIDs, s.ID)
	}
	if err == nil && f.armed {
		f.armed, f.until, f.after = false, time.Now().Add(f.length), true
	}
	return lost, err
}

func (f *failover) outcome() (failed int, lost []string, over bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed, append([]string(nil), f.lostIDs...), !f.armed && !f.after && !f.until.IsZero()
}

// A failover shorter than the presence TTL ends no personal stream: a
// failed renewal is tried again within a second (a fifteenth of the TTL
// here), so the lease is renewed soon after Redis answers again, before it
// lapses. Renewals ticked every third of the TTL only: with two ticks
// failed, the third came after the lease had lapsed in Redis (the chaos
// test's 8.3 s failover ended six /v1/me/events streams with 15 s
// leases), the session was found lost, and lost again at the next tick
// ended the stream (lapsed).
func TestFailoverShorterThanTheTTLKeepsPersonalStreams(t *testing.T) {
	// 12 s: the renewal after the failover comes at 9 s plus a retry
	// (0.8 s) and the reconnection (0.5 s), 1.7 s before the lease lapses,
	// room for a loaded machine's stall (6 s left 0.6 s); the old ticks'
	// renewal came 0.5 s after it
	const ttl = 12 * time.Second
	b := redistest.Backends(t)[0]
	var logs testlog.Buffer
	f := &failover{length: ttl * 3 / 4, reconnect: ttl / 24}
	_, done := serveBobsSession(t, b, redistest.Prefix(t), ttl, f, sse.Config{Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	f.start()
	wait.Until(t, "the failover came and went", func() bool { _, _, over := f.outcome(); return over })
	// two more renewal periods: a lease found lost ends the stream once
	// its catch-up finds no replacement
	select {
	case <-done:
		failed, lost, _ := f.outcome()
		t.Fatalf("the personal stream ended after a %v failover (TTL %v; %d renewals failed, sessions lost %v):\n%s", f.length, ttl, failed, lost, logs.String())
	case <-time.After(2 * ttl / 3):
	}
	if failed, lost, _ := f.outcome(); failed == 0 || len(lost) > 0 {
		t.Fatalf("%d renewals failed, sessions lost %v: want the failover to fail renewals and no lease to lapse", failed, lost)
	}
}

// A personal stream whose session lapsed (its lease gone from the store,
// with no tombstone or logged session_replaced: not replaced) ends lapsed
// once the first renewal that found it gone had the catch-up look for a
// replacement, not at the renewal after (a third of the TTL later), on
// every backend. The store said it lost the session once.
func TestLapsedSessionEndsAtTheFirstRenewalThatFindsItGone(t *testing.T) {
	const ttl = 6 * time.Second // renewals 2 s apart: room for a loaded machine's catch-up before the next
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		var logs testlog.Buffer
		f, m, ctx, prefix := &failover{}, newRecorder(), context.Background(), redistest.Prefix(t)
		st, done := serveBobsSession(t, b, prefix, ttl, f, sse.Config{Metrics: m,
			Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		keys, err := rediskeys.Scan(ctx, st.Client(), "{"+prefix+":*}:sess:"+bob.ID)
		if err != nil || len(keys) != 1 {
			t.Fatalf("bob's session keys: %v %v", keys, err)
		}
		if err := st.Client().Del(ctx, keys[0]).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(3 * ttl):
			t.Fatalf("the stream of a lapsed session did not end:\n%s", logs.String())
		}
		_, lost, _ := f.outcome()
		if _, ended, _, _ := m.snapshot(); len(lost) != 1 || ended[sse.KindMe+" "+sse.EndLapsed] != 1 {
			t.Fatalf("sessions the store lost %v, streams ended %v: want the stream's lost once, then its end lapsed:\n%s", lost, ended, logs.String())
		}
	})
}

// serveBobsSession opens a store on b under prefix with presence TTL
// ttl, a hub with cfg whose sessions go through f, and bob's personal
// stream ("web") on it; it returns once the stream opened, with the store
// and the channel ServeMe returns on. The test's end closes them.
func serveBobsSession(t *testing.T, b redistest.Backend, prefix string, ttl time.Duration, f *failover, cfg sse.Config) (*store.Store, chan error) {
	t.Helper()
	st, err := store.Open(context.Background(), store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
		Prefix: prefix, Shards: 4, PresenceTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	f.UserSource = st.Sessions()
	cfg.Source, cfg.Users, cfg.Feed, cfg.PresenceTTL = st, f, st.Feed, ttl
	hub := sse.NewHub(cfg)
	t.Cleanup(func() { hub.Close(); st.Close() })
	cl := newClient()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- hub.ServeMe(ctx, cl, bob, "web", sse.Cursor{}) }()
	wait.Until(t, "the personal stream opened", func() bool { return len(cl.all()) > 0 })
	return st, done
}

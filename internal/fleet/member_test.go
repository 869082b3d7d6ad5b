package fleet_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/fleet"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/store"
)

func TestMain(m *testing.M) { redistest.Main(m) }

const ttl = 450 * time.Millisecond

// A member is listed as soon as Join returns, reports its streams at each
// heartbeat, reaps a dead instance (releasing its janitor lease) without
// anyone listing, and is gone at once after Leave.
func TestMemberLifecycle(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		prefix := redistest.Prefix(t)
		s := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
			Prefix: prefix, Shards: 2, PresenceTTL: ttl})

		var streams atomic.Int64
		streams.Store(3)
		m, err := fleet.Join(ctx, fleet.Config{Registry: s.Fleet(), Every: ttl / 3,
			Self:    fleet.Instance{ID: "me", Addr: "127.0.0.1:1", Version: "v0", StartedAt: time.Now()},
			Streams: func() int { return int(streams.Load()) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Leave(ctx) })
		if got := list(t, s); len(got) != 1 || got[0].ID != "me" || got[0].Streams != 3 {
			t.Fatalf("after Join: %+v", got)
		}

		// An instance that registered once, took a shard's janitor lease
		// for long, and died. Registered after the listing above, which
		// reaps: registered before Join, it had to outlive Join and the
		// listing (ttl), which a loaded machine's delay did not allow.
		dead := fleet.Instance{ID: "dead", Addr: "10.0.0.9:8080", StartedAt: time.Now()}
		if _, err := s.Fleet().HeartbeatInstance(ctx, dead); err != nil {
			t.Fatal(err)
		}
		lease := s.Base().Tag(1) + ":janitor" // shard 1's janitor lease (README's key schema)
		s.Client().Set(ctx, lease, "dead", time.Minute)

		// No listing here: it would reap too. Waited long past the few
		// heartbeats it takes: under CI's load a heartbeat call of the
		// embedded store timed out, and 5 TTLs passed before its retry
		// reaped (without the reaping the lease lives a minute)
		wait.Within(t, 20*ttl, "the dead instance's lease released by the heartbeat loop", func() bool {
			return s.Client().Exists(ctx, lease).Val() == 0
		})
		streams.Store(5)
		wait.Within(t, 20*ttl, "5 streams reported", func() bool {
			got := list(t, s)
			return len(got) == 1 && got[0].Streams == 5
		})

		if err := m.Leave(ctx); err != nil {
			t.Fatal(err)
		}
		if got := list(t, s); len(got) != 0 {
			t.Fatalf("after Leave: %+v", got)
		}
		if err := m.Leave(ctx); err != nil {
			t.Fatalf("second Leave: %v", err)
		}
	})
}

func list(tb testing.TB, s *store.Store) []fleet.Instance {
	tb.Helper()
	ins, err := s.Fleet().Instances(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return ins
}

// failing is a registry whose heartbeats after the first fail fail times.
type failing struct {
	fleet.Registry
	mu    sync.Mutex
	beats int
	fail  int
	hang  int // heartbeats after the first held up until their context ends
}

func (f *failing) HeartbeatInstance(ctx context.Context, in fleet.Instance) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beats++
	if f.beats > 1 && f.hang > 0 {
		f.hang--
		f.mu.Unlock()
		<-ctx.Done() // held up until the beat's bound
		f.mu.Lock()
		return false, ctx.Err()
	}
	if f.beats > 1 && f.fail > 0 {
		f.fail--
		return false, errors.New("TRYAGAIN Multiple keys request during rehashing of slot")
	}
	return true, nil
}
func (*failing) ReapInstances(context.Context) ([]string, error)  { return nil, nil }
func (*failing) DeregisterInstance(context.Context, string) error { return nil }

// A failed heartbeat is tried again after a fifth of the interval, until
// one succeeds, then the interval again (a resharding tester's find:
// waiting the whole interval after two failures, the third heartbeat
// came at the registration's expiry, and both instances lapsed).
func TestFailedHeartbeatRetriedSooner(t *testing.T) {
	t.Run("Refused", func(t *testing.T) { retriedSooner(t, &failing{fail: 2}) })
	// one held up is bounded by the interval, then fails as a refused one
	t.Run("HeldUp", func(t *testing.T) { retriedSooner(t, &failing{hang: 2}) })
}

func retriedSooner(t *testing.T, reg *failing) {
	const every = 300 * time.Millisecond
	waits := make(chan time.Duration, 5)
	cfg := fleet.WithWaits(fleet.Config{Registry: reg, Every: every, Self: fleet.Instance{ID: "me"},
		Log: slog.New(slog.DiscardHandler)}, func(d time.Duration) <-chan time.Time {
		select {
		case waits <- d:
		default: // the five are recorded: a wait that never ends, until Leave
			return nil
		}
		now := make(chan time.Time, 1)
		now <- time.Now() // at once: the waits asked for are what is checked
		return now
	})
	m, err := fleet.Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Leave(context.Background()) })
	var got []time.Duration
	for range 5 {
		select {
		case d := <-waits:
			got = append(got, d)
		case <-time.After(10 * time.Second): // not a timing check: a hang's bound
			t.Fatalf("after the waits %v the member waits no more: a heartbeat held up for good", got)
		}
	}
	// the first wait, then after each beat: failed, failed, renewed, renewed
	want := []time.Duration{every, every / 5, every / 5, every, every}
	for i, w := range want {
		// a beat's own time is taken off the next wait, so a wait is at
		// most its own; an interval's is more than a retry's unless a
		// beat stalled 240 ms
		if got[i] > w || (w == every && got[i] <= every/5) {
			t.Fatalf("waits %v, want about %v", got, want)
		}
	}
}

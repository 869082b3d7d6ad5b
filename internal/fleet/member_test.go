package fleet_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/fleet"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
)

func TestMain(m *testing.M) { redistest.Main(m) }

const ttl = 450 * time.Millisecond

// A member is listed as soon as Join returns, reports its streams at each
// heartbeat, reaps a dead instance (releasing its janitor lease) without
// anyone listing, and is gone at once after Leave.
func TestMemberLifecycle(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			prefix := redistest.Prefix(t)
			s, err := store.Open(ctx, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
				Prefix: prefix, Shards: 2, PresenceTTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })

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

			// No listing here: it would reap too.
			waitFor(t, 5*ttl, "the dead instance's lease released by the heartbeat loop", func() bool {
				return s.Client().Exists(ctx, lease).Val() == 0
			})
			streams.Store(5)
			waitFor(t, 5*ttl, "5 streams reported", func() bool {
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
}

func list(tb testing.TB, s *store.Store) []fleet.Instance {
	tb.Helper()
	ins, err := s.Fleet().Instances(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return ins
}

func waitFor(tb testing.TB, within time.Duration, what string, ok func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(within); !ok(); {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

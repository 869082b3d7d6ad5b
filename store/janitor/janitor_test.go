package janitor_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"

	"github.com/realsync/realsync/store/internal/conn"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/janitor"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// recorded is what the tasks of a test janitor saw: a visit per entry,
// "<task> <shard>".
type recorded struct{ calls []string }

// task returns a task named name that records its call, counts one of
// kind and ends with err.
func (r *recorded) task(name, kind string, err error) janitor.Task {
	return func(_ context.Context, shard int, _ time.Duration, rep janitor.Report) error {
		r.calls = append(r.calls, name+" "+string(rune('0'+shard)))
		rep.Add(kind, 1)
		return err
	}
}

// newJanitor returns a janitor of 4 shards on backend b with tasks, its
// leases under a prefix of the test's own, the client it runs on, and
// its lease key.
func newJanitor(t *testing.T, b redistest.Backend, tasks ...janitor.Task) (*janitor.Janitor, redis.UniversalClient, func(int) string) {
	t.Helper()
	c, err := conn.Open(conn.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	base := &redisx.Base{Client: c.Client, Runner: redisx.NewRunner(c.Client, nil), Prefix: redistest.Prefix(t), Shards: 4, PubCmd: c.PubCmd}
	lease := func(shard int) string { return base.Tag(shard) + ":jtest" }
	j := janitor.New(janitor.Config{Base: base, Lease: lease, Schedule: func(shard int) string { return base.Tag(shard) + ":jtestdue" }, Tasks: tasks})
	return j, c.Client, lease
}

// One instance per shard per lease: a visit whose lease another instance
// holds runs no task and reports nothing; once the lease expired, the
// other instance's visit runs them. The tasks run in order, and a task's
// error ends the visit with what was counted up to it.
func TestVisitTakesTheLease(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			var r recorded
			boom := errors.New("boom")
			j, client, lease := newJanitor(t, b, r.task("a", "x", nil), r.task("b", "y", boom), r.task("c", "z", nil))
			// long enough that no pause of a loaded machine lets it lapse
			// between the visits; its end is brought forward below
			const ttl = time.Minute
			rep, err := j.Visit(ctx, 2, "i1", ttl)
			if !errors.Is(err, boom) {
				t.Fatalf("visit: %v, want the task's error", err)
			}
			if want := (janitor.Report{"x": 1, "y": 1}); !maps.Equal(rep, want) || !slices.Equal(r.calls, []string{"a 2", "b 2"}) {
				t.Fatalf("report %v, calls %q; want %v, [a 2 b 2]", rep, r.calls, want)
			}
			if got := client.Get(ctx, lease(2)).Val(); got != "i1" {
				t.Fatalf("lease held by %q, want i1", got)
			}
			if pttl := client.PTTL(ctx, lease(2)).Val(); pttl <= 0 || pttl > ttl {
				t.Fatalf("lease's PTTL %v, want within (0, %v]: held for the visit's lease", pttl, ttl)
			}
			rep, err = j.Visit(ctx, 2, "i2", ttl)
			if err != nil || len(rep) != 0 || len(r.calls) != 2 {
				t.Fatalf("a visit while another instance holds the lease: %v, %v, calls %q; want nothing done", rep, err, r.calls)
			}
			if _, err := j.Visit(ctx, 3, "i2", ttl); !errors.Is(err, boom) || len(r.calls) != 4 {
				t.Fatalf("another shard's lease is free: %v, calls %q", err, r.calls)
			}
			if err := client.PExpire(ctx, lease(2), time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); client.Exists(ctx, lease(2)).Val() == 1; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the lease did not expire")
				}
			}
			if _, err := j.Visit(ctx, 2, "i2", ttl); !errors.Is(err, boom) || len(r.calls) != 6 {
				t.Fatalf("the lease expired: %v, calls %q; want the tasks run", err, r.calls)
			}
		})
	}
}

// Release deletes the leases held by the instances named, and only those.
func TestReleaseOnlyTheNamedHolders(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			j, client, lease := newJanitor(t, b)
			holders := []string{"dead1", "live", "dead2", ""} // shard 3: nobody
			for shard, h := range holders {
				if h == "" {
					continue
				}
				if _, err := j.Visit(ctx, shard, h, time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			if err := j.Release(ctx, []string{"dead1", "dead2", "gone"}); err != nil {
				t.Fatal(err)
			}
			for shard, want := range []string{"", "live", "", ""} {
				if got := client.Get(ctx, lease(shard)).Val(); got != want {
					t.Errorf("shard %d: lease held by %q, want %q", shard, got, want)
				}
			}
			client.Del(ctx, lease(1))
		})
	}
}

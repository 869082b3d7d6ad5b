package tickets_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/matchmaking"
)

// A mode's lease is taken, renewed and dropped on connections of its own
// (tickets.New's leases, the store's Renewals): with every connection of
// the requests' pool held by a blocking call, as when the passes' few
// hundred calls and the requests queue for it, Lease still answers at
// once. On the requests' pool it waited for a connection, and a renewal
// that waits past the lease's TTL loses the mode to another instance
// while this one still completes its matches.
func TestLeaseIsNotQueuedBehindRequests(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		base := e.rooms.Base()
		const hold = 2 * time.Second
		holds, release := holdPools(t, e, hold)
		defer release()
		// Every pool is held once the pops are sent: a request waits (the
		// test would pass without this, proving nothing).
		for node, key := range holds {
			wait.Within(t, 5*time.Second, "a request to "+node+" waiting past its deadline (its pool held)", func() bool {
				pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				return errors.Is(base.Client.Get(pctx, key).Err(), context.DeadlineExceeded)
			})
		}

		lctx, cancel := context.WithTimeout(ctx, hold/2)
		defer cancel()
		for i, step := range []func() error{
			func() error { return leaseOK(e.tickets.Lease(lctx, "duel", "a", time.Minute)) }, // take
			func() error { return leaseOK(e.tickets.Lease(lctx, "duel", "a", time.Minute)) }, // renew
			func() error { return e.tickets.DropLease(lctx, "duel", "a") },
			func() error { return leaseOK(e.tickets.Lease(lctx, "duel", "b", time.Minute)) }, // another takes it
		} {
			if err := step(); err != nil {
				t.Fatalf("lease step %d while the requests' pool is held: %v", i, err)
			}
		}
	})
}

// A running matcher's pass under way keeps its lease while the requests'
// pool is busy: its renewals have connections of their own and run apart
// from the ticks, which list the modes through that pool. The ticks
// renewed every lease after listing the modes, so a pool busy past the
// lease's TTL let it lapse under the pass, and another instance took the
// mode while this one, alive, still completed its match (a reviewer's
// find).
func TestPassingLeaseOutlivesABusyPool(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		duelPair(t, e, "duel", "d0", "d1")
		// 2 s: a's renewals (every third of it, each bounded by a third)
		// must outlast a loaded machine's stall
		const ttl = 2 * time.Second
		stall := newStalling(e.rooms)
		defer close(stall.release)
		a := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: stall, Notifier: e.tickets, Holder: "a",
			LeaseTTL: ttl, RepairAfter: time.Hour, Interval: 50 * time.Millisecond})
		running(t, a)
		stall.waitEntered(t)
		_, release := holdPools(t, e, 3*ttl)
		defer release()
		time.Sleep(2 * ttl)
		if ok, err := e.tickets.Lease(ctx, "duel", "b", ttl); err != nil || ok {
			t.Errorf("b's take of duel %v into a busy pool, while a, alive, was passing it: %v %v, want held by a", 2*ttl, ok, err)
		}
	})
}

// holdPools holds every connection of e's requests' pools (one per node
// on a Cluster) with blocking pops for d; holds names a key of each node,
// release waits for the pops.
func holdPools(t *testing.T, e env, d time.Duration) (holds map[string]string, release func()) {
	t.Helper()
	ctx := context.Background()
	base := e.rooms.Base()
	var size int
	switch c := base.Client.(type) {
	case *redis.Client:
		size = c.Options().PoolSize
	case *redis.ClusterClient:
		size = c.Options().PoolSize
	default:
		t.Fatalf("client %T", base.Client)
	}
	holds = map[string]string{} // node → a key it owns
	for shard := range base.Shards {
		key := base.Tag(shard) + ":hold"
		node := "one"
		if cc, ok := base.Client.(*redis.ClusterClient); ok {
			c, err := cc.MasterForKey(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			node = c.Options().Addr
		}
		if _, ok := holds[node]; !ok {
			holds[node] = key
		}
	}
	var wg sync.WaitGroup
	for _, key := range holds {
		for range size {
			wg.Go(func() { base.Client.BLPop(ctx, d, key) })
		}
	}
	return holds, wg.Wait
}

func leaseOK(ok bool, err error) error {
	if err == nil && !ok {
		err = errors.New("not taken")
	}
	return err
}

// A renewal renews only a lease its holder still holds: one given up
// (or lapsed) is not taken again by a renewal that answers late, as a
// take would, and another holder's is not touched.
func TestRenewTakesNoLease(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		for i, step := range []struct {
			call func() (bool, error)
			want bool
		}{
			{func() (bool, error) { return e.tickets.Renew(ctx, "duel", "a", time.Minute) }, false}, // no one holds it
			{func() (bool, error) { return e.tickets.Lease(ctx, "duel", "a", time.Minute) }, true},
			{func() (bool, error) { return e.tickets.Renew(ctx, "duel", "a", time.Minute) }, true},
			{func() (bool, error) { return e.tickets.Renew(ctx, "duel", "b", time.Minute) }, false}, // a's
			{func() (bool, error) { return false, e.tickets.DropLease(ctx, "duel", "a") }, false},
			{func() (bool, error) { return e.tickets.Renew(ctx, "duel", "a", time.Minute) }, false}, // given up
			{func() (bool, error) { return e.tickets.Lease(ctx, "duel", "b", time.Minute) }, true},  // free for b
		} {
			if ok, err := step.call(); err != nil || ok != step.want {
				t.Fatalf("step %d: %v %v, want %v", i, ok, err, step.want)
			}
		}
	})
}

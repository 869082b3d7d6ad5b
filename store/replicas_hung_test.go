package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// hungReplicaBound bounds a browsing read that finds its replica hung:
// about ten times what it costs (the reply waited for,
// conn.ReplicaReadTimeout, then the master's read, well under 100 ms), a
// margin for a loaded machine, and a quarter of what the store's other
// calls wait for a reply in this test (hungStoreReadTimeout), as the
// reads did.
const hungReplicaBound = 5 * time.Second

// hungStoreReadTimeout is the store's read timeout in the test: the
// reads waited for it before (a tester's 2.02 s with the default 2 s).
const hungStoreReadTimeout = 20 * time.Second

// With replica reads on, a replica that hangs (accepts connections and
// answers nothing: a stopped process, as CLIENT PAUSE ALL) costs a list
// or the stats about conn.ReplicaReadTimeout, and the read is answered
// within the same call, from the master. Before, the reader waited the
// store's 2 s read timeout, and a tester's list took 2.02 s, again every
// 15 s while the replica hung (go-redis marks a node failing for that
// long). The bound is generous (hungReplicaBound), not a measurement.
func TestHungReplicaCostsABrowsingReadItsReadTimeout(t *testing.T) {
	// not parallel: it bounds a call's time, which other tests on the
	// same cores would stretch
	c, err := redistest.StartClusterWithReplicas(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	master, replica := c.Nodes[0], c.Nodes[1] // the master holds every slot
	ctx := t.Context()
	const shards = 16
	prefix := redistest.Prefix(t)
	// CLUSTER SLOTS lists a replica once it gossiped a replication
	// offset, which a first write makes
	w := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer w.Close()
	for _, tag := range store.ShardTags(prefix, shards, store.SchemaVersion) {
		if err := w.Set(ctx, tag+"probe", 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitSlotsListReplicas(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	cfg := store.Config{ClusterAddrs: c.Addrs(), Prefix: prefix, Shards: shards, ReadFromReplicas: store.ReplicasOn, Batch: testBatch(),
		ReadTimeout: hungStoreReadTimeout}
	s := storetest.Open(t, cfg)
	for i := range 3 {
		if _, err := s.Create(ctx, rooms.User{ID: "owner-" + string(rune('a'+i))}, rooms.NewRoom{Name: "r", Mode: "battle",
			Region: "eu", MaxPlayers: 4, Visibility: rooms.Public}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitReplicated(master, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		read func(context.Context, *store.Store) (rooms int, err error) // a browsing read: the waiting rooms it saw
	}{
		{"ListAnsweredByTheMaster", func(ctx context.Context, s *store.Store) (int, error) {
			res, err := s.Listing().List(ctx, lobby.Query{Statuses: []rooms.Status{rooms.Waiting}, Mode: "battle", Limit: 50})
			return len(res.Rooms), err
		}},
		{"StatsAnsweredByTheMaster", func(ctx context.Context, s *store.Store) (int, error) {
			st, err := s.Listing().Stats(ctx)
			return st.Rooms[rooms.Waiting], err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// a store of its own: its reader has marked no node failing
			s := storetest.Open(t, cfg)
			if n, err := tc.read(ctx, s); err != nil || n != 3 {
				t.Fatalf("with the replica up: %d rooms, %v; want 3", n, err)
			}
			redistest.ResetStats(t, master)
			replica.Pause()
			t.Cleanup(replica.Resume) // before the Cluster's stop, even on a failure
			began := time.Now()
			n, err := tc.read(ctx, s)
			took := time.Since(began)
			replica.Resume()
			t.Logf("with the replica hung: %v", took.Round(time.Millisecond))
			if err != nil || n != 3 {
				t.Fatalf("with the replica hung: %d rooms, %v; want 3", n, err)
			}
			if took > hungReplicaBound {
				t.Errorf("with the replica hung: %v, want within %v", took.Round(time.Millisecond), hungReplicaBound)
			}
			if calls := master.CallsOf(t, browsingCmds...); calls == 0 {
				t.Error("the master answered no browsing read: the replica did, or nobody")
			}
		})
	}
}

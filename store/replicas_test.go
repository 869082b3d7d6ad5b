package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

func TestParseReplicaReads(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want store.ReplicaReads
		ok   bool
	}{
		{"", store.ReplicasOff, true},
		{"off", store.ReplicasOff, true},
		{"on", store.ReplicasOn, true},
		{"random", store.ReplicasRandom, true},
		{"latency", store.ReplicasLatency, true},
		{"yes", "", false},
		{"ON", "", false},
	} {
		got, err := store.ParseReplicaReads(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseReplicaReads(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// Replicas are read on a Cluster only: elsewhere the setting is refused.
func TestReplicaReadsNeedACluster(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		if len(b.ClusterAddrs) > 0 {
			continue
		}
		_, err := store.New(store.Config{RedisURL: b.URL, Prefix: redistest.Prefix(t), ReadFromReplicas: store.ReplicasOn})
		if err == nil || !strings.Contains(err.Error(), "REALSYNC_REDIS_READ_FROM_REPLICAS") {
			t.Errorf("%s: New with replica reads: %v, want a REALSYNC_REDIS_READ_FROM_REPLICAS error", b.Name, err)
		}
	}
}

// browsingCmds are the commands of the browsing reads (and of every other
// plain read of a room): a master that answers none of them served no
// browsing read.
var browsingCmds = []string{"zrange", "hgetall", "hmget"}

// shardNodes returns the masters that hold at least one of the store's
// shards, each with its replicas.
func shardNodes(t *testing.T, c *redistest.Cluster, prefix string, shards int) map[*redistest.Server][]*redistest.Server {
	t.Helper()
	out := map[*redistest.Server][]*redistest.Server{}
	for shard := range shards {
		slot, err := c.Slot(t.Context(), store.ShardTags(prefix, shards, store.SchemaVersion)[shard])
		if err != nil {
			t.Fatal(err)
		}
		m, rs, err := c.Shard(t.Context(), slot)
		if err != nil {
			t.Fatal(err)
		}
		out[m] = rs
	}
	return out
}

// browseAll runs every browsing read and checks it against want: the
// public waiting rooms and the players in them.
func browseAll(t *testing.T, s *store.Store, wantRooms, wantPlayers int) {
	t.Helper()
	ctx := t.Context()
	res, err := s.Listing().List(ctx, lobby.Query{Statuses: []rooms.Status{rooms.Waiting}, Sort: lobby.Newest, Limit: 50})
	if err != nil || len(res.Rooms) != wantRooms {
		t.Fatalf("List: %d rooms, %v; want %d", len(res.Rooms), err, wantRooms)
	}
	players := 0
	for _, r := range res.Rooms {
		players += r.PlayerCount
	}
	if players != wantPlayers {
		t.Fatalf("List: %d players in the rooms, want %d", players, wantPlayers)
	}
	st, err := s.Listing().Stats(ctx)
	if err != nil || st.Rooms[rooms.Waiting] != wantRooms || st.Players != wantPlayers {
		t.Fatalf("Stats: %d waiting rooms, %d players, %v; want %d, %d", st.Rooms[rooms.Waiting], st.Players, err, wantRooms, wantPlayers)
	}
}

// On a Cluster with a replica per master and replica reads on: lists and
// stats are read from replicas and see every write once replication
// caught up; joins, room reads, my rooms, quick-join and the lobby
// stream's list run on masters; a dead replica's reads go to its master, and so do those
// of replicas that refuse reads while cut off from their master, without
// an error.
func TestBrowsingReadsFromReplicas(t *testing.T) {
	c := ownReplicatedCluster(t)
	ctx := t.Context()
	const shards = 16
	prefix := redistest.Prefix(t)
	held := shardNodes(t, c, prefix, shards)
	// CLUSTER SLOTS, where go-redis learns the replicas, lists a replica
	// once it gossiped a replication offset, which a first write makes.
	w := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer w.Close()
	for shard := range shards {
		if err := w.Set(ctx, store.ShardTags(prefix, shards, store.SchemaVersion)[shard]+"probe", 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitSlotsListReplicas(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	rec := newBatchRecorder()
	s := storetest.Open(t, store.Config{ClusterAddrs: c.Addrs(), Prefix: prefix, Shards: shards, ReadFromReplicas: store.ReplicasOn, Batch: testBatch(), Metrics: rec})
	var masters, replicas []*redistest.Server
	for m, rs := range held {
		masters = append(masters, m)
		replicas = append(replicas, rs...)
	}
	if len(replicas) != len(masters) {
		t.Fatalf("%d masters hold shards, with %d replicas; want one each", len(masters), len(replicas))
	}
	waitReplicated := func() {
		t.Helper()
		for _, m := range masters {
			if err := c.WaitReplicated(m, 10*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}

	// rooms of several modes and regions, so they spread over the shards
	var ids []string
	for i := range 9 {
		j, err := s.Create(ctx, rooms.User{ID: fmt.Sprintf("owner-%d", i)}, rooms.NewRoom{Name: "r", Mode: []string{"battle", "race", "duel"}[i%3],
			Region: []string{"eu", "us", "ap"}[i/3], MaxPlayers: 4, Visibility: rooms.Public})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.Room.ID)
	}
	waitReplicated()

	t.Run("browsing reads hit replicas only", func(t *testing.T) {
		redistest.ResetStats(t, c.Nodes...)
		_, before := rec.sizes("read")
		browseAll(t, s, 9, 9)
		if _, after := rec.sizes("read"); testBatch() != nil && after == before {
			t.Error("no browsing read went out in a batch of reads")
		}
		for _, m := range masters {
			if n := m.CallsOf(t, browsingCmds...); n != 0 {
				t.Errorf("master %s answered %d browsing reads, want 0", m.Addr, n)
			}
		}
		for _, r := range replicas {
			if n := r.CallsOf(t, browsingCmds...); n == 0 {
				t.Errorf("replica %s answered no browsing read (Stats reads every shard)", r.Addr)
			}
		}
	})

	t.Run("joins and room reads hit masters only", func(t *testing.T) {
		redistest.ResetStats(t, c.Nodes...)
		u := rooms.User{ID: "joiner"}
		if _, err := s.Join(ctx, u, ids[0]); err != nil {
			t.Fatal(err)
		}
		r, _, err := s.Get(ctx, ids[0], true)
		if err != nil || r.PlayerCount != 2 {
			t.Fatalf("Get right after the join: %d players, %v; want 2", r.PlayerCount, err)
		}
		if mine, _, err := s.MyRooms(ctx, u, nil, 10); err != nil || len(mine) != 1 {
			t.Fatalf("MyRooms right after the join: %d rooms, %v; want 1", len(mine), err)
		}
		if _, err := s.QuickJoin(ctx, rooms.User{ID: "quick"}, "race", []string{"us"}, nil, nil); err != nil {
			t.Fatalf("QuickJoin: %v", err)
		}
		if _, err := s.Listing().Joinable(ctx, "battle", "eu", 100); err != nil {
			t.Fatalf("Joinable: %v", err)
		}
		var scripts int64
		for _, m := range masters {
			scripts += m.CallsOf(t, "evalsha", "eval")
		}
		if scripts == 0 {
			t.Error("the masters ran no script")
		}
		for _, r := range replicas {
			// replicas apply the masters' writes (hset, zadd, exec...) but
			// answer no script and no read of ours
			if n := r.CallsOf(t, "evalsha", "eval", "evalsha_ro", "eval_ro", "hgetall", "hkeys", "hmget", "zrange"); n != 0 {
				t.Errorf("replica %s answered %d scripts or reads of a join, want 0: %v", r.Addr, n, r.Calls(t))
			}
		}
		waitReplicated()
		browseAll(t, s, 9, 11)
	})

	t.Run("random and latency read right", func(t *testing.T) {
		for _, mode := range []store.ReplicaReads{store.ReplicasRandom, store.ReplicasLatency} {
			o, err := store.Open(ctx, store.Config{ClusterAddrs: c.Addrs(), Prefix: prefix, Shards: shards, ReadFromReplicas: mode, Batch: testBatch()})
			if err != nil {
				t.Fatal(err)
			}
			redistest.ResetStats(t, c.Nodes...)
			for range 10 {
				browseAll(t, o, 9, 11)
			}
			o.Close()
			if mode != store.ReplicasRandom {
				continue
			}
			// about half the reads each: none on either side is as likely as
			// a fair coin landing the same way over a hundred throws
			var onMasters, onReplicas int64
			for _, m := range masters {
				onMasters += m.CallsOf(t, browsingCmds...)
			}
			for _, r := range replicas {
				onReplicas += r.CallsOf(t, browsingCmds...)
			}
			if onMasters == 0 || onReplicas == 0 {
				t.Errorf("random: %d browsing reads on masters, %d on replicas; want some on each", onMasters, onReplicas)
			}
		}
	})

	t.Run("a dead replica's reads go to its master", func(t *testing.T) {
		var dead, its *redistest.Server
		for m, rs := range held {
			dead, its = rs[0], m
			break
		}
		redistest.ResetStats(t, masters...)
		dead.Kill()
		for range 5 {
			browseAll(t, s, 9, 11)
		}
		if n := its.CallsOf(t, browsingCmds...); n == 0 {
			t.Errorf("master %s of the dead replica answered no browsing read", its.Addr)
		}
		for _, m := range masters {
			if n := m.CallsOf(t, browsingCmds...); m != its && n != 0 {
				t.Errorf("master %s, whose replica lives, answered %d browsing reads", m.Addr, n)
			}
		}
		replicas = remove(replicas, dead)
	})

	t.Run("a replica cut off from its master refuses reads; they go to the masters", func(t *testing.T) {
		for _, r := range replicas {
			cl := redis.NewClient(&redis.Options{Addr: r.Addr})
			err := cl.ConfigSet(ctx, "replica-serve-stale-data", "no").Err()
			cl.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range masters {
			if err := redistest.CutReplication(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range replicas {
			waitMasterDown(t, r)
		}
		// written after the cut: no replica will ever have it
		if _, err := s.Create(ctx, rooms.User{ID: "late"}, rooms.NewRoom{Name: "late", Mode: "battle", Region: "eu", MaxPlayers: 4, Visibility: rooms.Public}); err != nil {
			t.Fatal(err)
		}
		browseAll(t, s, 10, 12)
	})
}

// waitMasterDown waits until replica r refuses reads with MASTERDOWN.
func waitMasterDown(t *testing.T, r *redistest.Server) {
	t.Helper()
	cl := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer cl.Close()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		// DBSIZE: keyless (no redirection), and not allowed on stale data
		if err = cl.DBSize(t.Context()).Err(); err != nil && strings.HasPrefix(err.Error(), "MASTERDOWN") {
			return
		}
	}
	t.Fatalf("replica %s still serves reads after its master cut it off: %v", r.Addr, err)
}

func remove(list []*redistest.Server, s *redistest.Server) []*redistest.Server {
	var out []*redistest.Server
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

package conn

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
)

func TestRoute(t *testing.T) {
	m, r1, r2 := redis.ClusterNode{Addr: "m:1"}, redis.ClusterNode{Addr: "r:1"}, redis.ClusterNode{Addr: "r:2"}
	whole := []redis.ClusterNode{m, r1, r2}
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		nodes []redis.ClusterNode // the range's; nil: whole
		rtt   map[string]time.Duration
		want  []redis.ClusterNode
	}{
		{"nothing measured: kept whole", nil, map[string]time.Duration{}, whole},
		{"a replica nearest", nil, map[string]time.Duration{"m:1": 3 * ms, "r:1": 2 * ms, "r:2": ms}, []redis.ClusterNode{m, r2}},
		{"the master nearest: second, after the next nearest", nil, map[string]time.Duration{"m:1": ms, "r:1": 3 * ms, "r:2": 2 * ms}, []redis.ClusterNode{r2, m}},
		{"the master nearest, no replica answered: after the first", nil, map[string]time.Duration{"m:1": ms, "r:1": failed}, []redis.ClusterNode{r1, m}},
		{"a failed node passed over", nil, map[string]time.Duration{"m:1": 3 * ms, "r:1": 2 * ms, "r:2": failed}, []redis.ClusterNode{m, r1}},
		{"only some measured: the nearest of those", nil, map[string]time.Duration{"r:2": 5 * ms}, []redis.ClusterNode{m, r2}},
		{"every node failed: kept whole", nil, map[string]time.Duration{"m:1": failed, "r:1": failed, "r:2": failed}, whole},
		{"a master without replicas: alone", []redis.ClusterNode{m}, map[string]time.Duration{"m:1": ms}, []redis.ClusterNode{m}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := tc.nodes
			if nodes == nil {
				nodes = whole
			}
			in := []redis.ClusterSlot{{Start: 0, End: 100, Nodes: nodes}}
			got := route(in, tc.rtt)
			if len(got) != 1 || got[0].Start != 0 || got[0].End != 100 || !reflect.DeepEqual(got[0].Nodes, tc.want) {
				t.Errorf("route = %+v, want the range with %v", got, tc.want)
			}
			if !reflect.DeepEqual(in[0].Nodes, nodes) {
				t.Errorf("route changed its input: %v", in[0].Nodes)
			}
		})
	}
}

// ReplicasLatency's reader reads each shard's browsing reads from the node
// measured nearest, master or replica, and passes over a node whose PING
// fails. The round trips are the real PINGs' plus a delay the test adds per
// node (on loopback every node is about as near).
func TestNearestRoutesReadsByLatency(t *testing.T) {
	c := startListedCluster(t)
	ctx := t.Context()
	// a key of each master, with its master and replica
	type shard struct {
		key             string
		master, replica string
	}
	var shards []shard
	for i := 0; len(shards) < 2 && i < 100; i++ {
		key := "k" + strconv.Itoa(i)
		slot, err := c.Slot(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		m, rs, err := c.Shard(ctx, slot)
		if err != nil || len(rs) != 1 {
			t.Fatalf("shard of %s: %v %v, %v", key, m, rs, err)
		}
		if len(shards) == 0 || shards[0].master != m.Addr {
			shards = append(shards, shard{key, m.Addr, rs[0].Addr})
		}
	}

	var mu sync.Mutex
	added := map[string]time.Duration{} // by node; < 0: its PING fails
	set := func(d map[string]time.Duration) {
		mu.Lock()
		added = d
		mu.Unlock()
	}
	reader, near := latencyReader(t, c, func(addr string) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return added[addr]
	})

	// reads reads each shard's key until, in one round of 20 reads each,
	// every read of a shard went to the node want names, or 15 s passed
	// (the layout is read again about every second while reads flow).
	reads := func(t *testing.T, want map[string]string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			redistest.ResetStats(t, c.Nodes...)
			for _, s := range shards {
				for range 20 {
					if err := reader.Get(ctx, s.key).Err(); err != nil && err != redis.Nil {
						t.Fatalf("GET %s: %v", s.key, err)
					}
				}
			}
			got := map[string]int64{}
			for _, n := range c.Nodes {
				got[n.Addr] = n.Calls(t)["get"]
			}
			ok := true
			for _, s := range shards {
				ok = ok && got[want[s.key]] == 20
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("reads per node %v; want 20 of each key on %v", got, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	a, b := shards[0], shards[1]

	t.Run("the replicas nearest", func(t *testing.T) {
		set(map[string]time.Duration{a.master: 20 * time.Millisecond, b.master: 20 * time.Millisecond})
		near.measure(ctx)
		reads(t, map[string]string{a.key: a.replica, b.key: b.replica})
	})
	t.Run("one master nearest", func(t *testing.T) {
		set(map[string]time.Duration{a.replica: 20 * time.Millisecond, b.master: 20 * time.Millisecond})
		near.measure(ctx)
		reads(t, map[string]string{a.key: a.master, b.key: b.replica})
	})
	t.Run("a replica whose PING fails passed over", func(t *testing.T) {
		set(map[string]time.Duration{a.master: 20 * time.Millisecond, b.master: 20 * time.Millisecond, b.replica: -1})
		near.measure(ctx)
		reads(t, map[string]string{a.key: a.replica, b.key: b.master})
	})
}

// startListedCluster starts a Cluster of 2 masters with a replica each
// and waits until CLUSTER SLOTS, the readers' layout, lists the replicas:
// once they gossiped a replication offset, which a write of their masters
// makes (keys k0..k99, of both masters); stopped with t.
func startListedCluster(t *testing.T) *redistest.Cluster {
	t.Helper()
	c, err := redistest.StartClusterWithReplicas(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	w := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer w.Close()
	for i := range 100 {
		if err := w.Set(t.Context(), "k"+strconv.Itoa(i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitSlotsListReplicas(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// latencyReader is a ReplicasLatency reader of c with Open's redirects,
// closed with t, whose round trip to a node is a real PING's plus what
// added says of the node (< 0: its PING fails).
func latencyReader(t *testing.T, c *redistest.Cluster, added func(addr string) time.Duration) (redis.UniversalClient, *nearest) {
	t.Helper()
	slots := NewSlotSource(c.Addrs(), time.Second, 2*time.Second)
	rtt := func(ctx context.Context, addr string) (time.Duration, error) {
		d, err := slots.RTT(ctx, addr)
		a := added(addr)
		if a < 0 {
			return 0, errors.New("unreachable")
		}
		return d + a, err
	}
	reader, near := readerClient(redis.ClusterOptions{Addrs: c.Addrs(), ClusterSlots: slots.Slots,
		ClusterStateReloadInterval: time.Second, Protocol: 2, MaxRedirects: maxRedirects}, ReplicasLatency, rtt)
	t.Cleanup(func() {
		reader.Close()
		near.Close()
		slots.Close()
	})
	return reader, near
}

// A shard whose master is measured nearest reads from its replica as soon
// as the master dies (go-redis marks it failing within the call), before
// any new measurement and before the failover, as go-redis' RouteByLatency
// and ReplicasOn do: a layout of the master alone left the reads nowhere
// else to go until the next measurement, up to 10 s later.
func TestNearestReadsADeadNearestMastersShardFromItsReplica(t *testing.T) {
	c := startListedCluster(t)
	ctx := t.Context()
	slot, err := c.Slot(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	m, rs, err := c.Shard(ctx, slot)
	if err != nil || len(rs) != 1 {
		t.Fatalf("shard of k0: %v %v, %v", m, rs, err)
	}
	if err := c.WaitReplicated(m, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	reader, near := latencyReader(t, c, func(addr string) time.Duration {
		if addr == rs[0].Addr {
			return 20 * time.Millisecond // the master nearest
		}
		return 0
	})
	// every node measured before the reader reads its first layout
	if _, err := near.Slots(ctx); err != nil {
		t.Fatal(err)
	}
	near.measure(ctx)
	redistest.ResetStats(t, m)
	if v, err := reader.Get(ctx, "k0").Result(); err != nil || v != "v" {
		t.Fatalf("GET k0 = %q, %v", v, err)
	}
	if n := m.Calls(t)["get"]; n != 1 {
		t.Fatalf("the nearest master answered %d GETs, want 1", n)
	}

	m.Kill()
	if v, err := reader.Get(ctx, "k0").Result(); err != nil || v != "v" {
		t.Fatalf("GET k0 with the nearest master dead = %q, %v; want v from its replica", v, err)
	}
}

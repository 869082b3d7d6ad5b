package pubsub_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store/internal/pubsub"
)

func TestMain(m *testing.M) { redistest.Main(m) }

type nopHandler struct{}

func (nopHandler) Message(string, string) {}
func (nopHandler) Resubscribed(string)    {}

// A client whose layout still names a demoted master, now a replica, as
// the slots' owner (a second after a failover it has not re-read yet)
// subscribes there, and a bare SPUBLISH of the probe went there too: a
// replica serves SPUBLISH for its master's slots, to its own subscribers
// alone, so the probe came back at once while nothing the real master
// published reached the connection. Here the master forgot the replica,
// as a new master does not know the demoted one at first, so what it
// publishes (sharded: over the cluster bus to its shard's nodes) reaches
// the replica's subscribers no more: the probe, published from a script
// (which the replica answers with MOVED, followed to the master), never
// comes back, and the connection is found silent.
func TestProbeAnsweredByAReplicaProvesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Cluster of its own")
	}
	c, err := redistest.StartClusterWithReplicas(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := t.Context()
	master, replica := c.Nodes[0], c.Nodes[1]
	if err := c.WaitReplicated(master, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	stale := func(context.Context) ([]redis.ClusterSlot, error) {
		return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: replica.Addr}}}}, nil
	}
	cl := redis.NewClusterClient(&redis.ClusterOptions{ClusterSlots: stale, Protocol: 2, MaxRedirects: 2})
	defer cl.Close()
	// the master no longer knows the replica as one of its shard's nodes
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	if err := mc.Do(ctx, "CLUSTER", "FORGET", replica.ID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := mc.SPublish(ctx, "{t}:check", "x").Err(); err != nil {
		t.Fatal(err)
	}
	var silent atomic.Int32
	x := pubsub.New(cl, true, nopHandler{}, pubsub.Probe{Channel: func(int) string { return "{t}:probe" },
		Every: 100 * time.Millisecond, Wait: 500 * time.Millisecond, Silent: func(int, int) { silent.Add(1) }})
	defer x.Close()
	if err := x.Subscribe(ctx, 0, "{t}:room"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); silent.Load() == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a connection on a replica cut off from its master not found silent within 15 s (%d probes published): the probes came back from the replica", x.Probes())
		}
	}
}

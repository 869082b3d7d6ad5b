package redistest

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A master killed after CutReplication is replaced by its replica, which
// holds what the master wrote before the cut and nothing written after.
func TestFailoverLosesWritesAfterCut(t *testing.T) {
	c, err := StartClusterWithReplicas(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := t.Context()
	slot, err := c.Slot(ctx, "{k}")
	if err != nil {
		t.Fatal(err)
	}
	master, replicas, err := c.Shard(ctx, slot)
	if err != nil || len(replicas) != 1 {
		t.Fatalf("shard of slot %d: %v %v %v", slot, master, replicas, err)
	}
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer cl.Close()
	if err := cl.Set(ctx, "{k}before", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReplicated(master, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := CutReplication(ctx, master); err != nil {
		t.Fatal(err)
	}
	if err := cl.Set(ctx, "{k}after", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // a replica that could still resync would have done so
	master.Kill()
	killed := time.Now()
	promoted, err := WaitMaster(replicas[0], 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("replica promoted %v after the kill", promoted.Sub(killed).Round(time.Millisecond))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		now, _, err := c.Shard(ctx, slot)
		if err == nil && now == replicas[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot %d still on %v (%v), want %s", slot, now.Addr, err, replicas[0].Addr)
		}
	}
	rc := redis.NewClient(&redis.Options{Addr: replicas[0].Addr})
	defer rc.Close()
	if n, err := rc.Exists(ctx, "{k}before", "{k}after").Result(); err != nil || n != 1 {
		t.Fatalf("keys on the promoted replica: %d %v", n, err)
	}
	if n, _ := rc.Exists(ctx, "{k}before").Result(); n != 1 {
		t.Fatal("the write before the cut is lost")
	}
}

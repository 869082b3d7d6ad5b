package redisx

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
)

var setScript = Plain("test_set", "redis.call('SET', KEYS[1], ARGV[1]) return 'OK'")

// setCall sets key to value.
type setCall struct{ key, value string }

func (setCall) Script() *Script               { return setScript }
func (c setCall) KeysArgs() ([]string, []any) { return []string{c.key}, []any{c.value} }

// A call pinned to the master the client's layout names, when that layout
// is a failover behind (the node named is the slot's replica now), is
// answered MOVED and did not run: it is sent again once the layout was
// read again, to the slot's master, and waits for its replica there. It
// failed with the MOVED before, and a match's commit waited for a repair
// (a chaos tester's graceful failovers: matches told 5 s late).
func TestRunReplicatedFollowsAMovedSlot(t *testing.T) {
	master, replica := redistest.OwnReplicatedPair(t)
	ctx := t.Context()
	var reads atomic.Int32
	layout := func(context.Context) ([]redis.ClusterSlot, error) {
		owner, other := master.Addr, replica.Addr
		if reads.Add(1) == 1 { // the first read: before the failover
			owner, other = other, owner
		}
		return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: owner}, {Addr: other}}}}, nil
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{ClusterSlots: layout, Protocol: 2, ClusterStateReloadInterval: time.Hour})
	defer cc.Close()
	b := &Base{Client: cc, Runner: NewRunner(cc, nil), Replicas: func(int) int { return 1 }}
	reply, acked, err := b.RunReplicated(ctx, setCall{"{t}:k", "v"}, 1, 2*time.Second)
	if err != nil || !acked || reply != "OK" {
		t.Fatalf("run: %v, acked %v, reply %v; want OK on the slot's master, acknowledged", err, acked, reply)
	}
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	if v, err := mc.Get(ctx, "{t}:k").Result(); err != nil || v != "v" {
		t.Fatalf("the master holds %q (%v), want v", v, err)
	}
	if n := reads.Load(); n < 2 {
		t.Fatalf("the layout was read %d times, want again after the MOVED", n)
	}
}

package sse_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

// A room stream on a master that hangs (SIGSTOP) rather than dies: once
// the replica is promoted, patches succeed on it and the stream gets them,
// while the old master is still stopped. Without the feed's probe the
// instance's Pub/Sub connection stayed on the hung node and the stream got
// only heartbeats until the node resumed (the chaos test: 22 s of silence
// after the promotion for a 30 s pause).
func TestRoomStreamFollowsAFailoverFromAHungMaster(t *testing.T) {
	c, err := redistest.StartClusterWithReplicas(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := t.Context()
	e := newEnv(t, redistest.Backend{Name: "failover", ClusterAddrs: c.Addrs()})
	id := e.room(t)
	cl := newClient()
	e.serve(t, alice, id, sse.Cursor{}, cl)
	e.patch(t, alice, id, 0)
	cl.waitFor(t, version(t, e, id))

	// Redis replicates asynchronously (docs/OPERATIONS.md, What Redis
	// Cluster can lose): a replica promoted before it has the room's
	// writes answers every patch "room not found", as it would any
	// client. Under load the replica had none of them yet (its offset 0
	// of the master's 77 257, the room created 0.1 s before the pause),
	// and no patch could succeed: the stream's following the failover is
	// what is tested here, not the writes' durability.
	master, replica, err := c.ReplicatedShard(ctx, e.st.RoomKeys(id)[0], 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	master.Pause() // stopped to the end (Stop kills it)
	promote := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer promote.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if role, err := promote.Do(ctx, "ROLE").Slice(); err == nil && len(role) > 0 && role[0] == "master" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica was not promoted within 30s")
		}
	}
	promoted := time.Now()
	const bound = 20 * time.Second
	var first int64
	var errs []string // the patches' errors, said when none succeeded
	for time.Since(promoted) < bound && (first == 0 || !received(cl, first)) {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := e.st.PatchState(pctx, alice, id, rooms.StatePatch{Set: rooms.State{"n": []byte("1")}, IfMatch: rooms.NoIfMatch})
		cancel()
		if err != nil {
			errs = append(errs, fmt.Sprintf("%v: %v", time.Since(promoted).Round(time.Millisecond), err))
		}
		if err == nil && first == 0 {
			first = v.Version
		}
		time.Sleep(200 * time.Millisecond)
	}
	if first == 0 {
		t.Fatalf("no patch succeeded within %v of the promotion: %s", bound, strings.Join(errs, "; "))
	}
	if !received(cl, first) {
		t.Fatalf("the stream did not get version %d, patched after the promotion, within %v of it (the old master still stopped)", first, bound)
	}
	t.Logf("version %d received %v after the promotion", first, time.Since(promoted).Round(10*time.Millisecond))
}

// received reports whether cl got an event of version v or later.
func received(cl *client, v int64) bool {
	for _, f := range cl.all() {
		if f.Version >= v {
			return true
		}
	}
	return false
}

package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// A master added to a running Cluster (redis-cli --cluster add-node) has
// none of RealSync's code: the library was loaded on the masters there
// were when the store opened. A shard's slot moved to it, slowly as a
// rebalance does (keys migrated a few at a time), must be served
// throughout: a script whose keys already went is sent to the new master
// (ASK) and one sent after the move reaches it through MOVED before the
// store's client re-read the layout; either must run there, not fail
// with the node's "Function not found" (500: the store loaded the library
// on the slot's master as its layout said, the old one). A script whose
// keys are split (or one missing, as most scripts touch a key that does
// not exist) answers TRYAGAIN, which is "not now" (503). Every patch
// during the move must succeed or answer ErrUnavailable, and the first
// one after the move succeed.
func TestScriptsFollowASlotToAnAddedMaster(t *testing.T) {
	c := ownCluster(t)
	s := openStore(t, redistest.Backend{Name: "own-cluster", ClusterAddrs: c.Addrs()})
	ctx := t.Context()
	added, err := c.AddMaster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// three shards in turn; only the first move finds the added master
	// without the library, and its first call after the move meets MOVED
	// before the client's layout caught up in about one run of three
	// (without EVAL's fallback: "Function not found")
	for i := range 3 {
		moveUnderPatches(t, c, s, added, i)
	}
}

// moveUnderPatches moves the slot of a new room to master to under a
// patch every 5 ms (see TestScriptsFollowASlotToAnAddedMaster).
func moveUnderPatches(t *testing.T, c *redistest.Cluster, s *store.Store, to *redistest.Server, i int) {
	ctx := t.Context()
	var (
		r     rooms.Room
		owner rooms.User
	)
	for tries := 0; ; tries++ {
		owner = rooms.User{ID: fmt.Sprintf("u-mover-%d-%d", i, tries), Name: "mover"}
		r = mustCreate(t, s, owner, newRoom(func(r *rooms.NewRoom) { r.Mode = fmt.Sprintf("mode-%d-%d", i, tries) })).Room
		m, _, err := c.MasterOf(ctx, s.RoomKey(r.ID))
		if err != nil {
			t.Fatal(err)
		}
		if m != to {
			break
		}
		if tries == 50 {
			t.Fatal("every new room's shard is on the added master already")
		}
	}
	patch := func() error {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := s.PatchState(pctx, owner, r.ID, rooms.StatePatch{Set: rooms.State{"t": []byte("1")}, IfMatch: rooms.NoIfMatch})
		return err
	}
	if err := patch(); err != nil {
		t.Fatal(err)
	}

	var ok, unavailable atomic.Int64
	var other atomic.Value
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			switch err := patch(); {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, rooms.ErrUnavailable):
				unavailable.Add(1)
			default:
				other.CompareAndSwap(nil, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var asked error
	got, moved, err := c.MoveSlot(ctx, s.RoomKey(r.ID), redistest.SlotMove{To: to, KeysPerMigrate: 1, Pause: 50 * time.Millisecond,
		Migrated: func() {
			close(stop)
			<-done
			asked = patch()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if got != to {
		t.Fatalf("slot moved to %s, want the added master %s", got.Addr, to.Addr)
	}
	// the store's client still holds the layout before the move
	after := patch()
	t.Logf("room %d: moved %d keys; during the move %d patches succeeded, %d unavailable", i, moved, ok.Load(), unavailable.Load())
	if asked != nil && !errors.Is(asked, rooms.ErrUnavailable) {
		t.Errorf("a patch with every key of the slot on the added master (ASK): %v, want success or ErrUnavailable", asked)
	}
	if after != nil {
		t.Errorf("a patch right after the move (MOVED): %v", after)
	}
	if err, _ := other.Load().(error); err != nil {
		t.Errorf("a patch during the move: %v, want success or ErrUnavailable", err)
	}
}

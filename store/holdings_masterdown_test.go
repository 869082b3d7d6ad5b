package store_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// A user whose holdings must be rebuilt (a new user, or one idle for the
// key's hour) while a Cluster master is down with no replica to take over
// (cluster-require-full-coverage no) creates rooms on the other masters:
// the holdings are built from the shards read, and the owned quota
// refuses past its limit counting those, so the user holds at most the
// rooms on the master down beyond it. The key is marked partial, not
// whole; once the master is back (paused, then resumed: its rooms kept),
// the next create past Reread reads every shard again, counts the rooms
// on it, refuses, and the holdings match the rooms exactly. Before, the
// rebuild read every shard in one go and failed with the master down:
// every create of such a user answered 503, on every master (an
// operations tester's find, 2026-12-07).
func TestQuotaBuiltFromTheMastersUp(t *testing.T) {
	for _, how := range []string{"killed", "paused"} {
		t.Run(how, func(t *testing.T) {
			c := ownCluster(t)
			ctx := context.Background()
			if err := c.PartialCoverage(ctx); err != nil {
				t.Fatal(err)
			}
			prefix := redistest.Prefix(t)
			open := func(q store.Quotas) *store.Store {
				return openStoreWith(t, redistest.Backend{Name: "cluster", ClusterAddrs: c.Addrs()}, func(cfg *store.Config) {
					// one stripe per (mode, region): a room of a mode lands
					// on the shard its probe did
					cfg.Prefix, cfg.Quotas, cfg.Stripes = prefix, q, store.Stripes{}
				})
			}
			// setup keeps no holdings (both limits off): u's rooms made
			// through it leave u without a holdings key, as a user idle
			// for an hour
			setup, s := open(store.Quotas{}), open(store.Quotas{RoomsOwned: 3, RoomsJoined: 20})
			masterOf := func(key string) *redistest.Server {
				t.Helper()
				m, _, err := c.MasterOf(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			u := user(1)
			home := masterOf(s.HoldingsKey(u.ID))
			// the master to take down holds neither u's holdings nor
			// every mode: modes placed on it (onDown), and on the others
			var down *redistest.Server
			var onDown, onUp []rooms.NewRoom
			for i := 0; len(onDown) < 2 || len(onUp) < 4; i++ {
				if i == 200 {
					t.Fatalf("no placement found: %d modes on the master down, %d on the others", len(onDown), len(onUp))
				}
				p := spread(i)
				probe := mustCreate(t, setup, user(900+i), p).Room.ID
				m := masterOf(s.RoomKey(probe))
				if down == nil && m != home {
					down = m
				}
				if m == down {
					onDown = append(onDown, p)
				} else {
					onUp = append(onUp, p)
				}
			}
			onDown = onDown[:2]
			// u is in 2 rooms on the master down and 1 on the others
			var downRoom string
			for _, p := range onDown {
				downRoom = mustCreate(t, setup, u, p).Room.ID
			}
			upRoom := mustCreate(t, setup, u, onUp[0]).Room.ID
			if raw, _, err := s.HoldingsRaw(ctx, u.ID); err != nil || len(raw) != 0 {
				t.Fatalf("u's holdings before: %v %v, want none", raw, err)
			}
			// s knows the layout before the master fails (a client's first
			// call reads it from any node, the one down too)
			if _, _, err := s.Get(ctx, upRoom, false); err != nil {
				t.Fatal(err)
			}
			if how == "killed" {
				down.Kill()
			} else {
				down.Pause()
				t.Cleanup(down.Resume) // before the server's stop, even on a failure
			}
			// 1 room counted (the master down unread): 2 more within 3
			for i, p := range onUp[1:3] {
				if _, err := s.Create(ctx, u, p); err != nil {
					t.Fatalf("create %d on a master up, one %s: %v, want a room", i+1, how, err)
				}
			}
			if _, err := s.Create(ctx, u, onUp[3]); !errors.Is(err, rooms.ErrOwnedRoomsLimit) {
				t.Fatalf("a create past the quota counted from the masters up: %v, want ErrOwnedRoomsLimit", err)
			}
			raw, _, err := s.HoldingsRaw(ctx, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) != 4 || !strings.HasPrefix(raw["#"], "p:") {
				t.Fatalf("u's holdings with a master %s: %v, want the 3 rooms up and a partial marker", how, raw)
			}
			if how == "killed" {
				return // its rooms are lost with it
			}
			down.Resume()
			waitReadable(t, s, downRoom)
			// the next create once Reread passed reads every shard again
			if err := s.AgeHoldings(ctx, u.ID, store.HoldingsReread); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Create(ctx, u, onUp[3]); !errors.Is(err, rooms.ErrOwnedRoomsLimit) {
				t.Fatalf("a create with the master back: %v, want ErrOwnedRoomsLimit (5 rooms owned)", err)
			}
			want := reality(t, s, u)
			if got := holdings(t, s, u); len(want) != 5 || !maps.Equal(got, want) {
				t.Fatalf("u's holdings with the master back: %v, want %v (5 rooms, 2 on the master back)", got, want)
			}
			if raw, _, err := s.HoldingsRaw(ctx, u.ID); err != nil || raw["#"] != "1" {
				t.Fatalf("u's holdings marker with the master back: %v %v, want whole (1)", raw["#"], err)
			}
		})
	}
}

// waitReadable waits until s reads room id (its master back).
func waitReadable(t *testing.T, s *store.Store, id string) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, _, err = s.Get(context.Background(), id, false); err == nil {
			return
		}
	}
	t.Fatal(fmt.Errorf("room %s unread 30 s after its master came back: %w", id, err))
}

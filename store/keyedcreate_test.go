package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// A keyed create whose reply was lost after it ran (503) and is sent again
// with the same Idempotency-Key (its claim lapsed or was never kept)
// answers the room the first run made, making no second: the room's id
// derives from the caller, the key and the body. Another body under the
// key is another room, and once the caller left the key's room a run of
// it makes a new one; standalone and Cluster, the quotas on.
func TestLostCreateReplyFoundAgainWithItsKey(t *testing.T) {
	for _, tc := range proxiedBackends(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openStoreWith(t, tc.b, func(c *store.Config) {
				c.Batch = &store.Batching{}
				c.Quotas = store.Quotas{RoomsOwned: 3, RoomsJoined: 3}
			})
			mustCreate(t, s, bob, newRoom()) // the script known to the nodes
			keyed := newRoom(func(r *rooms.NewRoom) { r.Key = "create-1"; r.Visibility = rooms.Private })
			loseOneReply(t, tc.proxies, s.SentAs("room_create"), func() error {
				_, err := s.Create(ctx, alice, keyed)
				return err
			})
			in := reality(t, s, alice)
			if len(in) != 1 {
				t.Fatalf("after the lost reply alice is in %v, want one room", in)
			}
			again, err := s.Create(ctx, alice, keyed)
			if err != nil {
				t.Fatal(err)
			}
			if in[again.Room.ID] != "o" || again.PlayerID != 1 || again.Room.PlayerCount != 1 || again.Room.InviteCode == "" {
				t.Fatalf("sent again: room %s player %d, %d players, code %q; want the room of %v, player 1 alone, with its code",
					again.Room.ID, again.PlayerID, again.Room.PlayerCount, again.Room.InviteCode, in)
			}
			if got := reality(t, s, alice); len(got) != 1 {
				t.Fatalf("after sending it again alice is in %v", got)
			}
			if v := again.Room.Version; v != 1 {
				t.Fatalf("the room at version %d after the run again, want 1 (nothing changed)", v)
			}
			// another body under the key is another room
			other, err := s.Create(ctx, alice, newRoom(func(r *rooms.NewRoom) { r.Key = "create-1"; r.Name = "Other" }))
			if err != nil || other.Room.ID == again.Room.ID {
				t.Fatalf("another body under the key: %s %v, want another room", other.Room.ID, err)
			}
			// once alice left the key's room (bob in it, so it stays), a run
			// of the key makes a new room, and a run again finds that one
			if _, err := s.JoinByCode(ctx, bob, again.Room.InviteCode); err != nil {
				t.Fatal(err)
			}
			if err := s.Leave(ctx, alice, again.Room.ID); err != nil {
				t.Fatal(err)
			}
			fresh, err := s.Create(ctx, alice, keyed)
			if err != nil || fresh.Room.ID == again.Room.ID || fresh.PlayerID != 1 {
				t.Fatalf("the key run after alice left its room: %s player %d (%v), want a new room", fresh.Room.ID, fresh.PlayerID, err)
			}
			if found, err := s.Create(ctx, alice, keyed); err != nil || found.Room.ID != fresh.Room.ID {
				t.Fatalf("run again: %s (%v), want %s", found.Room.ID, err, fresh.Room.ID)
			}
			// and once that room closed (alice alone in it), a new one again
			if _, err := s.Delete(ctx, alice, fresh.Room.ID); err != nil {
				t.Fatal(err)
			}
			last, err := s.Create(ctx, alice, keyed)
			if err != nil || last.Room.ID == fresh.Room.ID {
				t.Fatalf("the key run after its room closed: %s (%v), want a new room", last.Room.ID, err)
			}
			// a room's create key goes with it (checkInvariants: every entry
			// names its room)
			for _, id := range []string{last.Room.ID, other.Room.ID} {
				if _, err := s.Delete(ctx, alice, id); err != nil {
					t.Fatal(err)
				}
			}
			checkInvariants(t, s)
		})
	}
}

// Keyed creates sent at once (the key's claim lapsed while the first ran)
// make one room between them, which every run answers.
func TestConcurrentKeyedCreatesMakeOneRoom(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		keyed := newRoom(func(r *rooms.NewRoom) { r.Key = "create-at-once" })
		ids := make([]string, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				j, err := s.Create(context.Background(), alice, keyed)
				if err != nil {
					t.Error(err)
				}
				ids[i] = j.Room.ID
			})
		}
		wg.Wait()
		in := reality(t, s, alice)
		if len(in) != 1 {
			t.Fatalf("alice is in %v, want one room", in)
		}
		for _, id := range ids {
			if in[id] != "o" {
				t.Fatalf("answers %v, want each the room alice owns, %v", ids, in)
			}
		}
		checkInvariants(t, s)
	})
}

// A keyed create sent again after its lost answer finds its room even
// when that room filled the caller's quota (a reviewer's find: the quota
// refused the run again before its script could look, 409
// OWNED_ROOMS_LIMIT for the room the caller owns).
func TestLostCreateAtTheQuotaFoundAgain(t *testing.T) {
	proxy := redistest.StartProxy(t, strings.TrimPrefix(redistest.StandaloneURL(t), "redis://"))
	for _, q := range []store.Quotas{{RoomsOwned: 1, RoomsJoined: 3}, {RoomsOwned: 3, RoomsJoined: 1}} {
		s := openStoreWith(t, redistest.Backend{Name: "proxied", URL: "redis://" + proxy.Addr}, func(c *store.Config) {
			c.Batch = &store.Batching{}
			c.Quotas = q
		})
		ctx := context.Background()
		mustCreate(t, s, bob, newRoom()) // the script known
		keyed := newRoom(func(r *rooms.NewRoom) { r.Key = "create-q" })
		loseOneReply(t, []*redistest.Proxy{proxy}, s.SentAs("room_create"), func() error {
			_, err := s.Create(ctx, alice, keyed)
			return err
		})
		in := reality(t, s, alice)
		again, err := s.Create(ctx, alice, keyed)
		if err != nil || len(in) != 1 || in[again.Room.ID] != "o" {
			t.Fatalf("quotas %+v: sent again at the quota its first run filled: %s %v; want the room of %v", q, again.Room.ID, err, in)
		}
		// another create is refused by the quota all the same
		if _, err := s.Create(ctx, alice, newRoom(func(r *rooms.NewRoom) { r.Key = "create-r" })); err == nil {
			t.Fatalf("quotas %+v: another keyed create past the quota made a room", q)
		}
		checkInvariants(t, s)
	}
}

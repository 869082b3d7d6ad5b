package store_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// unheldStore is a store with room quotas on, short finished retention and
// disconnect grace, so the janitor closes rooms and removes players soon.
func unheldStore(t *testing.T, b redistest.Backend, q store.Quotas) *store.Store {
	return openStoreWith(t, b, func(c *store.Config) {
		c.Quotas = q
		c.Lifecycle = store.Lifecycle{FinishedRetention: 50 * time.Millisecond, IdleTimeout: time.Hour}
		c.DisconnectGrace = 50 * time.Millisecond
	})
}

// holdsExactly checks u's holdings list exactly the rooms u is in, and that
// a user in no room keeps no more than the key's marker ("in no room"),
// expiring within an hour.
func holdsExactly(t *testing.T, s *store.Store, u rooms.User) {
	t.Helper()
	real, h := reality(t, s, u), holdings(t, s, u)
	if !maps.Equal(real, h) {
		t.Errorf("%s holds %v, holdings %v", u.ID, real, h)
	}
	raw, ttl, err := s.HoldingsRaw(context.Background(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(real) == 0 && len(raw) > 0 && (len(raw) != 1 || raw["#"] != "1" || ttl <= 0 || ttl > store.HoldingsTTL) {
		t.Errorf("%s is in no room and has holdings %v (TTL %v)", u.ID, raw, ttl)
	}
}

func unheld(t *testing.T, s *store.Store) []string {
	t.Helper()
	l, err := s.Unheld(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Every way a user's room goes other than a leave (the janitor closing it,
// its owner or the server deleting it, a kick, a ban, the janitor removing
// a disconnected player, the last player removed) leaves no holdings entry
// after one janitor visit, and ownership the janitor passes on is recorded.
func TestEveryRemovalReleasesItsHoldings(t *testing.T) {
	alongside(t)
	server := rooms.User{Server: true}
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			// do ends the room or the guest's place in it; returns
			// whether the janitor has done its part (nil: nothing to wait for)
			do func(t *testing.T, s *store.Store, owner, guest rooms.User, id string, guestPID int) func() bool
			// gone: who is in no room afterwards
			guestStays, ownerStays bool
		}{
			{name: "JanitorClose", do: func(t *testing.T, s *store.Store, owner, _ rooms.User, id string, _ int) func() bool {
				update(t, s, owner, id, rooms.UpdateParams{Status: ptr(rooms.Finished)})
				return gone(s, id)
			}},
			{name: "OwnerDelete", do: func(t *testing.T, s *store.Store, owner, _ rooms.User, id string, _ int) func() bool {
				if _, err := s.Delete(ctx, owner, id); err != nil {
					t.Fatal(err)
				}
				return nil
			}},
			{name: "ServerDelete", do: func(t *testing.T, s *store.Store, _, _ rooms.User, id string, _ int) func() bool {
				if _, err := s.Delete(ctx, server, id); err != nil {
					t.Fatal(err)
				}
				return nil
			}},
			{name: "Kick", ownerStays: true, do: func(t *testing.T, s *store.Store, owner, _ rooms.User, id string, pid int) func() bool {
				if err := s.Kick(ctx, owner, id, pid); err != nil {
					t.Fatal(err)
				}
				return nil
			}},
			{name: "ServerKick", ownerStays: true, do: func(t *testing.T, s *store.Store, _, _ rooms.User, id string, pid int) func() bool {
				if err := s.Kick(ctx, server, id, pid); err != nil {
					t.Fatal(err)
				}
				return nil
			}},
			{name: "Ban", ownerStays: true, do: func(t *testing.T, s *store.Store, owner, _ rooms.User, id string, pid int) func() bool {
				if err := s.Ban(ctx, owner, id, pid); err != nil {
					t.Fatal(err)
				}
				return nil
			}},
			{name: "PresenceRemoval", ownerStays: true, do: func(t *testing.T, s *store.Store, _, guest rooms.User, id string, _ int) func() bool {
				dropStream(t, s, id, guest)
				return func() bool { return reality(t, s, guest)[id] == "" }
			}},
			{name: "OwnerPresenceRemoval", guestStays: true, do: func(t *testing.T, s *store.Store, owner, _ rooms.User, id string, _ int) func() bool {
				dropStream(t, s, id, owner)
				return func() bool { return reality(t, s, owner)[id] == "" }
			}},
			{name: "LastPlayerPresenceRemoval", do: func(t *testing.T, s *store.Store, owner, guest rooms.User, id string, _ int) func() bool {
				if err := s.Leave(ctx, guest, id); err != nil {
					t.Fatal(err)
				}
				dropStream(t, s, id, owner)
				return gone(s, id)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := unheldStore(t, b, store.Quotas{RoomsOwned: 3, RoomsJoined: 5})
				owner, guest := user(1), user(2)
				id := mustCreate(t, s, owner, spread(1)).Room.ID
				j, err := s.Join(ctx, guest, id)
				if err != nil {
					t.Fatal(err)
				}
				// both hold another room, which must stay
				mustCreate(t, s, owner, spread(2))
				mustCreate(t, s, guest, spread(3))
				for _, u := range []rooms.User{owner, guest} { // reservations long settled
					if err := s.AgeHoldings(ctx, u.ID, store.HoldingsInFlight+time.Second); err != nil {
						t.Fatal(err)
					}
				}
				done := tc.do(t, s, owner, guest, id, j.PlayerID)
				if done == nil {
					sweepAll(t, s, store.Report{}) // one visit
				} else {
					sweepUntil(t, s, store.Report{}, done) // the visit that does it also releases
				}
				for _, u := range []rooms.User{owner, guest} {
					holdsExactly(t, s, u)
				}
				if real := reality(t, s, owner); len(real) != 1+map[bool]int{true: 1}[tc.ownerStays] {
					t.Errorf("owner is in %v", real)
				}
				if real := reality(t, s, guest); len(real) != 1+map[bool]int{true: 1}[tc.guestStays] {
					t.Errorf("guest is in %v", real)
				}
				if tc.guestStays && holdings(t, s, guest)[id] != "o" {
					t.Errorf("guest's holdings %v: %s owned, passed on by the janitor", holdings(t, s, guest), id)
				}
				if l := unheld(t, s); len(l) != 0 {
					t.Errorf("unheld lists %v after the visit", l)
				}
				checkInvariants(t, s)
			})
		}
	})
}

// dropStream opens a stream of u and closes it: u is disconnected, and
// removed by the janitor after the grace.
func dropStream(t *testing.T, s *store.Store, id string, u rooms.User) {
	t.Helper()
	o := open(t, s, lease(id, u, "x"), sse.Cursor{})
	l := lease(id, u, "x")
	l.PlayerID = o.PlayerID
	if err := s.CloseStream(context.Background(), l); err != nil {
		t.Fatal(err)
	}
}

// A kick drops the kicked user's entry itself; an entry younger than a
// room script in flight that the janitor finds for the kick's unheld item
// may be a rejoin's reservation: it waits on the list, and is dropped once
// older; a rejoin before or while the janitor looks keeps its entry.
func TestKickRacingRejoinKeepsTheRejoin(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := unheldStore(t, b, store.Quotas{RoomsJoined: 5})
		ctx := context.Background()
		id := mustCreate(t, s, alice, spread(1)).Room.ID
		kick := func() {
			t.Helper()
			j, err := s.Join(ctx, bob, id)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Kick(ctx, alice, id, j.PlayerID); err != nil {
				t.Fatal(err)
			}
		}

		// kicked right after joining: the kick drops bob's entry; a
		// rejoin's reservation made right after (its script not run
		// yet) is young when the janitor looks at the kick's item
		kick()
		if h := holdings(t, s, bob); h[id] != "" {
			t.Fatalf("the kick left bob's entry: %v", h)
		}
		if err := s.Reserve(ctx, bob.ID, id, false); err != nil {
			t.Fatal(err)
		}
		sweepAll(t, s, store.Report{})
		if h := holdings(t, s, bob); h[id] != "m" || len(unheld(t, s)) != 1 {
			t.Fatalf("a young entry was dropped (holdings %v, unheld %v)", h, unheld(t, s))
		}
		if err := s.AgeHoldings(ctx, bob.ID, store.HoldingsInFlight+time.Second); err != nil {
			t.Fatal(err)
		}
		sweepAll(t, s, store.Report{})
		holdsExactly(t, s, bob)

		// kicked, then back in before the janitor looks
		kick()
		if err := s.AgeHoldings(ctx, bob.ID, store.HoldingsInFlight+time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Join(ctx, bob, id); err != nil {
			t.Fatal(err)
		}
		if err := s.AgeHoldings(ctx, bob.ID, store.HoldingsInFlight+time.Second); err != nil { // even once settled
			t.Fatal(err)
		}
		sweepAll(t, s, store.Report{})
		if h := holdings(t, s, bob); h[id] != "m" {
			t.Fatalf("the rejoin's entry was dropped: %v", h)
		}
		holdsExactly(t, s, bob)

		// kicked, then rejoining: reserved, its room script not run yet
		j, _ := s.Join(ctx, bob, id)
		if err := s.AgeHoldings(ctx, bob.ID, store.HoldingsInFlight+time.Second); err != nil {
			t.Fatal(err)
		}
		if err := s.Kick(ctx, alice, id, j.PlayerID); err != nil {
			t.Fatal(err)
		}
		if err := s.Reserve(ctx, bob.ID, id, false); err != nil {
			t.Fatal(err)
		}
		sweepAll(t, s, store.Report{})
		if h := holdings(t, s, bob); h[id] != "m" {
			t.Fatalf("the rejoin's reservation was dropped: %v", h)
		}
		if _, err := s.Join(ctx, bob, id); err != nil { // its room script runs
			t.Fatal(err)
		}
		if err := s.AgeHoldings(ctx, bob.ID, store.HoldingsInFlight+time.Second); err != nil {
			t.Fatal(err)
		}
		sweepAll(t, s, store.Report{})
		holdsExactly(t, s, bob)
		if l := unheld(t, s); len(l) != 0 {
			t.Errorf("unheld lists %v", l)
		}
		checkInvariants(t, s)
	})
}

// Kicks and rejoins of many users race janitor visits through two
// instances: a user in the room always has its entry, and once the
// reservations settle the holdings are exactly the rooms.
func TestKicksRacingRejoinsAndTheJanitor(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s1, s2 := quotaInstances(t, b, store.Quotas{RoomsJoined: 5})
		ctx := context.Background()
		id := mustCreate(t, s1, alice, newRoom(func(r *rooms.NewRoom) { r.MaxPlayers = 20 })).Room.ID
		const users, rounds = 6, 15
		stop := make(chan struct{})
		var sweeps sync.WaitGroup
		sweeps.Add(1)
		go func() {
			defer sweeps.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := []*store.Store{s1, s2}[i%2].Sweep(ctx, i%8, "test", time.Millisecond); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		var wg sync.WaitGroup
		for u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				me, s := user(10+u), []*store.Store{s1, s2}[u%2]
				for r := range rounds {
					j, err := s.Join(ctx, me, id)
					if err != nil {
						t.Error(err)
						return
					}
					if err := s.AgeHoldings(ctx, me.ID, store.HoldingsInFlight+time.Second); err != nil {
						t.Error(err)
						return
					}
					if r == rounds-1 && u%2 == 0 {
						break // ends in the room
					}
					if err := s.Kick(ctx, alice, id, j.PlayerID); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(stop)
		sweeps.Wait()
		for u := range users {
			if err := s1.AgeHoldings(ctx, user(10+u).ID, store.HoldingsInFlight+time.Second); err != nil {
				t.Fatal(err)
			}
		}
		sweepAll(t, s1, store.Report{})
		for u := range users {
			holdsExactly(t, s1, user(10+u))
			if n := len(reality(t, s1, user(10+u))); n != 1-u%2 {
				t.Errorf("user %d in %d rooms", u, n)
			}
		}
		if l := unheld(t, s1); len(l) != 0 {
			t.Errorf("unheld lists %v", l)
		}
		checkInvariants(t, s1)
	})
}

// With both quotas off, no room script lists anything.
func TestNoUnheldListWithoutQuotas(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		j, err := s.Join(ctx, bob, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Kick(ctx, alice, id, j.PlayerID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, alice, id); err != nil {
			t.Fatal(err)
		}
		if l := unheld(t, s); len(l) != 0 {
			t.Errorf("unheld lists %v with the quotas off", l)
		}
	})
}

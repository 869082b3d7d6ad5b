package store_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// quotaInstances opens two stores with quotas on one backend and prefix,
// as two realsyncd processes would.
func quotaInstances(t *testing.T, b redistest.Backend, q store.Quotas) (*store.Store, *store.Store) {
	t.Helper()
	return twoInstances(t, b, store.Config{Quotas: q})
}

// spread is a room of its own (mode, region), so rooms land on many shards.
func spread(i int) rooms.NewRoom {
	return newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region = fmt.Sprintf("m%d", i), fmt.Sprintf("r%d", i%3) })
}

// reality is what u really holds: roomId → "o" (owner) or "m".
func reality(t *testing.T, s *store.Store, u rooms.User) map[string]string {
	t.Helper()
	ctx := context.Background()
	var mine []rooms.Joined
	var after *rooms.RoomPosition
	for {
		page, next, err := s.MyRooms(ctx, u, after, rooms.MaxMyRooms)
		if err != nil {
			t.Fatal(err)
		}
		mine = append(mine, page...)
		if next == nil {
			break
		}
		after = next
	}
	out := map[string]string{}
	for _, j := range mine {
		r, _, err := s.Get(ctx, j.Room.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		out[r.ID] = map[bool]string{true: "o", false: "m"}[r.OwnerPlayerID == j.PlayerID]
	}
	return out
}

func holdings(t *testing.T, s *store.Store, u rooms.User) map[string]string {
	t.Helper()
	h, err := s.Holdings(context.Background(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// One user creates 12 rooms and joins 12 others at once through two
// instances, with quotas of 3 owned and 5 joined: it ends in exactly 5
// rooms, owning at most 3, every other request refused with the limit's
// error, and its holdings match the rooms exactly.
func TestRoomQuotasHoldUnderConcurrency(t *testing.T) {
	const owned, joined, n = 3, 5, 12
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s1, s2 := quotaInstances(t, b, store.Quotas{RoomsOwned: owned, RoomsJoined: joined})
		ctx := context.Background()
		var others []string
		for i := range n {
			others = append(others, mustCreate(t, s1, user(100+i), spread(i)).Room.ID)
		}
		var created, joinedOK, ownedLimit, joinedLimit atomic.Int32
		var wg sync.WaitGroup
		for i := range 2 * n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := []*store.Store{s1, s2}[i%2]
				var err error
				if i < n {
					_, err = s.Create(ctx, alice, spread(50+i))
				} else {
					_, err = s.Join(ctx, alice, others[i-n])
				}
				switch {
				case err == nil && i < n:
					created.Add(1)
				case err == nil:
					joinedOK.Add(1)
				case errors.Is(err, rooms.ErrOwnedRoomsLimit):
					ownedLimit.Add(1)
				case errors.Is(err, rooms.ErrJoinedRoomsLimit):
					joinedLimit.Add(1)
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if c, j := created.Load(), joinedOK.Load(); c > owned || c+j != joined {
			t.Errorf("created %d, joined %d; want at most %d created and %d in all", c, j, owned, joined)
		}
		if r := ownedLimit.Load() + joinedLimit.Load(); int(r) != 2*n-joined {
			t.Errorf("%d refused (%d owned, %d joined limit), want %d", r, ownedLimit.Load(), joinedLimit.Load(), 2*n-joined)
		}
		real := reality(t, s1, alice)
		if len(real) != joined {
			t.Errorf("alice is in %d rooms, want %d", len(real), joined)
		}
		if h := holdings(t, s1, alice); !maps.Equal(h, real) {
			t.Errorf("holdings %v, rooms %v", h, real)
		}
		checkInvariants(t, s1)
	})
}

// Leaving frees a place at once; rooms left otherwise (kicked, closed)
// are found out when the user reaches the limit; ownership passed on by a
// leave counts for the new owner, and may exceed the quota.
func TestRoomQuotasFollowTheRooms(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s, _ := quotaInstances(t, b, store.Quotas{RoomsOwned: 1, RoomsJoined: 2})
		ctx := context.Background()
		mine := mustCreate(t, s, alice, spread(1)).Room.ID
		_, err := s.Create(ctx, alice, spread(2))
		wantErr(t, err, rooms.ErrOwnedRoomsLimit)

		bobs := mustCreate(t, s, bob, spread(3)).Room.ID
		if _, err := s.Join(ctx, alice, bobs); err != nil {
			t.Fatal(err)
		}
		carols := mustCreate(t, s, carol, spread(4)).Room.ID
		_, err = s.Join(ctx, alice, carols)
		wantErr(t, err, rooms.ErrJoinedRoomsLimit)
		if _, err := s.Join(ctx, alice, bobs); err != nil { // a member's rejoin is no new room
			t.Fatal(err)
		}

		// a leave frees its place at once
		if err := s.Leave(ctx, alice, bobs); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Join(ctx, alice, carols); err != nil {
			t.Fatal(err)
		}
		// a room closed by someone else is found out when the user
		// reaches a limit, once its entry is older than a reservation
		// in flight can be
		if _, err := s.Delete(ctx, carol, carols); err != nil {
			t.Fatal(err)
		}
		if h := holdings(t, s, alice); len(h) != 2 {
			t.Fatalf("holdings %v: the closed room is still counted until checked", h)
		}
		daves := mustCreate(t, s, user(7), spread(5)).Room.ID
		_, err = s.Join(ctx, alice, daves) // the entry may be a reservation in flight
		wantErr(t, err, rooms.ErrJoinedRoomsLimit)
		if err := s.AgeHoldings(ctx, alice.ID, store.HoldingsInFlight+time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Join(ctx, alice, daves); err != nil { // checked, and the closed room dropped
			t.Fatal(err)
		}
		if real := reality(t, s, alice); !maps.Equal(real, holdings(t, s, alice)) {
			t.Errorf("alice holds %v, holdings %v", real, holdings(t, s, alice))
		}
		if err := s.Leave(ctx, alice, daves); err != nil {
			t.Fatal(err)
		}

		// ownership passed on by bob's leave counts for alice, beyond the quota
		if _, err := s.Join(ctx, bob, mine); err != nil {
			t.Fatal(err)
		}
		if err := s.Leave(ctx, alice, mine); err != nil {
			t.Fatal(err)
		}
		if got := holdings(t, s, bob); got[mine] != "o" || got[bobs] != "o" {
			t.Errorf("bob's holdings %v: both rooms owned", got)
		}
		if real := reality(t, s, bob); !maps.Equal(real, holdings(t, s, bob)) {
			t.Errorf("bob holds %v, holdings %v", real, holdings(t, s, bob))
		}
		checkInvariants(t, s)
	})
}

// Sixteen users quick-join and leave one (mode, region) 30 times each at
// once, so owners leave rooms others are joining and leaving: ownership
// passes on to a user whose own leave is in flight. Afterwards every user's
// holdings hold exactly its rooms (none): a leave drops its entry even when
// the entry's role changed between its read and the drop (it used to stay,
// and quick-join + leave churn reached the joined-rooms limit in seconds).
func TestHoldingsExactAfterQuickJoinChurn(t *testing.T) {
	alongside(t)
	const users, cycles = 16, 30
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openStoreWith(t, b, func(c *store.Config) { c.Quotas = store.Quotas{RoomsJoined: users * cycles} })
		ctx := context.Background()
		var wg sync.WaitGroup
		for i := range users {
			u := rooms.User{ID: fmt.Sprint("u-churn-", i), Name: "churn"}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range cycles {
					q, err := s.QuickJoin(ctx, u, "churn", []string{"eu"}, nil, quickRoom("churn", "eu", 4))
					if err == nil {
						err = s.Leave(ctx, u, q.Room.ID)
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		for i := range users {
			holdsExactly(t, s, rooms.User{ID: fmt.Sprint("u-churn-", i)})
		}
	})
}

// An owner at the own-rooms limit who deletes a room may create another at
// once: the delete corrects the owner's holdings itself (a tester's find:
// 409 OWNED_ROOMS_LIMIT for about a second, until the janitor's visit).
func TestDeleteFreesTheOwnersQuotaAtOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := quotaInstances(t, b, store.Quotas{RoomsOwned: 1, RoomsJoined: 5})
		u := user(5)
		id := mustCreate(t, s, u, spread(0)).Room.ID
		if _, err := s.Create(ctx, u, spread(1)); !errors.Is(err, rooms.ErrOwnedRoomsLimit) {
			t.Fatalf("second room: %v, want ErrOwnedRoomsLimit", err)
		}
		if _, err := s.Delete(ctx, u, id); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, u, spread(1)); err != nil {
			t.Fatalf("create right after deleting: %v", err)
		}
	})
}

// A kicked (or banned) user at the joined-rooms limit may join another
// room at once: the kick corrects the user's holdings itself, as a leave
// does, instead of leaving it to the janitor (which keeps an entry younger
// than holdings.InFlight, a minute).
func TestKickFreesTheJoinedQuotaAtOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := quotaInstances(t, b, store.Quotas{RoomsOwned: 5, RoomsJoined: 1})
		u := user(7)
		for i, ban := range []bool{false, true} {
			owner := user(100 + 2*i) // an owner is in its room: one each
			a := mustCreate(t, s, owner, spread(0)).Room.ID
			other := mustCreate(t, s, user(101+2*i), spread(1)).Room.ID
			pid := mustJoin(t, s, u, a).PlayerID
			if _, err := s.Join(ctx, u, other); !errors.Is(err, rooms.ErrJoinedRoomsLimit) {
				t.Fatalf("second room: %v, want ErrJoinedRoomsLimit", err)
			}
			kick := s.Kick
			if ban {
				kick = s.Ban
			}
			if err := kick(ctx, owner, a, pid); err != nil {
				t.Fatal(err)
			}
			mustJoin(t, s, u, other) // right after the kick
			if err := s.Leave(ctx, u, other); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// A quick-join with the room quotas on reaches its user's slot in two
// calls, its lock with the placeholder's reservation and their end
// (quickjoin_end.lua: the rebind, or the placeholder dropped, and the
// lock's release), where it took four (lock, reservation, rebind or
// release, the lock's release); four when the user is in a room of the
// mode already (memberOf re-stamps its entry and undoes that once done,
// holdings.Found and Undo, so that a leave racing it still drops the
// entry); and the holdings are exact after each outcome.
func TestQuickJoinReachesItsUserInTwoCalls(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := quotaInstances(t, b, store.Quotas{RoomsOwned: 2, RoomsJoined: 4})
		u := user(1)
		var calls atomic.Int64 // the commands with an argument in u's slot: its lock, its holdings
		s.Client().AddHook(redistest.Around(func(_ context.Context, cmds []redis.Cmder, send func() error) error {
			for _, c := range cmds {
				for _, a := range c.Args() {
					if a, _ := a.(string); strings.Contains(a, ":qjlock:"+u.ID) || strings.Contains(a, ":held:"+u.ID) {
						calls.Add(1)
						break
					}
				}
			}
			return send()
		}))
		// the holdings key built (a cold key takes calls of its own)
		first, err := s.QuickJoin(ctx, u, "twocalls", []string{"eu"}, nil, quickRoom("twocalls", "eu", 4))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Leave(ctx, u, first.Room.ID); err != nil {
			t.Fatal(err)
		}
		other := mustCreate(t, s, user(2), *quickRoom("joined", "eu", 4)).Room.ID
		for _, tc := range []struct {
			name, mode string
			create     *rooms.NewRoom
			want       func(rooms.QuickJoined, error) bool
			calls      int64
		}{
			{"created", "twocalls", quickRoom("twocalls", "eu", 4), func(q rooms.QuickJoined, err error) bool { return err == nil && q.Created }, 2},
			{"joined", "joined", nil, func(q rooms.QuickJoined, err error) bool { return err == nil && q.Room.ID == other }, 2},
			{"in it already", "joined", nil, func(q rooms.QuickJoined, err error) bool { return err == nil && q.Room.ID == other }, 4},
			{"no match", "nothing", nil, func(q rooms.QuickJoined, err error) bool { return errors.Is(err, rooms.ErrNoMatch) }, 2},
		} {
			calls.Store(0)
			q, err := s.QuickJoin(ctx, u, tc.mode, []string{"eu"}, nil, tc.create)
			if !tc.want(q, err) {
				t.Fatalf("%s: %+v, %v", tc.name, q.Room, err)
			}
			if n := calls.Load(); n != tc.calls {
				t.Errorf("%s: %d calls in the user's slot, want %d", tc.name, n, tc.calls)
			}
			holdsExactly(t, s, u)
		}
	})
}

// MayHoldRoom (a ticket's check of the room quotas) answers as a
// reservation would, and leaves the holdings as they were.
func TestMayHoldRoomChecksWithoutHolding(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := quotaInstances(t, b, store.Quotas{RoomsOwned: 1, RoomsJoined: 2})
		owner, other := user(1), user(2)
		id := mustCreate(t, s, owner, spread(0)).Room.ID
		check := func(u rooms.User, asOwner bool, want error) {
			t.Helper()
			before := holdings(t, s, u)
			if err := s.MayHoldRoom(ctx, u.ID, asOwner); !errors.Is(err, want) || (want == nil) != (err == nil) {
				t.Fatalf("%s as owner %v: %v, want %v", u.ID, asOwner, err, want)
			}
			if after := holdings(t, s, u); !maps.Equal(before, after) {
				t.Fatalf("holdings changed: %v, then %v", before, after)
			}
		}
		check(owner, false, nil)
		check(owner, true, rooms.ErrOwnedRoomsLimit)
		check(other, true, nil) // a new user's holdings, built
		mustJoin(t, s, other, id)
		mustCreate(t, s, other, spread(1))
		check(other, false, rooms.ErrJoinedRoomsLimit)
		check(other, true, rooms.ErrOwnedRoomsLimit)
	})
}

package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// server is the server as an API key with every scope.
var server = rooms.User{ID: "key:gs-1", Name: "gs-1", Server: true, Scopes: rooms.ScopeRead | rooms.ScopeWrite | rooms.ScopeAdmin}

// bansKey is the set of room id's bans (KEYS[35] of the mutation scripts).
func bansKey(s *store.Store, id string) string { return s.RoomKey(id) + ":bans" }

// A ban kicks and bars the user from the room: join by id and by code are
// BANNED, quick-join never places them there; the event says "kicked";
// the ban goes with the room.
func TestBanFlow(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		pub := mustCreate(t, s, alice, newRoom()).Room
		bobPID := mustJoin(t, s, bob, pub.ID).PlayerID
		if err := s.Ban(ctx, alice, pub.ID, bobPID); err != nil {
			t.Fatal(err)
		}
		evs := events(t, s, pub.ID)
		last := evs[len(evs)-1]
		if last.Type != "player_left" || last.Reason != "kicked" {
			t.Fatalf("last event %+v, want player_left kicked", last)
		}
		_, err := s.Join(ctx, bob, pub.ID)
		wantErr(t, err, rooms.ErrBanned)
		mustJoin(t, s, carol, pub.ID) // others still join

		// quick-join: the only joinable room of the bucket banned bob
		_, err = s.QuickJoin(ctx, bob, "battle", []string{"us-west"}, nil, nil)
		wantErr(t, err, rooms.ErrNoMatch)
		create := newRoom()
		q, err := s.QuickJoin(ctx, bob, "battle", []string{"us-west"}, nil, &create)
		if err != nil || !q.Created || q.Room.ID == pub.ID {
			t.Fatalf("quick-join with create: %+v, %v; want a new room", q, err)
		}

		// private room: join-by-code is BANNED, by id stays not found
		priv := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private })).Room
		pid := mustJoinCode(t, s, bob, priv.InviteCode)
		if err := s.Ban(ctx, server, priv.ID, pid); err != nil { // the server bans too
			t.Fatal(err)
		}
		_, err = s.JoinByCode(ctx, bob, priv.InviteCode)
		wantErr(t, err, rooms.ErrBanned)
		_, err = s.Join(ctx, bob, priv.ID)
		wantErr(t, err, rooms.ErrRoomNotFound)

		// the room's players never show bans; closing it deletes them
		r, _, err := s.Get(ctx, pub.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, in := r.Member(bob.ID); in {
			t.Fatal("bob still a member")
		}
		if _, err := s.Delete(ctx, alice, pub.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, server, priv.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, bob, q.Room.ID); err != nil {
			t.Fatal(err)
		}
		for _, k := range countKeys(t, s) {
			for _, id := range []string{pub.ID, priv.ID} {
				if k == bansKey(s, id) || k == s.RoomKey(id) {
					t.Errorf("key %s left after the room closed", k)
				}
			}
		}
		checkInvariants(t, s)
	})
}

func mustJoinCode(tb testing.TB, s *store.Store, u rooms.User, code string) int {
	tb.Helper()
	j, err := s.JoinByCode(context.Background(), u, code)
	if err != nil {
		tb.Fatal(err)
	}
	return j.PlayerID
}

// A room holds at most MaxBans bans: one more is refused and kicks nobody;
// a plain kick still works.
func TestBanLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		pid := mustJoin(t, s, bob, id).PlayerID
		fill := make([]any, rooms.MaxBans)
		for i := range fill {
			fill[i] = fmt.Sprintf("u-%d", i)
		}
		if err := s.Client().SAdd(ctx, bansKey(s, id), fill...).Err(); err != nil {
			t.Fatal(err)
		}
		err := s.Ban(ctx, alice, id, pid)
		wantErr(t, err, rooms.ErrValidation)
		if r, _, _ := s.Get(ctx, id, false); r.PlayerCount != 2 {
			t.Fatalf("playerCount %d after a refused ban, want 2", r.PlayerCount)
		}
		if err := s.Kick(ctx, alice, id, pid); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.Client().SCard(ctx, bansKey(s, id)).Result(); n != rooms.MaxBans {
			t.Fatalf("%d bans, want %d", n, rooms.MaxBans)
		}
	})
}

// A room remembers the users it kicked without a ban (the matcher's
// backfill and quick-join pass it over for them), its last MaxBans kicks:
// one more drops the oldest. A ban and a leave are not kicks to remember;
// the server's kick is.
func TestKicksRemembered(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		dave := rooms.User{ID: "u-dave", Name: "dave"}
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		kicked := s.RoomKey(id) + ":kicked"
		fill := make([]redis.Z, rooms.MaxBans)
		for i := range fill {
			fill[i] = redis.Z{Score: float64(i + 1), Member: fmt.Sprintf("u-%d", i)}
		}
		if err := s.Client().ZAdd(ctx, kicked, fill...).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.Ban(ctx, alice, id, mustJoin(t, s, carol, id).PlayerID); err != nil {
			t.Fatal(err)
		}
		mustJoin(t, s, dave, id)
		if err := s.Leave(ctx, dave, id); err != nil {
			t.Fatal(err)
		}
		if err := s.Kick(ctx, alice, id, mustJoin(t, s, bob, id).PlayerID); err != nil {
			t.Fatal(err)
		}
		got, err := s.Client().ZRange(ctx, kicked, 0, -1).Result()
		if err != nil || len(got) != rooms.MaxBans || got[0] != "u-1" || got[len(got)-1] != bob.ID {
			t.Fatalf("kicks remembered: %d, first %q, last %q (%v); want %d, u-1 first (u-0 dropped), %s last",
				len(got), got[0], got[len(got)-1], err, rooms.MaxBans, bob.ID)
		}
		if err := s.Kick(ctx, server, id, mustJoin(t, s, dave, id).PlayerID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Client().ZScore(ctx, kicked, dave.ID).Result(); err != nil {
			t.Fatalf("the server's kick of %s not remembered: %v", dave.ID, err)
		}
		for _, u := range []rooms.User{carol, alice} {
			if _, err := s.Client().ZScore(ctx, kicked, u.ID).Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("%s remembered as kicked (%v)", u.ID, err)
			}
		}
	})
}

// The server acts on any room without being in it: it writes any state
// key (by 0), sends messages as player 0 to chosen players, changes and
// closes the room, kicks; it never joins, leaves or creates.
func TestServerActions(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		mustJoin(t, s, bob, id)
		if _, err := s.PatchState(ctx, server, id, rooms.StatePatch{Set: rooms.State{"score": []byte("7")}, IfMatch: rooms.NoIfMatch}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SendMessage(ctx, server, id, rooms.Message{Type: "t", Data: []byte(`{}`), To: []int{2}}); err != nil {
			t.Fatal(err)
		}
		_, err := s.SendMessage(ctx, server, id, rooms.Message{Type: "t", Data: []byte(`{}`), To: []int{9}})
		wantErr(t, err, rooms.ErrValidation)
		pid, ms, err := s.Messages(ctx, server, id, 0)
		if err != nil || pid != 0 || len(ms) != 1 || ms[0].From != 0 {
			t.Fatalf("messages as the server: %d %+v %v", pid, ms, err)
		}
		locked := true
		if _, err := s.Update(ctx, server, id, rooms.UpdateParams{Locked: &locked}); err != nil {
			t.Fatal(err)
		}
		evs := events(t, s, id)
		var by []string
		for _, e := range evs {
			switch e.Type {
			case "state":
				by = append(by, fmt.Sprint("state by ", e.By))
			case "message":
				by = append(by, "message") // from 0: see Messages above
			}
		}
		if !slices.Equal(by, []string{"state by 0", "message"}) {
			t.Fatalf("events %v", by)
		}
		for name, err := range map[string]error{
			"create": func() error { _, err := s.Create(ctx, server, newRoom()); return err }(),
			"join":   func() error { _, err := s.Join(ctx, server, id); return err }(),
			"leave":  s.Leave(ctx, server, id),
		} {
			if !errors.Is(err, rooms.ErrScopeRequired) {
				t.Errorf("%s as the server: %v, want ErrScopeRequired", name, err)
			}
		}
		if err := s.Kick(ctx, server, id, 1); err != nil { // even the owner
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, server, id); err != nil {
			t.Fatal(err)
		}
		// a player without a user id would pass for the server: refused
		if _, err := s.PatchState(ctx, rooms.User{}, "x", rooms.StatePatch{IfMatch: rooms.NoIfMatch}); err == nil {
			t.Fatal("a player with an empty userId was served")
		}
		checkInvariants(t, s)
	})
}

// A ban racing the user's own leave and rejoin: whatever the order, a
// banned user is never left in the room, and a user in the room at the
// end was not banned.
func TestBanRacesJoin(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for round := range 20 {
			id := mustCreate(t, s, alice, newRoom()).Room.ID
			pid := mustJoin(t, s, bob, id).PlayerID
			var wg sync.WaitGroup
			var banErr error
			wg.Add(2)
			go func() {
				defer wg.Done()
				banErr = s.Ban(ctx, alice, id, pid)
			}()
			go func() {
				defer wg.Done()
				for range 3 { // bob leaves and comes back, under a new playerId
					if err := s.Leave(ctx, bob, id); err != nil && !errors.Is(err, rooms.ErrNotMember) {
						t.Error(err)
					}
					if _, err := s.Join(ctx, bob, id); errors.Is(err, rooms.ErrBanned) {
						return
					} else if err != nil {
						t.Error(err)
					}
				}
			}()
			wg.Wait()
			if banErr != nil && !errors.Is(banErr, rooms.ErrPlayerNotFound) {
				t.Fatalf("round %d: ban: %v", round, banErr)
			}
			banned, err := s.Client().SIsMember(ctx, bansKey(s, id), bob.ID).Result()
			if err != nil {
				t.Fatal(err)
			}
			r, _, err := s.Get(ctx, id, false)
			if err != nil {
				t.Fatal(err)
			}
			_, member := r.Member(bob.ID)
			switch {
			case banned && member:
				t.Fatalf("round %d: bob is banned and still in the room", round)
			case banErr == nil && !banned:
				t.Fatalf("round %d: the ban succeeded but bob is not banned", round)
			}
			if _, err := s.Join(ctx, bob, id); banned != errors.Is(err, rooms.ErrBanned) {
				t.Fatalf("round %d: banned %v, rejoin: %v", round, banned, err)
			}
		}
		checkInvariants(t, s)
	})
}

// A join skips the bans set of a room that never banned (its hash says
// bn "0"), reads it once the room has banned, and always reads it for a
// room created before the field (none in its hash). A refused join leaves
// nothing of the user in the room.
func TestBansCheckedOnceARoomBanned(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		c := s.Client()
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		if bn, _ := c.HGet(ctx, s.RoomKey(id), "bn").Result(); bn != "0" {
			t.Fatalf("a new room's bn %q, want \"0\"", bn)
		}
		bobPID := mustJoin(t, s, bob, id).PlayerID
		if err := s.Ban(ctx, alice, id, bobPID); err != nil {
			t.Fatal(err)
		}
		if bn, _ := c.HGet(ctx, s.RoomKey(id), "bn").Result(); bn != "1" {
			t.Fatalf("bn %q after a ban, want \"1\"", bn)
		}
		_, err := s.Join(ctx, bob, id)
		wantErr(t, err, rooms.ErrBanned)

		// a room of the release before: banned users in the set, no bn
		old := mustCreate(t, s, alice, newRoom()).Room.ID
		if err := c.HDel(ctx, s.RoomKey(old), "bn").Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.SAdd(ctx, bansKey(s, old), carol.ID).Err(); err != nil {
			t.Fatal(err)
		}
		_, err = s.Join(ctx, carol, old)
		wantErr(t, err, rooms.ErrBanned)
		for _, room := range []string{id, old} {
			if in, _ := c.HExists(ctx, s.RoomKey(room)+":users", carol.ID).Result(); in && room == old {
				t.Fatal("the refused user stayed in the users hash")
			}
			if in, _ := c.HExists(ctx, s.RoomKey(room)+":users", bob.ID).Result(); in {
				t.Fatal("the banned user is in the users hash")
			}
		}
		mustJoin(t, s, carol, id) // others still join
	})
}

// The owner's (or the server's) seat reservation refuses a user the room
// banned, as the join would (BANNED, naming them), and holds no seat for
// anyone of the request: a seat held for a banned user could never be
// taken and kept the room full for others until it lapsed (a reviewer's
// find). A ban made while a user held a seat cannot happen: a ban kicks a
// player, and a player holds no seat (their join took it).
func TestReservationRefusesBannedUsers(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		dave := rooms.User{ID: "u-dave", Name: "dave"}
		id := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.MaxPlayers = 4 })).Room.ID
		if err := s.Ban(ctx, alice, id, mustJoin(t, s, bob, id).PlayerID); err != nil {
			t.Fatal(err)
		}
		before := len(events(t, s, id))
		for _, u := range []rooms.User{alice, server} {
			_, err := s.ReserveSeats(ctx, u, id, []string{carol.ID, bob.ID, dave.ID}, time.Minute)
			wantErr(t, err, rooms.ErrUserBanned)
			if !strings.Contains(err.Error(), bob.ID) || strings.Contains(err.Error(), carol.ID) {
				t.Fatalf("%s's refusal %q: want it to name %s alone", u.ID, err, bob.ID)
			}
		}
		r, _, err := s.Get(ctx, id, false)
		if err != nil || r.ReservedSeats != 0 {
			t.Fatalf("room after the refusals: %d seats held (%v), want none: all or nothing", r.ReservedSeats, err)
		}
		if evs := events(t, s, id); len(evs) != before {
			t.Fatalf("events after the refusals: %+v", evs[before:])
		}
		// the others alone are held; bob's join stays BANNED
		if res, err := s.ReserveSeats(ctx, alice, id, []string{carol.ID, dave.ID}, time.Minute); err != nil || res.ReservedSeats != 2 {
			t.Fatalf("reserve without the banned user: %+v, %v", res, err)
		}
		_, err = s.Join(ctx, bob, id)
		wantErr(t, err, rooms.ErrBanned)
	})
}

// A match room made again after a crash (the matcher's retry), whose owner
// banned a user of the match meanwhile, holds the seats of the tickets
// without a banned user, none for the banned user's ticket (a party whole),
// and returns the room's id with a *matchmaking.SeatsRefusedError naming
// the banned user, for the matcher to put their ticket back in the queue.
// The seat the first open held for the refused party's other member stays
// until the matcher, the ticket back in the queue, releases it
// (ReleaseMatchSeats: reservation_expired), not left to lapse: taken, it
// would put him in the match his ticket left, and then in another (a
// reviewer's find); released by the refusal itself, a stale completion's
// refusal took the seat of a user another completion had told. The owner
// too is refused once banned (by the server): their seat is not held
// again, and the error names them.
func TestMatchRoomRetryAfterABan(t *testing.T) {
	dave := rooms.User{ID: "u-dave", Name: "dave"}
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		m, id := partyMatchRoom(t, s, "m-ban-retry", dave)
		if err := s.Ban(ctx, alice, id, mustJoin(t, s, bob, id).PlayerID); err != nil {
			t.Fatal(err)
		}
		before := len(events(t, s, id))
		again, err := s.OpenMatchRoom(ctx, m, 4, time.Hour)
		var refused *matchmaking.SeatsRefusedError
		if again != id || !errors.As(err, &refused) || !slices.Equal(refused.Users, []string{bob.ID}) {
			t.Fatalf("retry: %q %v, want %s and %s refused", again, err, id, bob.ID)
		}
		r, _, err := s.Get(ctx, id, false)
		if err != nil || r.ReservedSeats != 2 || r.PlayerCount != 1 {
			t.Fatalf("room after the retry: %d players, %d held (%v), want alice, and carol's and dave's holds", r.PlayerCount, r.ReservedSeats, err)
		}
		if evs := events(t, s, id); len(evs) != before+1 || evs[before].Type != rooms.EventSeatsReserved {
			t.Fatalf("events of the retry: %+v, want carol's seat held again alone", evs[before:])
		}
		// the retry held carol's seat again (an hour); the matcher releases
		// dave's, whose party went back to the queue
		if err := s.ReleaseMatchSeats(ctx, id, []string{bob.ID, dave.ID}); err != nil {
			t.Fatal(err)
		}
		reserved := s.RoomKeys(id)[9]
		if until, err := s.Client().HGet(ctx, reserved, carol.ID).Int64(); err != nil || !time.UnixMilli(until).After(time.Now().Add(30*time.Minute)) {
			t.Fatalf("carol's seat held until %v (%v), want the retry's hour", time.UnixMilli(until), err)
		}
		if held, err := s.Client().HExists(ctx, reserved, dave.ID).Result(); err != nil || held {
			t.Fatalf("dave, of the refused party, holds a seat: %v %v", held, err)
		}
		var expired []rooms.ReservationExpiredEvent
		for _, e := range events(t, s, id)[before:] {
			if e.Type == rooms.EventReservationExpired {
				var ev rooms.ReservationExpiredEvent
				if err := json.Unmarshal(e.Raw, &ev); err != nil {
					t.Fatal(err)
				}
				expired = append(expired, ev)
			}
		}
		if len(expired) != 1 || expired[0].Seats != 1 || expired[0].ReservedSeats != 1 {
			t.Fatalf("reservation_expired after the retry: %+v, want dave's seat released, carol's left", expired)
		}
		_, err = s.Join(ctx, dave, id) // a private room, his seat released: not found
		wantErr(t, err, rooms.ErrRoomNotFound)
		mustJoin(t, s, carol, id)
		_, err = s.Join(ctx, bob, id) // a private room, no seat held for him: not found
		wantErr(t, err, rooms.ErrRoomNotFound)
		// the server bans the owner (carol owns the room after): the owner's
		// seat is refused too
		if err := s.Ban(ctx, server, id, 1); err != nil {
			t.Fatal(err)
		}
		again, err = s.OpenMatchRoom(ctx, m, 4, time.Hour)
		if again != id || !errors.As(err, &refused) || !slices.Equal(refused.Users, []string{alice.ID, bob.ID}) {
			t.Fatalf("retry after the owner's ban: %q %v, want %s and %s, %s refused", again, err, id, alice.ID, bob.ID)
		}
		if held, err := s.Client().HExists(ctx, reserved, alice.ID).Result(); err != nil || held {
			t.Fatalf("the banned owner holds a seat: %v %v", held, err)
		}
	})
}

// partyMatchRoom opens the room of match id: alice's ticket, bob's party
// with member, and carol's, the seats held a minute.
func partyMatchRoom(t *testing.T, s *store.Store, id string, member rooms.User) (matchmaking.Match, string) {
	t.Helper()
	m := matchmaking.Match{ID: id, Mode: "duel", Region: "eu", Tickets: []matchmaking.MatchedTicket{
		{Users: []string{alice.ID}}, {Users: []string{bob.ID, member.ID}}, {Users: []string{carol.ID}}}}
	room, err := s.OpenMatchRoom(context.Background(), m, 4, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return m, room
}

// A match room's retry (a completion that died) treats a user the room
// kicked since as one it banned: their ticket is refused whole, and the
// seats of its other users are not held again; a kicked user who came back
// by the invite code is a member, and their ticket keeps the match.
func TestMatchRoomRetryAfterAKick(t *testing.T) {
	dave := rooms.User{ID: "u-dave", Name: "dave"}
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		m, id := partyMatchRoom(t, s, "m-kick-retry", dave)
		if err := s.Kick(ctx, alice, id, mustJoin(t, s, bob, id).PlayerID); err != nil {
			t.Fatal(err)
		}
		again, err := s.OpenMatchRoom(ctx, m, 4, time.Hour)
		var refused *matchmaking.SeatsRefusedError
		if again != id || !errors.As(err, &refused) || !slices.Equal(refused.Users, []string{bob.ID}) {
			t.Fatalf("retry: %q %v, want %s and %s refused", again, err, id, bob.ID)
		}
		r, _, err := s.Get(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.JoinByCode(ctx, bob, r.InviteCode); err != nil {
			t.Fatal(err)
		}
		if again, err := s.OpenMatchRoom(ctx, m, 4, time.Hour); again != id || err != nil {
			t.Fatalf("retry with bob back: %q %v, want %s kept", again, err, id)
		}
	})
}

// A match room's retry keeps the match of a ticket one of whose users is
// in the room, whatever ban it made of another since: its banned user gets
// no seat (they cannot join), its other users are held theirs, and nothing
// is refused. Sent back to the queue, the party would be matched again
// while its member plays here: one user in two matches (a reviewer's find).
func TestMatchRoomRetryKeepsATicketWithAUserInTheRoom(t *testing.T) {
	dave, erin := rooms.User{ID: "u-dave", Name: "dave"}, rooms.User{ID: "u-erin", Name: "erin"}
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		m := matchmaking.Match{ID: "m-ban-member-in", Mode: "duel", Region: "eu", Tickets: []matchmaking.MatchedTicket{
			{Users: []string{alice.ID}}, {Users: []string{bob.ID, dave.ID, erin.ID}}, {Users: []string{carol.ID}}}}
		id, err := s.OpenMatchRoom(ctx, m, 5, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		mustJoin(t, s, dave, id)
		if err := s.Ban(ctx, alice, id, mustJoin(t, s, bob, id).PlayerID); err != nil {
			t.Fatal(err)
		}
		if again, err := s.OpenMatchRoom(ctx, m, 5, time.Hour); again != id || err != nil {
			t.Fatalf("retry: %q %v, want %s, nothing refused", again, err, id)
		}
		r, _, err := s.Get(ctx, id, false)
		if err != nil || r.ReservedSeats != 2 || r.PlayerCount != 2 {
			t.Fatalf("room after the retry: %d players, %d held (%v), want alice and dave, and erin's and carol's holds", r.PlayerCount, r.ReservedSeats, err)
		}
		reserved := s.RoomKeys(id)[9]
		for _, u := range []rooms.User{erin, carol} { // held again, for the retry's hour
			until, err := s.Client().HGet(ctx, reserved, u.ID).Int64()
			if err != nil || !time.UnixMilli(until).After(time.Now().Add(30*time.Minute)) {
				t.Fatalf("%s's seat held until %v (%v), want the retry's hour", u.ID, time.UnixMilli(until), err)
			}
		}
		if held, err := s.Client().HExists(ctx, reserved, bob.ID).Result(); err != nil || held {
			t.Fatalf("banned %s holds a seat: %v %v", bob.ID, held, err)
		}
		mustJoin(t, s, erin, id)
		_, err = s.Join(ctx, bob, id)
		wantErr(t, err, rooms.ErrRoomNotFound) // a private room, no seat held for him
	})
}

// A match room that started after banning a user of the match refuses
// that user's ticket on the retry as a waiting one does (the bans are
// checked before the status): the retry answered ROOM_NOT_JOINABLE first,
// taken for success, and the banned user was told match_found and their
// ticket ended matched (a reviewer's find). The refused party's seats are
// released (ReleaseMatchSeats, the room started or not); a ticket with a
// user in the room keeps the match there too.
func TestMatchRoomRetryOfAStartedRoomAfterABan(t *testing.T) {
	dave, erin := rooms.User{ID: "u-dave", Name: "dave"}, rooms.User{ID: "u-erin", Name: "erin"}
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		m := matchmaking.Match{ID: "m-ban-started", Mode: "duel", Region: "eu", Tickets: []matchmaking.MatchedTicket{
			{Users: []string{alice.ID}}, {Users: []string{bob.ID, erin.ID}}, {Users: []string{carol.ID, dave.ID}}}}
		id, err := s.OpenMatchRoom(ctx, m, 5, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		mustJoin(t, s, carol, id)
		for _, u := range []rooms.User{bob, dave} {
			if err := s.Ban(ctx, alice, id, mustJoin(t, s, u, id).PlayerID); err != nil {
				t.Fatal(err)
			}
		}
		update(t, s, alice, id, rooms.UpdateParams{Status: ptr(rooms.Playing)})
		again, err := s.OpenMatchRoom(ctx, m, 5, time.Hour)
		var refused *matchmaking.SeatsRefusedError
		if again != id || !errors.As(err, &refused) || !slices.Equal(refused.Users, []string{bob.ID}) {
			t.Fatalf("retry of the started room: %q %v, want %s and %s refused", again, err, id, bob.ID)
		}
		r, _, err := s.Get(ctx, id, false)
		if err != nil || r.ReservedSeats != 1 || r.Status != rooms.Playing {
			t.Fatalf("room after the retry: %s, %d seats held (%v), want playing, erin's seat held", r.Status, r.ReservedSeats, err)
		}
		if err := s.ReleaseMatchSeats(ctx, id, []string{bob.ID, erin.ID}); err != nil {
			t.Fatal(err)
		}
		r, _, err = s.Get(ctx, id, false)
		if err != nil || r.ReservedSeats != 0 || r.Status != rooms.Playing {
			t.Fatalf("room after the release: %s, %d seats held (%v), want playing, erin's seat released", r.Status, r.ReservedSeats, err)
		}
	})
}

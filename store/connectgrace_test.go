package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/invariants"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// presence lists room id's presence entries (leases and deadlines).
func presence(tb testing.TB, s *store.Store, id string) []string {
	tb.Helper()
	got, err := s.Client().ZRange(context.Background(), s.RoomKey(id)+":presence", 0, -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

// playerNames reads room id and its players' names, in playerId order.
func playerNames(tb testing.TB, s *store.Store, id string) (rooms.Room, []string) {
	tb.Helper()
	r, _, err := s.Get(context.Background(), id, false)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, p := range r.Players {
		names = append(names, p.Name)
	}
	return r, names
}

// With a connect grace, a player who joins (create, join, invite code,
// quick-join) and opens no stream of the room within it is removed by the
// janitor: player_left, reason disconnected, counted as
// presence_unconnected; a player whose stream opened in time stays, and
// one whose stream then closed waits out the disconnect grace as before.
// Without one (the default) nobody is removed for never connecting.
func TestConnectGraceRemovesPlayersWhoNeverConnect(t *testing.T) {
	const connect = 300 * time.Millisecond
	dave := rooms.User{ID: "u-dave", Name: "dave"}
	erin := rooms.User{ID: "u-erin", Name: "erin"}
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s := openStoreWith(t, b, func(c *store.Config) {
			c.ConnectGrace = connect
			c.DisconnectGrace = time.Hour // apart from the connect grace
			c.PresenceTTL = time.Minute
		})
		began := time.Now()
		j := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.MaxPlayers = 4 }))
		id := j.Room.ID
		mustJoin(t, s, bob, id)
		mustJoin(t, s, carol, id) // never connects
		priv := mustCreate(t, s, dave, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private; r.Mode = "code" }))
		if _, err := s.JoinByCode(ctx, carol, priv.Room.InviteCode); err != nil {
			t.Fatal(err)
		}
		qj, err := s.QuickJoin(ctx, erin, "quick", []string{"eu"}, nil, ptr(newRoom(func(r *rooms.NewRoom) { r.Mode = "quick"; r.Region = "eu" })))
		if err != nil || !qj.Created {
			t.Fatalf("quick-join: %+v, %v, want a room created", qj, err)
		}
		for _, who := range []struct {
			u    rooms.User
			room string
		}{{alice, id}, {bob, id}, {dave, priv.Room.ID}} {
			open(t, s, lease(who.room, who.u, "web"), sse.Cursor{})
		}
		if err := s.CloseStream(ctx, sse.Lease{Room: id, UserID: bob.ID, PlayerID: 2, Stream: "web"}); err != nil {
			t.Fatal(err)
		}
		// the deadlines of carol (twice) and erin are there, no one else's
		if got := presence(t, s, id); !slices.Contains(got, "c:3") || slices.Contains(got, "c:1") || slices.Contains(got, "c:2") {
			t.Errorf("room's presence %v, want carol's connect deadline c:3 alone of the c: entries", got)
		}
		if got := presence(t, s, qj.Room.ID); !slices.Equal(got, []string{"c:1"}) {
			t.Errorf("quick-joined room's presence %v, want [c:1]", got)
		}

		total := store.Report{}
		sweepUntil(t, s, total, func() bool {
			return total["presence_unconnected"] >= 3
		})
		if waited := time.Since(began); waited < connect {
			t.Errorf("removed after %v, within the connect grace %v", waited, connect)
		}
		if total["presence_unconnected"] != 3 || total["presence_removal"] != 0 {
			t.Errorf("janitor report %v, want presence_unconnected 3 (carol twice, erin), presence_removal 0", total)
		}
		if _, names := playerNames(t, s, id); !slices.Equal(names, []string{"alice", "bob"}) {
			t.Errorf("players %v, want alice and bob (carol removed)", names)
		}
		evs := events(t, s, id)
		if last := evs[len(evs)-1]; last.Type != "player_left" || last.PlayerID != 3 || last.Reason != "disconnected" {
			t.Errorf("room's last event %s, want carol's player_left, reason disconnected", last.Raw)
		}
		if p, _, err := s.Get(ctx, priv.Room.ID, true); err != nil || p.PlayerCount != 1 {
			t.Errorf("the private room: %+v, %v, want dave alone", p, err)
		}
		closedWith(t, s, qj.Room.ID, "empty") // erin was its only player
		for _, room := range []string{id, priv.Room.ID} {
			for _, m := range presence(t, s, room) {
				if strings.HasPrefix(m, "c:") {
					t.Errorf("room %s keeps connect deadline %s", room, m)
				}
			}
		}
		// rooms' own leases are the only schedule left: every shard's
		// due set names only rooms that still have presence entries
		checkInvariants(t, s)
	})
}

// The default (no connect grace) removes no one for never connecting,
// and writes no deadline.
func TestNoConnectGraceKeepsPlayersWhoNeverConnect(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openStoreWith(t, b, func(c *store.Config) { c.DisconnectGrace = 100 * time.Millisecond })
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		mustJoin(t, s, bob, id)
		if got := presence(t, s, id); len(got) != 0 {
			t.Errorf("presence %v, want none", got)
		}
		time.Sleep(200 * time.Millisecond)
		total := store.Report{}
		sweepAll(t, s, total)
		if r, _, err := s.Get(context.Background(), id, false); err != nil || r.PlayerCount != 2 {
			t.Errorf("room %+v, %v, want both players", r, err)
		}
		if len(total) != 0 {
			t.Errorf("janitor report %v, want nothing done", total)
		}
	})
}

// connectDeadlines lists room id's connect deadlines ("c:<playerId>").
func connectDeadlines(tb testing.TB, s *store.Store, id string) []string {
	tb.Helper()
	var out []string
	for _, m := range presence(tb, s, id) {
		if strings.HasPrefix(m, "c:") {
			out = append(out, m)
		}
	}
	return out
}

// Every path that removes a player drops their connect deadline, and one
// who joins again (a new playerId) gets a deadline of their own: a leave
// and a join again, a kick, a ban, a stream opened; a match room's leader,
// put in it by the matcher, holds one from the match, as a user who takes
// a reserved seat does from the join.
func TestConnectGraceDeadlinesFollowPlayers(t *testing.T) {
	dave := rooms.User{ID: "u-dave", Name: "dave"}
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s := openStoreWith(t, b, func(c *store.Config) {
			c.ConnectGrace = time.Hour
			c.PresenceTTL = time.Minute
		})
		id := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.MaxPlayers = 6 })).Room.ID
		mustJoin(t, s, bob, id) // 2
		if err := s.Leave(ctx, bob, id); err != nil {
			t.Fatal(err)
		}
		mustJoin(t, s, bob, id)   // 3
		mustJoin(t, s, carol, id) // 4
		mustJoin(t, s, dave, id)  // 5
		if err := s.Kick(ctx, alice, id, 4); err != nil {
			t.Fatal(err)
		}
		if err := s.Ban(ctx, alice, id, 5); err != nil {
			t.Fatal(err)
		}
		open(t, s, lease(id, alice, "web"), sse.Cursor{})
		if got := connectDeadlines(t, s, id); !slices.Equal(got, []string{"c:3"}) {
			t.Errorf("deadlines %v, want bob's second player's alone, [c:3]", got)
		}
		m := matchmaking.Match{ID: "m-connect-grace", Mode: "duel", Region: "eu", Tickets: []matchmaking.MatchedTicket{
			{Users: []string{alice.ID}}, {Users: []string{bob.ID}}}}
		mid, err := s.OpenMatchRoom(ctx, m, 2, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		mustJoin(t, s, bob, mid)
		if got := connectDeadlines(t, s, mid); !slices.Equal(got, []string{"c:1", "c:2"}) {
			t.Errorf("match room's deadlines %v, want the leader's and bob's, [c:1 c:2]", got)
		}
		checkInvariants(t, s)
	})
}

// The connect grace removes with the disconnect grace off too; the
// deadline is a minimum: a stream opened past it but before the janitor's
// visit keeps the seat; an owner who never connects hands the room on; a
// stream opened after the removal is refused as any non-member's (403
// NOT_A_MEMBER, a private room's 404 ROOM_NOT_FOUND); a player whose
// stream opened and closed within the debounce waits out the disconnect
// grace, counted as a debounced disconnect, never as unconnected; a
// match room's leader is removed from the match, and a room they leave
// empty (the others hold seats only) closes (docs: README, "Matchmaking
// tickets").
func TestConnectGraceRemovalsAndRefusals(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s := openStoreWith(t, b, func(c *store.Config) {
			c.ConnectGrace = 200 * time.Millisecond
			c.DisconnectGrace = 0 // never: the connect grace alone removes
			c.PresenceDebounce = 50 * time.Millisecond
			c.PresenceTTL = time.Minute
		})
		id := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.MaxPlayers = 4 })).Room.ID // never connects
		mustJoin(t, s, bob, id)
		mustJoin(t, s, carol, id)
		dave := rooms.User{ID: "u-dave", Name: "dave"}
		dj := mustJoin(t, s, dave, id)
		open(t, s, lease(id, bob, "web"), sse.Cursor{})
		open(t, s, lease(id, dave, "web"), sse.Cursor{})
		if err := s.CloseStream(ctx, sse.Lease{Room: id, UserID: dave.ID, PlayerID: dj.PlayerID, Stream: "web"}); err != nil {
			t.Fatal(err)
		}
		priv := mustCreate(t, s, carol, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private; r.Mode = "code" }))
		if _, err := s.JoinByCode(ctx, bob, priv.Room.InviteCode); err != nil { // never connects
			t.Fatal(err)
		}
		open(t, s, lease(priv.Room.ID, carol, "web"), sse.Cursor{})
		m := matchmaking.Match{ID: "m-leader-away", Mode: "duel", Region: "eu", Tickets: []matchmaking.MatchedTicket{
			{Users: []string{alice.ID}}, {Users: []string{bob.ID}}}}
		mid, err := s.OpenMatchRoom(ctx, m, 2, time.Hour) // its leader alice never connects, bob holds a seat
		if err != nil {
			t.Fatal(err)
		}
		// past every connect deadline (the janitor runs only in sweepUntil),
		// carol's stream opens before any visit
		time.Sleep(300 * time.Millisecond)
		open(t, s, lease(id, carol, "late"), sse.Cursor{})
		total := store.Report{}
		sweepUntil(t, s, total, func() bool { return total["presence_unconnected"] >= 3 && total["presence_debounced"] >= 1 })
		if r, names := playerNames(t, s, id); !slices.Equal(names, []string{"bob", "carol", "dave"}) || r.OwnerPlayerID != 2 {
			t.Errorf("players %v, owner %d, want bob, carol and dave, bob the owner", names, r.OwnerPlayerID)
		}
		if total["presence_unconnected"] != 3 || total["presence_removal"] != 0 || total["presence_debounced"] != 1 {
			t.Errorf("janitor report %v, want presence_unconnected 3 (alice twice, bob in the private room), presence_debounced 1 (dave), no presence_removal", total)
		}
		// the match room its leader left empty closed, bob's seat with it
		closedWith(t, s, mid, "empty")
		if _, err := s.Join(ctx, bob, mid); !errors.Is(err, rooms.ErrRoomNotFound) {
			t.Errorf("bob's join of the closed match room: %v, want ErrRoomNotFound", err)
		}
		if _, err := s.OpenStream(ctx, lease(id, alice, "web"), sse.ReadFrom, sse.Cursor{}, 100); !errors.Is(err, rooms.ErrNotMember) {
			t.Errorf("alice's stream after her removal: %v, want ErrNotMember", err)
		}
		if _, err := s.OpenStream(ctx, lease(priv.Room.ID, bob, "web"), sse.ReadFrom, sse.Cursor{}, 100); !errors.Is(err, rooms.ErrRoomNotFound) {
			t.Errorf("bob's stream of the private room after his removal: %v, want ErrRoomNotFound", err)
		}
		checkInvariants(t, s)
	})
}

// The repair walk restores a room's presence schedule from a connect
// deadline, its only presence entry, as from any other: a room dropped
// from the shard's due set is due again at its deadline.
func TestConnectGraceDeadlineRepaired(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s := openStoreWith(t, b, func(c *store.Config) { c.ConnectGrace = time.Hour })
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		key := s.RoomKey(id)
		due := key[:strings.IndexByte(key, '}')+1] + ":presence:due"
		want := s.Client().ZScore(ctx, key+":presence", "c:1").Val()
		if got := s.Client().ZScore(ctx, due, id).Val(); got != want || want == 0 {
			t.Fatalf("due at %v, want the deadline %v", got, want)
		}
		// a due time past the room's earliest deadline is drift the
		// invariants report (read in one transaction with the entries)
		s.Client().ZAdd(ctx, due, redis.Z{Score: want + 60_000, Member: id})
		if bad, err := invariants.Check(ctx, s.Client(), s.Prefix()); err != nil ||
			!slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, "due at") }) {
			t.Errorf("invariants with the room due a minute late: %v %v", bad, err)
		}
		s.Client().ZRem(ctx, due, id)
		rep := store.Report{}
		sweepUntil(t, s, rep, func() bool { return s.Client().ZScore(ctx, due, id).Val() == want })
		if rep["repair_schedule"] != 1 {
			t.Errorf("report %v, want repair_schedule 1", rep)
		}
		checkInvariants(t, s)
	})
}

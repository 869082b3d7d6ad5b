package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
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
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
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
			r, _, err := s.Get(ctx, id, false)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range r.Players {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, []string{"alice", "bob"}) {
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
}

// The default (no connect grace) removes no one for never connecting,
// and writes no deadline.
func TestNoConnectGraceKeepsPlayersWhoNeverConnect(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
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
}

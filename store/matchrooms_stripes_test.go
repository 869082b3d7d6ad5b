package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// A match room's repair (OpenMatchRoom again for the same match) on an
// instance whose stripe count for the mode differs from the first open's
// (REALSYNC_MODE_STRIPES changed between them, both configurations
// recorded) finds the room the first open made, on the first one's
// stripe, and holds the seats there: no second room, committed (m.Told)
// or not, K 1 → 3 and 3 → 1. Once that room is closed, a repair is
// rooms.ErrRoomNotFound and makes none. Standalone and Cluster: the two
// instances share the data (an embedded store is one instance's alone,
// one configuration).
func TestMatchRoomRepairAcrossStripeCounts(t *testing.T) {
	tests := []struct {
		name          string
		first, repair int  // the mode's stripe count on the first open's instance, and the repair's
		told          bool // a committed match
	}{
		{name: "K1RoomFoundByK3", first: 1, repair: 3},
		{name: "K1CommittedRoomFoundByK3", first: 1, repair: 3, told: true},
		{name: "K3RoomFoundByK1", first: 3, repair: 1},
	}
	for _, b := range redistest.Backends(t)[:2] {
		for _, tc := range tests {
			t.Run(b.Name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				prefix := redistest.Prefix(t)
				open := func(k int) *store.Store {
					return openStoreWith(t, b, func(c *store.Config) {
						c.Prefix, c.Stripes = prefix, store.Stripes{Default: 1, Modes: map[string]int{"duel": k}}
					})
				}
				first, repair := open(tc.first), open(tc.repair)
				for _, s := range []*store.Store{first, repair} { // both read both records
					if err := s.RefreshStripes(ctx); err != nil {
						t.Fatal(err)
					}
				}
				m := stripedMatch(t, repair)
				id, err := first.OpenMatchRoom(ctx, m, 4, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if ids := repair.MatchRoomIDs(m); ids[0] == id || ids[1] != id {
					t.Fatalf("the repair's ids %v: want the first open's %s second, after its own", ids, id)
				}
				if tc.told {
					m.Told = id
				}
				again, err := repair.OpenMatchRoom(ctx, m, 4, time.Hour)
				if again != id || err != nil {
					t.Fatalf("repair: %q %v, want the first open's room %s", again, err, id)
				}
				r, _, err := repair.Get(ctx, id, false)
				if err != nil || r.PlayerCount != 1 || r.ReservedSeats != 2 {
					t.Fatalf("room after the repair: %d players, %d held (%v), want alice, and bob's and carol's holds", r.PlayerCount, r.ReservedSeats, err)
				}
				reserved := repair.RoomKeys(id)[9]
				if until, err := repair.Client().HGet(ctx, reserved, carol.ID).Int64(); err != nil || !time.UnixMilli(until).After(time.Now().Add(30*time.Minute)) {
					t.Fatalf("carol's seat held until %v (%v), want the repair's hour", time.UnixMilli(until), err)
				}
				if got := roomIDs(t, repair); len(got) != 1 || got[0] != id {
					t.Fatalf("rooms %v, want the match's one, %s", got, id)
				}
				// closed: the repair finds it made and gone, and makes none
				if _, err := first.Delete(ctx, alice, id); err != nil {
					t.Fatal(err)
				}
				_, err = repair.OpenMatchRoom(ctx, m, 4, time.Hour)
				wantErr(t, err, rooms.ErrRoomNotFound)
				if got := roomIDs(t, repair); len(got) != 0 {
					t.Fatalf("rooms %v after the repair of a closed match room, want none", got)
				}
			})
		}
	}
}

// stripedMatch is a match of alice, bob and carol in duel/eu whose room
// ids under s's two recorded stripe configurations differ (a third of
// match ids give both the same stripe: the home shard).
func stripedMatch(t *testing.T, s *store.Store) matchmaking.Match {
	t.Helper()
	m := matchmaking.Match{Mode: "duel", Region: "eu", Tickets: []matchmaking.MatchedTicket{
		{Users: []string{alice.ID}}, {Users: []string{bob.ID}}, {Users: []string{carol.ID}}}}
	for i := range 64 {
		m.ID = fmt.Sprintf("m-stripes-%d", i)
		if len(s.MatchRoomIDs(m)) == 2 {
			return m
		}
	}
	t.Fatalf("no match of 64 has two room ids: %v", s.StripeConfigs())
	return m
}

// roomIDs are the ids of the room hashes under s's prefix.
func roomIDs(t *testing.T, s *store.Store) []string {
	t.Helper()
	var out []string
	for _, k := range countKeys(t, s) {
		if _, id, ok := strings.Cut(k, ":room:"); ok && !strings.Contains(id, ":") {
			out = append(out, id)
		}
	}
	return out
}

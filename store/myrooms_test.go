package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// A user's rooms come in pages of at most limit, newest first, each room
// exactly once across the pages, the last page without a next position;
// only the page's rooms are returned whole.
func TestMyRoomsPages(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var want []string // newest first
		for range 7 {
			j, err := s.Create(ctx, alice, newRoom(func(r *rooms.NewRoom) { r.Region = "eu" }))
			if err != nil {
				t.Fatal(err)
			}
			want = append([]string{j.Room.ID}, want...)
		}
		if _, err := s.Create(ctx, bob, newRoom()); err != nil { // not alice's
			t.Fatal(err)
		}
		for _, limit := range []int{1, 3, 7, 100} {
			var got []string
			var after *rooms.RoomPosition
			for pages := 0; ; pages++ {
				page, next, err := s.MyRooms(ctx, alice, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > limit || pages > len(want) {
					t.Fatalf("limit %d: page of %d, page %d", limit, len(page), pages)
				}
				for _, j := range page {
					if j.PlayerID != 1 || len(j.Room.Players) != 0 {
						t.Fatalf("room %s: playerId %d, players %v", j.Room.ID, j.PlayerID, j.Room.Players)
					}
					got = append(got, j.Room.ID)
				}
				if next == nil {
					break
				}
				after = next
			}
			if !slices.Equal(got, want) {
				t.Fatalf("limit %d: pages gave %v, want %v", limit, got, want)
			}
		}
	})
}

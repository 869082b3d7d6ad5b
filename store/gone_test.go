package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// loseRoom deletes room id's keys as a fault (or a bug of an old release)
// would, leaving its index entries behind, and returns the joinable and
// fill index keys that still name it.
func loseRoom(t *testing.T, s *store.Store, id, mode, region string) []string {
	t.Helper()
	ctx := context.Background()
	keys, err := rediskeys.Scan(ctx, s.Client(), s.RoomKey(id)+"*")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := s.Client().Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	left := naming(t, s, id, mode, region)
	if len(left) != 8 {
		t.Fatalf("the lost room is in %d joinable and fill indexes, want 8: %v", len(left), left)
	}
	return left
}

// naming lists the joinable and fill index keys of (mode, region) that
// hold an entry of room id.
func naming(t *testing.T, s *store.Store, id, mode, region string) []string {
	t.Helper()
	var out []string
	for _, k := range s.PickIndexKeys(id, mode, region) {
		ms, err := s.Client().ZRange(context.Background(), k, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m == id || strings.HasSuffix(m, "|"+id) {
				out = append(out, k)
			}
		}
	}
	return out
}

// A joinable room whose keys are gone but whose index entries were left
// (a fault, or a bug of an old release: the held-seat fill member) is
// passed over by every kind of quick-join, which drops the entries it
// walks into, instead of answering 404 or, retrying the same pick, 503;
// a quick-join that may create is not held back by such an entry.
func TestQuickJoinPassesOverGoneRooms(t *testing.T) {
	cases := []struct {
		name    string
		regions []string
		create  bool
		dropped int // joinable and fill entries the quick-join removes
	}{
		{"one region, may create", []string{"eu"}, true, 8},
		{"one region, join only", []string{"eu"}, false, 8},
		{"several regions, may create", []string{"us", "eu"}, true, 1},
		{"several regions, join only", []string{"us", "eu"}, false, 1},
		{"any region, join only", nil, false, 1},
		{"any region, may create", nil, true, 8},
	}
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				mode := "lost" + string(rune('a'+i))
				id := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region, r.MaxPlayers = mode, "eu", 4 })).Room.ID
				before := loseRoom(t, s, id, mode, "eu")
				var create *rooms.NewRoom
				if c.create {
					create = quickRoom(mode, "eu", 4)
				}
				q, err := s.QuickJoin(ctx, bob, mode, c.regions, nil, create)
				switch {
				case c.create && (err != nil || !q.Created || q.Room.ID == id):
					t.Fatalf("quick-join: %+v %v, want a new room", q, err)
				case !c.create && !errors.Is(err, rooms.ErrNoMatch):
					t.Fatalf("quick-join: %+v %v, want ErrNoMatch", q, err)
				}
				after := naming(t, s, id, mode, "eu")
				if len(before)-len(after) < c.dropped {
					t.Fatalf("the gone room is still in %v, want at most %d of them", after, len(before)-c.dropped)
				}
			})
		}
	})
}

package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

func quickRoom(mode, region string, max int) *rooms.NewRoom {
	r := newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region, r.MaxPlayers, r.Name = mode, region, max, "quick" })
	return &r
}

// N concurrent quick-joins through two instances, rooms of M seats: exactly
// ceil(N/M) rooms, all full but the last, every caller in one of them.
func TestQuickJoinPacksConcurrentCallers(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			s1, s2 := twoInstances(t, b)
			ctx := context.Background()
			const n, m = 30, 4
			var wg sync.WaitGroup
			var mu sync.Mutex
			created := 0
			inRoom := map[string]int{}
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := []*store.Store{s1, s2}[i%2]
					q, err := s.QuickJoin(ctx, user(i), "duel", []string{"eu"}, nil, quickRoom("duel", "eu", m))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					inRoom[q.Room.ID]++
					if q.Created {
						created++
					}
				}()
			}
			wg.Wait()
			wantRooms := (n + m - 1) / m
			if len(inRoom) != wantRooms || created != wantRooms {
				t.Fatalf("%d rooms (%d created) for %d callers of %d seats, want %d", len(inRoom), created, n, m, wantRooms)
			}
			page, err := lobby.NewService(s1).List(ctx, lobby.ListParams{Mode: "duel", Region: "eu", Limit: ptr(100)})
			if err != nil {
				t.Fatal(err)
			}
			partial := 0
			total := 0
			for _, r := range page.Rooms {
				total += r.PlayerCount
				if r.PlayerCount < m {
					partial++
				}
			}
			if len(page.Rooms) != wantRooms || total != n || partial != 1 {
				t.Fatalf("rooms %d, players %d, not full %d; want %d, %d, 1", len(page.Rooms), total, partial, wantRooms, n)
			}
			checkInvariants(t, s1)
		})
	}
}

func TestQuickJoinChoices(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		// eu: a 1/4 room (older) and a 2/4 room; us: a 3/4 room.
		older := mustCreate(t, s, user(1), *quickRoom("ctf", "eu", 4)).Room.ID
		fuller := mustCreate(t, s, user(2), *quickRoom("ctf", "eu", 4)).Room.ID
		s.Join(ctx, user(3), fuller)
		us := mustCreate(t, s, user(4), *quickRoom("ctf", "us", 4)).Room.ID
		s.Join(ctx, user(5), us)
		s.Join(ctx, user(6), us)
		private := mustCreate(t, s, user(7), *quickRoom("ctf", "ap", 4))
		update(t, s, user(7), private.Room.ID, rooms.UpdateParams{Visibility: ptr(rooms.Private)})

		cases := []struct {
			name    string
			u       rooms.User
			regions []string
			create  *rooms.NewRoom
			want    string // room id, "new" for a created room
			err     error
		}{
			{"fullest of the first region", user(10), []string{"eu", "us"}, nil, fuller, nil},
			{"region order beats fullness", user(11), []string{"eu", "us"}, nil, fuller, nil}, // fuller is 3/4 now
			{"a member gets its room back", user(2), []string{"us", "eu"}, nil, fuller, nil},
			{"next region when one has nothing", user(12), []string{"ap", "us"}, nil, us, nil},
			{"fullest anywhere without regions", user(13), nil, nil, older, nil}, // us full, fuller full
			{"private rooms are never picked", user(14), []string{"ap"}, nil, "", rooms.ErrNoMatch},
			{"create when nothing fits", user(15), []string{"ap"}, quickRoom("ctf", "ap", 2), "new", nil},
		}
		for _, c := range cases {
			q, err := s.QuickJoin(ctx, c.u, "ctf", c.regions, nil, c.create)
			switch {
			case !errors.Is(err, c.err):
				t.Errorf("%s: error %v, want %v", c.name, err, c.err)
			case c.err != nil:
			case c.want == "new" && (!q.Created || q.Room.Region != "ap" || q.Room.OwnerPlayerID != q.PlayerID):
				t.Errorf("%s: %+v", c.name, q)
			case c.want != "new" && (q.Created || q.Room.ID != c.want):
				t.Errorf("%s: room %s (created %v), want %s", c.name, q.Room.ID, q.Created, c.want)
			}
		}
		checkInvariants(t, s)
	})
}

func TestQuickJoinWithAttributeFilters(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		mk := func(u rooms.User, m string, rank int, players int) string {
			r := quickRoom("br", "eu", 8)
			r.Attributes = map[string]any{"map": m, "rank": rank}
			id := mustCreate(t, s, u, *r).Room.ID
			for i := 1; i < players; i++ {
				if _, err := s.Join(ctx, rooms.User{ID: fmt.Sprintf("%s-%d", u.ID, i)}, id); err != nil {
					t.Fatal(err)
				}
			}
			return id
		}
		fullest := mk(user(1), "dust2", 2000, 5) // fullest, but out of range
		want := mk(user(2), "dust2", 1500, 3)
		mk(user(3), "inferno", 1500, 4)
		filters, err := rooms.ParseAttrQuery(map[string][]string{"attr.map": {"dust2"}, "attr.rank.lte": {"1600"}})
		if err != nil {
			t.Fatal(err)
		}
		q, err := s.QuickJoin(ctx, user(9), "br", []string{"eu"}, filters, nil)
		if err != nil || q.Room.ID != want {
			t.Fatalf("joined %s (%v), want %s (not %s)", q.Room.ID, err, want, fullest)
		}
		none, _ := rooms.ParseAttrQuery(map[string][]string{"attr.map": {"nuke"}})
		if _, err := s.QuickJoin(ctx, user(10), "br", []string{"eu"}, none, nil); !errors.Is(err, rooms.ErrNoMatch) {
			t.Errorf("no room on nuke: %v", err)
		}
		q, err = s.QuickJoin(ctx, user(11), "br", []string{"eu"}, none, quickRoom("br", "eu", 8))
		if err != nil || !q.Created {
			t.Errorf("create despite other joinable rooms: %+v %v", q, err)
		}
		checkInvariants(t, s)
	})
}

package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// walk pages through a listing and returns the ids in order.
func walk(tb testing.TB, svc *lobby.Service, p lobby.ListParams) []string {
	tb.Helper()
	return walkRooms(tb, svc, p, func(rooms.Room) bool { return true })
}

// walkCase is a listing and the rooms it must return: indexes into the
// test's ids, in order.
type walkCase struct {
	name string
	p    lobby.ListParams
	want []int
}

// checkWalks walks each case's listing to its end as a subtest.
func checkWalks(t *testing.T, svc *lobby.Service, ids []string, cases []walkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := walk(t, svc, tc.p)
			var want []string
			for _, i := range tc.want {
				want = append(want, ids[i])
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("got %v\nwant %v", got, want)
			}
		})
	}
}

func TestListFiltersAndSorts(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc := lobby.NewService(s.Listing())
		// created in this order: ids[0] oldest
		specs := []struct {
			mode, region string
			vis          rooms.Visibility
			status       rooms.Status
		}{
			{"battle", "eu", rooms.Public, rooms.Waiting},
			{"battle", "us", rooms.Public, rooms.Playing},
			{"race", "eu", rooms.Public, rooms.Waiting},
			{"battle", "eu", rooms.Private, rooms.Waiting},
			{"battle", "eu", rooms.Public, rooms.Finished},
			{"race", "us", rooms.Public, rooms.Waiting},
		}
		var ids []string
		for i, sp := range specs {
			r := mustCreate(t, s, user(i), newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region, r.Visibility = sp.mode, sp.region, sp.vis })).Room
			if sp.status != rooms.Waiting {
				update(t, s, user(i), r.ID, rooms.UpdateParams{Status: ptr(rooms.Playing)})
				if sp.status == rooms.Finished {
					update(t, s, user(i), r.ID, rooms.UpdateParams{Status: ptr(rooms.Finished)})
				}
			}
			ids = append(ids, r.ID)
		}
		tests := []walkCase{
			{"DefaultWaitingNewest", lobby.ListParams{}, []int{5, 2, 0}},
			{"Oldest", lobby.ListParams{Sort: "oldest"}, []int{0, 2, 5}},
			{"Mode", lobby.ListParams{Mode: "battle"}, []int{0}},
			{"Region", lobby.ListParams{Region: "eu"}, []int{2, 0}},
			{"ModeAndRegion", lobby.ListParams{Mode: "race", Region: "us"}, []int{5}},
			{"StatusList", lobby.ListParams{Status: "playing,finished"}, []int{4, 1}},
			{"AllStatusesBattle", lobby.ListParams{Status: "waiting,playing,finished", Mode: "battle", Sort: "oldest"}, []int{0, 1, 4}},
			{"PagesOfOne", lobby.ListParams{Status: "waiting,playing,finished", Limit: ptr(1)}, []int{5, 4, 2, 1, 0}},
			{"NoMatch", lobby.ListParams{Mode: "chess"}, nil},
		}
		checkWalks(t, svc, ids, tests)
		t.Run("ListedRoomsHaveNoPlayers", func(t *testing.T) {
			page, _ := svc.List(ctx, lobby.ListParams{})
			if len(page.Rooms) == 0 || len(page.Rooms[0].Players) > 0 {
				t.Fatalf("rooms %+v", page.Rooms)
			}
		})
		t.Run("BadParameters", func(t *testing.T) {
			page, _ := svc.List(ctx, lobby.ListParams{Limit: ptr(1)})
			for _, p := range []lobby.ListParams{
				{Status: "open"}, {Mode: "Battle"}, {Region: "e u"}, {Sort: "fill"}, {Limit: ptr(0)}, {Limit: ptr(101)},
				{Cursor: "garbage"}, {Cursor: page.NextCursor, Mode: "battle"}, {Cursor: page.NextCursor, Sort: "oldest"},
			} {
				_, err := svc.List(ctx, p)
				if !errors.Is(err, rooms.ErrValidation) {
					t.Errorf("%+v: error %v, want a validation error", p, err)
				}
			}
		})
	})
}

func TestListJoinableAndFill(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc := lobby.NewService(s.Listing())
		// created in this order: ids[0] oldest
		specs := []struct {
			region  string
			players int
			locked  bool
			status  rooms.Status
		}{
			{"eu", 1, false, rooms.Waiting},
			{"eu", 3, false, rooms.Waiting},
			{"eu", 4, false, rooms.Waiting}, // full
			{"eu", 2, true, rooms.Waiting},  // locked
			{"eu", 2, false, rooms.Waiting},
			{"us", 3, false, rooms.Waiting},
			{"us", 1, false, rooms.Playing},
		}
		var ids []string
		for i, sp := range specs {
			owner := user(10 * i)
			r := mustCreate(t, s, owner, newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region = "m", sp.region })).Room
			for j := 1; j < sp.players; j++ {
				if _, err := s.Join(ctx, user(10*i+j), r.ID); err != nil {
					t.Fatal(err)
				}
			}
			if sp.locked {
				update(t, s, owner, r.ID, rooms.UpdateParams{Locked: ptr(true)})
			}
			if sp.status != rooms.Waiting {
				update(t, s, owner, r.ID, rooms.UpdateParams{Status: ptr(sp.status)})
			}
			ids = append(ids, r.ID)
		}
		tests := []walkCase{
			{"JoinableNewest", lobby.ListParams{Joinable: true}, []int{5, 4, 1, 0}},
			{"JoinableOldestMode", lobby.ListParams{Joinable: true, Sort: "oldest", Mode: "m"}, []int{0, 1, 4, 5}},
			{"Fill", lobby.ListParams{Joinable: true, Sort: "fill"}, []int{1, 5, 4, 0}},
			{"FillRegion", lobby.ListParams{Joinable: true, Sort: "fill", Region: "eu"}, []int{1, 4, 0}},
			{"FillModeRegionPagesOfOne", lobby.ListParams{Joinable: true, Sort: "fill", Mode: "m", Region: "eu", Limit: ptr(1)}, []int{1, 4, 0}},
			{"FillPagesOfTwo", lobby.ListParams{Joinable: true, Sort: "fill", Limit: ptr(2)}, []int{1, 5, 4, 0}},
		}
		checkWalks(t, svc, ids, tests)
		// Leaving the full room makes it joinable again, at its new place.
		if err := s.Leave(ctx, user(21), ids[2]); err != nil {
			t.Fatal(err)
		}
		got := walk(t, svc, lobby.ListParams{Joinable: true, Sort: "fill", Region: "eu"})
		if want := fmt.Sprint([]string{ids[1], ids[2], ids[4], ids[0]}); fmt.Sprint(got) != want {
			t.Fatalf("after a leave: %v, want %v", got, want)
		}
		checkInvariants(t, s)
	})
}

// While two instances create and close rooms, a walk with newest or oldest
// lists every room present for the whole walk exactly once.
func TestListPagingUnderChurn(t *testing.T) {
	for _, b := range backendsForChurn(t) {
		t.Run(b.Name, func(t *testing.T) {
			s1, s2 := twoInstances(t, b)
			svc := lobby.NewService(s1.Listing())
			ctx := context.Background()
			stable := map[string]bool{}
			for i := range 60 {
				r := mustCreate(t, s1, user(i), newRoom(func(r *rooms.NewRoom) { r.Region = fmt.Sprintf("r%d", i%5) })).Room
				stable[r.ID] = true
			}
			for _, sort := range []string{"newest", "oldest"} {
				t.Run(sort, func(t *testing.T) {
					stop := make(chan struct{})
					var wg sync.WaitGroup
					for w, s := range []*store.Store{s1, s2} {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := range 120 { // bounded: the walk must be able to catch up
								select {
								case <-stop:
									return
								default:
								}
								u := user(1000 + w*10000 + i)
								r, err := s.Create(ctx, u, newRoom(func(r *rooms.NewRoom) { r.Region = fmt.Sprintf("r%d", i%5) }))
								if err == nil && i%2 == 0 {
									err = s.Leave(ctx, u, r.Room.ID)
								}
								if err != nil {
									t.Error(err)
									return
								}
							}
						}()
					}
					seen := map[string]int{}
					for _, id := range walk(t, svc, lobby.ListParams{Sort: sort, Limit: ptr(7)}) {
						seen[id]++
					}
					close(stop)
					wg.Wait()
					for id := range stable {
						if seen[id] != 1 {
							t.Errorf("stable room %s listed %d times", id, seen[id])
						}
					}
					for id, n := range seen {
						if n > 1 {
							t.Errorf("room %s listed %d times", id, n)
						}
					}
				})
			}
			checkInvariants(t, s1)
		})
	}
}

func TestListAttributeFilters(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc := lobby.NewService(s.Listing())
		var ids []string
		for i := range 12 {
			attrs := map[string]any{"map": []string{"dust2", "inferno"}[i%2], "rank": 1000 + 100*i}
			r := mustCreate(t, s, user(i), newRoom(func(r *rooms.NewRoom) { r.Mode, r.Attributes = "attr", attrs })).Room
			ids = append(ids, r.ID)
		}
		q := func(kv ...string) map[string][]string {
			m := map[string][]string{}
			for i := 0; i < len(kv); i += 2 {
				m[kv[i]] = []string{kv[i+1]}
			}
			return m
		}
		tests := []walkCase{
			{"Exact", lobby.ListParams{Mode: "attr", Sort: "oldest", Query: q("attr.map", "dust2")}, []int{0, 2, 4, 6, 8, 10}},
			{"Range", lobby.ListParams{Mode: "attr", Sort: "oldest", Query: q("attr.rank.gte", "1400", "attr.rank.lte", "1600")}, []int{4, 5, 6}},
			{"Both", lobby.ListParams{Mode: "attr", Query: q("attr.map", "inferno", "attr.rank.gt", "1500")}, []int{11, 9, 7}},
			{"NumberEquals", lobby.ListParams{Mode: "attr", Query: q("attr.rank", "1300")}, []int{3}},
			{"PagesOfTwo", lobby.ListParams{Mode: "attr", Sort: "oldest", Limit: ptr(2), Query: q("attr.map", "dust2")}, []int{0, 2, 4, 6, 8, 10}},
			{"FillOrder", lobby.ListParams{Joinable: true, Sort: "fill", Mode: "attr", Query: q("attr.rank.lt", "1200")}, []int{0, 1}},
		}
		checkWalks(t, svc, ids, tests)
		page, _ := svc.List(ctx, lobby.ListParams{Mode: "attr", Limit: ptr(1), Query: q("attr.map", "dust2")})
		if _, err := svc.List(ctx, lobby.ListParams{Mode: "attr", Cursor: page.NextCursor, Query: q("attr.map", "inferno")}); !errors.Is(err, rooms.ErrValidation) {
			t.Errorf("a cursor crossed to other attribute filters: %v", err)
		}
	})
}

// Past the scan budget a page comes back short with a cursor, and the walk
// still reaches a match behind more than a budget of non-matching rooms.
func TestListAttributeScanIsBounded(t *testing.T) {
	s := openStore(t, redistest.Backends(t)[0])
	ctx := context.Background()
	svc := lobby.NewService(s.Listing())
	target := mustCreate(t, s, user(0), newRoom(func(r *rooms.NewRoom) { r.Mode, r.Attributes = "scan", map[string]any{"map": "rare"} })).Room.ID
	for i := range lobby.ScanBudget + 100 {
		mustCreate(t, s, user(i+1), newRoom(func(r *rooms.NewRoom) { r.Mode, r.Attributes = "scan", map[string]any{"map": "common"} }))
	}
	p := lobby.ListParams{Mode: "scan", Query: map[string][]string{"attr.map": {"rare"}}}
	first, err := svc.List(ctx, p)
	if err != nil || len(first.Rooms) != 0 || first.NextCursor == "" {
		t.Fatalf("first page: %d rooms, cursor %q, %v", len(first.Rooms), first.NextCursor, err)
	}
	if got := walk(t, svc, p); len(got) != 1 || got[0] != target {
		t.Fatalf("walk found %v, want [%s]", got, target)
	}
}

// Paging through a single index (mode and region given, one status): the
// cursor's own entry must not end the walk early.
func TestListPagesThroughOneIndex(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		svc := lobby.NewService(s.Listing())
		for i := range 5 {
			mustCreate(t, s, user(i), newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region = "one", "idx" }))
		}
		for _, sort := range []string{"newest", "oldest"} {
			if got := walk(t, svc, lobby.ListParams{Mode: "one", Region: "idx", Sort: sort, Limit: ptr(1)}); len(got) != 5 {
				t.Errorf("%s in pages of one: %d rooms, want 5", sort, len(got))
			}
		}
	})
}

// indexReads counts, per listing request, what it read from Redis: the
// index entries its ZRANGEs returned and its room reads (HMGET). Only the
// commands sent with the request's context count (listed), not the
// store's own background work.
type indexReads struct {
	entries, rooms atomic.Int64
}

type listedKey struct{}

// listed marks ctx (the store must run without batching: a batch is sent
// with the batcher's context) as a request whose reads r counts.
func (r *indexReads) listed(ctx context.Context) context.Context {
	r.entries.Store(0)
	r.rooms.Store(0)
	return context.WithValue(ctx, listedKey{}, true)
}

func (r *indexReads) hook() redistest.Around {
	return func(ctx context.Context, cmds []redis.Cmder, send func() error) error {
		err := send()
		if ctx.Value(listedKey{}) == nil {
			return err
		}
		for _, c := range cmds {
			switch c := c.(type) {
			case *redis.ZSliceCmd:
				r.entries.Add(int64(len(c.Val())))
			case *redis.StringSliceCmd:
				if c.Name() == "zrange" {
					r.entries.Add(int64(len(c.Val())))
				}
			}
			if c.Name() == "hmget" {
				r.rooms.Add(1)
			}
		}
		return err
	}
}

// An attribute filter that matches nothing, over many rooms in many shards
// (16 shards × 2 statuses: 32 indexes), reads at most lobby.ScanBudget
// index entries and rooms per request, every page of the walk (no
// overhead with at most ScanBudget/2 indexes, see listing.Index.scan),
// and still ends; one that matches some rooms lists, page by page, what
// the unfiltered walk lists that matches, also where a page reads an
// index more than once.
func TestListAttributeScanReadsAtMostTheBudget(t *testing.T) {
	const n = 1300 // more than the budget: the first page stops on it
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		// Without batching, so that the request's own pipelines (and its
		// context) reach the counting hook.
		s := openStoreWith(t, b, func(c *store.Config) { c.Shards, c.Batch = 16, nil })
		var reads indexReads
		s.Client().AddHook(reads.hook())
		svc := lobby.NewService(s.Listing())
		seedScan(t, s, n)

		for _, sort := range []string{"newest", "oldest"} {
			t.Run("NoMatch/"+sort, func(t *testing.T) {
				p := lobby.ListParams{Status: "waiting,playing", Sort: sort, Limit: ptr(100),
					Query: map[string][]string{"attr.map": {"zzz"}}}
				for pages := 1; ; pages++ {
					page, err := svc.List(reads.listed(t.Context()), p)
					if err != nil {
						t.Fatal(err)
					}
					if e, r := reads.entries.Load(), reads.rooms.Load(); e > lobby.ScanBudget || r > lobby.ScanBudget {
						t.Fatalf("page %d read %d index entries and %d rooms, want at most %d each", pages, e, r, lobby.ScanBudget)
					}
					if len(page.Rooms) != 0 {
						t.Fatalf("page %d listed %d rooms, want none", pages, len(page.Rooms))
					}
					if pages == 1 && page.NextCursor == "" {
						t.Fatal("the first page has no cursor: the budget did not stop it")
					}
					if page.NextCursor == "" {
						return
					}
					if pages > n {
						t.Fatal("the walk never ends")
					}
					p.Cursor = page.NextCursor
				}
			})
		}
		cases := []struct {
			name      string
			p         lobby.ListParams // without the filter
			key, want string           // the filter: attribute key equals want
		}{
			{"Newest", lobby.ListParams{Status: "waiting,playing", Limit: ptr(7)}, "n", "3"},
			{"Oldest", lobby.ListParams{Status: "waiting,playing", Sort: "oldest", Limit: ptr(7)}, "n", "5"},
			{"Fill", lobby.ListParams{Joinable: true, Sort: "fill", Limit: ptr(7)}, "n", "2"},
			// 3 matches, over 400 rooms apart: pages end on the budget between them
			{"RareNewest", lobby.ListParams{Status: "waiting,playing", Limit: ptr(2)}, "k", "7"},
			{"RareOldest", lobby.ListParams{Status: "waiting,playing", Sort: "oldest", Limit: ptr(2)}, "k", "7"},
			{"RareFill", lobby.ListParams{Joinable: true, Sort: "fill", Limit: ptr(2)}, "k", "7"},
			// one index (K = 1) of 400 rooms, every room a match: a page
			// takes 101 entries, reading the index again after its first 100
			{"OneIndexNewest", lobby.ListParams{Mode: "deep", Region: "eu", Limit: ptr(100)}, "map", "a"},
			{"OneIndexOldest", lobby.ListParams{Mode: "deep", Region: "eu", Sort: "oldest", Limit: ptr(100)}, "map", "a"},
			{"OneIndexFill", lobby.ListParams{Mode: "deep", Region: "eu", Joinable: true, Sort: "fill", Limit: ptr(100)}, "map", "a"},
		}
		for i := range 400 {
			mustCreate(t, s, user(n+1+i), newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region, r.Attributes = "deep", "eu", map[string]any{"map": "a"} }))
		}
		for _, tc := range cases {
			t.Run("SomeMatch/"+tc.name, func(t *testing.T) {
				all := lobby.NewService(s.Listing())
				want := walkRooms(t, all, tc.p, func(r rooms.Room) bool { return fmt.Sprint(r.Attributes[tc.key]) == tc.want })
				p := tc.p
				p.Query = map[string][]string{"attr." + tc.key: {tc.want}}
				got := walk(t, svc, p)
				if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("filtered walk: %d rooms %v\nwant %d: %v", len(got), got, len(want), want)
				}
			})
		}
	})
}

// seedScan creates n public rooms over 64 modes with the attributes map=a,
// n = i % 7 and k = i % 450, every other one (i even) then playing, with 8
// writers.
func seedScan(tb testing.TB, s *store.Store, n int) {
	tb.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				u := user(i)
				r, err := s.Create(context.Background(), u, newRoom(func(r *rooms.NewRoom) {
					r.Mode, r.Region, r.Attributes = fmt.Sprintf("m%d", i%64), "eu", map[string]any{"map": "a", "n": i % 7, "k": i % 450}
				}))
				if err == nil && i%2 == 0 {
					_, err = s.Update(context.Background(), u, r.Room.ID, rooms.UpdateParams{Status: ptr(rooms.Playing)})
				}
				if err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// walkRooms is walk keeping only the rooms keep accepts.
func walkRooms(tb testing.TB, svc *lobby.Service, p lobby.ListParams, keep func(rooms.Room) bool) []string {
	tb.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		page, err := svc.List(context.Background(), p)
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range page.Rooms {
			if keep(r) {
				ids = append(ids, r.ID)
			}
		}
		if page.NextCursor == "" {
			return ids
		}
		if pages > 10000 {
			tb.Fatal("listing never ends")
		}
		p.Cursor = page.NextCursor
	}
}

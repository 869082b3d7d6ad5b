package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// REALSYNC_MODE_STRIPES' syntax: a default, per-mode overrides, and every
// malformed item refused; String reads back canonically.
func TestParseStripes(t *testing.T) {
	tests := []struct {
		in, want string // want "" for an error
		k        map[string]int
	}{
		{in: "", want: "1", k: map[string]int{"any": 1}},
		{in: "3", want: "3", k: map[string]int{"any": 3}},
		{in: " 2 , ranked = 4 ", want: "2,ranked=4", k: map[string]int{"any": 2, "ranked": 4}},
		{in: "ranked=3,casual=1", want: "1,ranked=3", k: map[string]int{"any": 1, "ranked": 3, "casual": 1}},
		{in: "0"}, {in: "-2"}, {in: "x"}, {in: "=2"}, {in: "ranked="}, {in: "2,3"}, {in: "a=2,a=3"}, {in: "ranked=0"},
	}
	for _, tc := range tests {
		st, err := store.ParseStripes(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseStripes(%q) = %v, want an error", tc.in, st)
			}
			continue
		}
		if err != nil || st.String() != tc.want {
			t.Errorf("ParseStripes(%q) = %q, %v; want %q", tc.in, st.String(), err, tc.want)
			continue
		}
		for mode, k := range tc.k {
			if st.K(mode) != k {
				t.Errorf("ParseStripes(%q).K(%q) = %d, want %d", tc.in, mode, st.K(mode), k)
			}
		}
		if again, err := store.ParseStripes(st.String()); err != nil || again.String() != st.String() {
			t.Errorf("%q does not read back: %q, %v", st.String(), again.String(), err)
		}
	}
}

// The placement's slot of a shard is the Cluster's own (CLUSTER KEYSLOT),
// and slot ranges split as the test Cluster's masters own them.
func TestStripeSlotsAreTheClusters(t *testing.T) {
	if got := store.CRC16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16 check value %#x, want 0x31c3", got)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.ClusterAddrs(t)})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	s := openStoreWith(t, redistest.Backend{Name: "cluster", ClusterAddrs: redistest.ClusterAddrs(t)},
		func(c *store.Config) { c.Shards = 64 })
	for shard := range 64 {
		tag := s.ShardTag(shard)
		want, err := c.ClusterKeySlot(ctx, tag+":x").Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := int64(store.CRC16(strings.Trim(tag, "{}")) % 16384); got != want || int64(s.PlacedSlot(shard)) != want {
			t.Fatalf("shard %d (%s): slot %d, placed at %d, Cluster says %d", shard, tag, got, s.PlacedSlot(shard), want)
		}
	}
	//lint:ignore SA1019 the layout as go-redis reads it (CLUSTER SLOTS)
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range slots {
		for _, slot := range []int{int(r.Start), int(r.End)} {
			if got, want := store.SlotRange(slot, len(slots)), store.SlotRange(int(r.Start), len(slots)); got != want {
				t.Errorf("slot %d in range %d, its master's first slot %d in %d", slot, got, r.Start, want)
			}
		}
	}
}

// masterOf maps a shard to the address of the Cluster master that owns
// its slot.
func masterOf(t *testing.T, s *store.Store) func(shard int) string {
	t.Helper()
	ctx := context.Background()
	c := s.Client().(*redis.ClusterClient)
	//lint:ignore SA1019 the layout as go-redis reads it (CLUSTER SLOTS)
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return func(shard int) string {
		slot, err := c.ClusterKeySlot(ctx, s.ShardTag(shard)+":x").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range slots {
			if int64(r.Start) <= slot && slot <= int64(r.End) {
				return r.Nodes[0].Addr
			}
		}
		t.Fatalf("no master owns slot %d", slot)
		return ""
	}
}

// With K = 3 on the 3-master test Cluster, the rooms of one (mode, region)
// land on 3 shards whose slots are on 3 different masters, for every pair.
func TestStripesOnDifferentMasters(t *testing.T) {
	s := openStoreWith(t, redistest.Backend{Name: "cluster", ClusterAddrs: redistest.ClusterAddrs(t)}, func(c *store.Config) {
		c.Shards, c.Stripes = 64, store.Stripes{Default: 1, Modes: map[string]int{"hot": 3}}
	})
	master := masterOf(t, s)
	distinct := func(shards []int) int {
		seen := map[string]bool{}
		for _, sh := range shards {
			seen[master(sh)] = true
		}
		return len(seen)
	}
	for i := range 20 {
		region := fmt.Sprintf("r%d", i)
		st := s.StripesOf("hot", region)
		if len(st) != 3 || distinct(st) != 3 {
			t.Fatalf("hot/%s: stripes %v on %d masters, want 3 on 3", region, st, distinct(st))
		}
		if cold := s.StripesOf("cold", region); len(cold) != 1 {
			t.Fatalf("cold/%s: stripes %v, want the home shard alone", region, cold)
		}
	}
	ctx := context.Background()
	used := map[int]bool{}
	for i := range 30 {
		j, err := s.Create(ctx, user(i), newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region = "hot", "eu" }))
		if err != nil {
			t.Fatal(err)
		}
		sh := s.ShardOfRoom(j.Room.ID)
		if !slices.Contains(s.StripesOf("hot", "eu"), sh) {
			t.Fatalf("room %s on shard %d, not a stripe of %v", j.Room.ID, sh, s.StripesOf("hot", "eu"))
		}
		used[sh] = true
	}
	var shards []int
	for sh := range used {
		shards = append(shards, sh)
	}
	if len(shards) != 3 || distinct(shards) != 3 {
		t.Fatalf("30 rooms on shards %v (%d masters), want 3 shards on 3 masters", shards, distinct(shards))
	}
	checkInvariants(t, s)
}

// stripedStore is openStore with K stripes for every mode.
func stripedStore(t *testing.T, b redistest.Backend, k int) *store.Store {
	return openStoreWith(t, b, func(c *store.Config) { c.Stripes = store.Stripes{Default: k} })
}

// Listing one (mode, region) over 3 stripes: every sort pages through all
// rooms in order, each once, while rooms are created between the pages.
func TestStripesListingPagesAcrossStripes(t *testing.T) {
	eachStripedBackend(t, 3, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		mk := func(i, players int) string {
			j := mustCreate(t, s, user(1000+i), newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region, r.MaxPlayers = "hot", "eu", 8 }))
			for p := 1; p < players; p++ {
				mustJoin(t, s, user(2000+100*i+p), j.Room.ID)
			}
			return j.Room.ID
		}
		want := map[string]bool{}
		shards := map[int]bool{}
		for i := range 24 {
			id := mk(i, 1+i%4)
			want[id] = true
			shards[s.ShardOfRoom(id)] = true
		}
		if len(shards) != 3 {
			t.Fatalf("24 rooms on %d shards, want 3", len(shards))
		}
		extra := 0
		for _, sort := range []lobby.Sort{lobby.Fill, lobby.Newest, lobby.Oldest} {
			t.Run(string(sort), func(t *testing.T) {
				q := lobby.Query{Statuses: []rooms.Status{rooms.Waiting}, Joinable: true, Mode: "hot", Region: "eu", Sort: sort, Limit: 5}
				seen := map[string]int{}
				var prev *rooms.Room
				for page := 0; ; page++ {
					res, err := s.Listing().List(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range res.Rooms {
						seen[r.ID]++
						if prev != nil && !inOrder(sort, *prev, r) {
							t.Fatalf("%s: %s (%d players, %v) after %s (%d, %v)", sort, r.ID, r.PlayerCount, r.CreatedAt, prev.ID, prev.PlayerCount, prev.CreatedAt)
						}
						prev = &r
					}
					mk(100+extra, 1) // a room created between pages
					extra++
					if !res.More {
						break
					}
					q.After = &res.Last
				}
				for id := range want {
					if seen[id] != 1 {
						t.Errorf("%s: room %s listed %d times", sort, id, seen[id])
					}
				}
				for id, n := range seen {
					if n > 1 {
						t.Errorf("%s: room %s listed %d times", sort, id, n)
					}
				}
			})
		}
		checkInvariants(t, s)
	})
}

// inOrder: b may follow a in sort (rooms of the listing test, whose fills
// do not change while it pages).
func inOrder(sort lobby.Sort, a, b rooms.Room) bool {
	switch sort {
	case lobby.Fill:
		return a.PlayerCount > b.PlayerCount || a.PlayerCount == b.PlayerCount && !b.CreatedAt.Before(a.CreatedAt)
	case lobby.Newest:
		return !b.CreatedAt.After(a.CreatedAt)
	}
	return !b.CreatedAt.Before(a.CreatedAt)
}

// eachStripedBackend is eachBackend with K stripes for every mode.
func eachStripedBackend(t *testing.T, k int, f func(t *testing.T, s *store.Store)) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, stripedStore(t, b, k)) })
	}
}

// N concurrent quick-joins into one (mode, region) over K = 3 stripes,
// through two instances, rooms of M seats: every caller in exactly one
// room, at most K rooms partly filled, at most ceil(N/M) + K − 1 rooms,
// every room on a stripe; counts and indexes consistent.
func TestStripesQuickJoinPacking(t *testing.T) {
	const k, n, m = 3, 40, 4
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s1, s2 := twoInstances(t, b, store.Config{Stripes: store.Stripes{Default: k}})
		ctx := context.Background()
		var wg sync.WaitGroup
		var mu sync.Mutex
		roomOf := map[string]string{}
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := []*store.Store{s1, s2}[i%2]
				q, err := s.QuickJoin(ctx, user(i), "hot", []string{"eu"}, nil, quickRoom("hot", "eu", m))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				roomOf[user(i).ID] = q.Room.ID
				mu.Unlock()
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		res, err := s1.Listing().List(ctx, lobby.Query{Statuses: []rooms.Status{rooms.Waiting}, Mode: "hot", Region: "eu", Sort: lobby.Oldest, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		members := map[string]string{}
		partial, total := 0, 0
		for _, r := range res.Rooms {
			if !slices.Contains(s1.StripesOf("hot", "eu"), s1.ShardOfRoom(r.ID)) {
				t.Errorf("room %s not on a stripe", r.ID)
			}
			full, _, err := s1.Get(ctx, r.ID, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range full.Players {
				if other, dup := members[p.UserID]; dup {
					t.Errorf("user %s in rooms %s and %s", p.UserID, other, r.ID)
				}
				members[p.UserID] = r.ID
				if roomOf[p.UserID] != r.ID {
					t.Errorf("user %s told room %s, is in %s", p.UserID, roomOf[p.UserID], r.ID)
				}
			}
			total += r.PlayerCount
			if r.PlayerCount < m {
				partial++
			}
		}
		maxRooms := (n+m-1)/m + k - 1
		if total != n || len(members) != n || partial > k || len(res.Rooms) > maxRooms {
			t.Fatalf("%d rooms (%d partly filled), %d players (%d distinct); want ≤ %d rooms, ≤ %d partly filled, %d players",
				len(res.Rooms), partial, total, len(members), maxRooms, k, n)
		}
		t.Logf("%d quick-joins, rooms of %d, K=%d: %d rooms, %d partly filled", n, m, k, len(res.Rooms), partial)
		checkInvariants(t, s1)
	})
}

// The stripe count changes 1 → 3 → 2 over a deployment's life, rooms in
// place: every configuration is recorded in the meta hash, every room is
// still listed and joinable (quick-join fills the drained stripes' rooms
// before creating), and once the rooms close the janitor leaves no key of
// theirs behind. Standalone and Cluster: instances share the data (each
// embedded store is a Redis of its own).
func TestStripesChangeKeepsRooms(t *testing.T) {
	for _, b := range redistest.Backends(t)[:2] {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			prefix := redistest.Prefix(t)
			open := func(k int) *store.Store {
				return openStoreWith(t, b, func(c *store.Config) { c.Prefix, c.Stripes = prefix, store.Stripes{Default: k} })
			}
			s1 := open(1)
			before := keySet(countKeys(t, s1))
			var ids []string
			create := func(s *store.Store, n int) {
				for range n {
					i := len(ids)
					j := mustCreate(t, s, user(i), newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region, r.MaxPlayers = "hot", "eu", 2 }))
					ids = append(ids, j.Room.ID)
				}
			}
			create(s1, 4)
			s3 := open(3)
			create(s3, 12)
			s2 := open(2)
			if got := s2.StripeConfigs(); !sameSet(got, []string{"2", "1", "3"}) {
				t.Fatalf("K=2 store reads configurations %v, want 1, 3 and 2", got)
			}
			if err := s1.RefreshStripes(ctx); err != nil {
				t.Fatal(err)
			}
			shards := map[int]bool{}
			for _, id := range ids {
				shards[s2.ShardOfRoom(id)] = true
			}
			var drained []string
			for _, id := range ids {
				if !slices.Contains(s2.CreateStripesOf("hot", "eu"), s2.ShardOfRoom(id)) {
					drained = append(drained, id)
				}
			}
			// K=3 creates on a random stripe: more until one lands on a
			// stripe K=2 no longer creates on (a few in 200 never do)
			for len(drained) == 0 && len(ids) < 216 {
				create(s3, 1)
				if id := ids[len(ids)-1]; !slices.Contains(s2.CreateStripesOf("hot", "eu"), s2.ShardOfRoom(id)) {
					drained = append(drained, id)
				}
				shards[s2.ShardOfRoom(ids[len(ids)-1])] = true
			}
			if len(drained) == 0 {
				t.Fatalf("rooms on shards %v, all stripes of K=2 %v: the test needs a drained one", shards, s2.CreateStripesOf("hot", "eu"))
			}
			for _, s := range []*store.Store{s1, s2, s3} {
				listed := listIDs(t, s, "hot", "eu")
				if !sameSet(listed, ids) {
					t.Fatalf("%d rooms listed, want the %d created", len(listed), len(ids))
				}
			}
			// every room has one seat left: quick-joins through K=2 fill
			// the drained stripes' rooms first, creating none; the others
			// are joined by id
			var filled []string
			for i := range drained {
				q, err := s2.QuickJoin(ctx, user(500+i), "hot", []string{"eu"}, nil, quickRoom("hot", "eu", 2))
				if err != nil {
					t.Fatal(err)
				}
				if q.Created || !slices.Contains(drained, q.Room.ID) {
					t.Fatalf("quick-join %d went to %s (created %v), want a drained stripe's room of %v", i, q.Room.ID, q.Created, drained)
				}
				filled = append(filled, q.Room.ID)
			}
			if !sameSet(filled, drained) {
				t.Fatalf("quick-joins filled %v, want %v", filled, drained)
			}
			for i, id := range ids {
				if !slices.Contains(drained, id) {
					mustJoin(t, s2, user(700+i), id)
				}
			}
			if listed := listIDs(t, s2, "hot", "eu"); len(listed) != len(ids) {
				t.Fatalf("%d rooms after the quick-joins, want %d", len(listed), len(ids))
			}
			checkInvariants(t, s2)
			for _, id := range ids {
				r, _, err := s2.Get(ctx, id, false)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range r.Players {
					if err := s2.Leave(ctx, rooms.User{ID: p.UserID}, id); err != nil {
						t.Fatal(err)
					}
				}
			}
			for shard := range 8 {
				if _, err := s2.Sweep(ctx, shard, "test", time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			if listed := listIDs(t, s1, "hot", "eu"); len(listed) != 0 {
				t.Fatalf("%d rooms listed after all left", len(listed))
			}
			checkInvariants(t, s2)
			after := keySet(countKeys(t, s1))
			for k := range after {
				if !before[k] && !leftByDesign(k) {
					t.Errorf("key %s left behind", k)
				}
			}
		})
	}
}

// leftByDesign: keys a closed room leaves for a while or a shard keeps for
// good: the closed room's log (ClosedLogTTL), the shard's stats and clock,
// the janitor's lease (its interval), and the deployment's meta hash.
func leftByDesign(k string) bool {
	for _, suffix := range []string{":log", ":stats", ":clock", ":janitor", ":meta"} {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

func listIDs(t *testing.T, s *store.Store, mode, region string) []string {
	t.Helper()
	var out []string
	q := lobby.Query{Statuses: []rooms.Status{rooms.Waiting, rooms.Playing}, Mode: mode, Region: region, Sort: lobby.Oldest, Limit: 7}
	for {
		res, err := s.Listing().List(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Rooms {
			out = append(out, r.ID)
		}
		if !res.More {
			return out
		}
		q.After = &res.Last
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func keySet(keys []string) map[string]bool {
	out := map[string]bool{}
	for _, k := range keys {
		out[k] = true
	}
	return out
}

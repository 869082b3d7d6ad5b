package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// streamInstances opens two stores with a cap of max streams per user and
// presence TTL ttl on one backend and prefix, as two realsyncd processes.
func streamInstances(t *testing.T, b redistest.Backend, max int, ttl time.Duration) (*store.Store, *store.Store) {
	t.Helper()
	return twoInstances(t, b, store.Config{PresenceTTL: ttl, Quotas: store.Quotas{StreamsPerUser: max}})
}

func userStreams(t *testing.T, s *store.Store, u rooms.User) []string {
	t.Helper()
	m, err := s.UserStreams(context.Background(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// openAny opens stream name of u on room ("" for the lobby) through s.
func openAny(ctx context.Context, s *store.Store, u rooms.User, room, name string) (sse.Lease, error) {
	l := sse.Lease{Room: room, UserID: u.ID, Stream: name}
	if room == "" {
		return l, s.OpenLobby(ctx, l)
	}
	o, err := s.OpenStream(ctx, l, sse.ReadFrom, sse.Cursor{}, 1000)
	l.PlayerID = o.PlayerID
	return l, err
}

func closeAny(t *testing.T, s *store.Store, l sse.Lease) {
	t.Helper()
	var err error
	if l.Room == "" {
		err = s.CloseLobby(context.Background(), l)
	} else {
		err = s.CloseStream(context.Background(), l)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A user opening streams over several rooms and the lobby through two
// instances holds exactly max; the next is refused with STREAM_LIMIT and
// leaves its room untouched (no player_connected); closing one frees a
// place; once every stream closed no key is left behind.
func TestStreamLimitAcrossRoomsAndLobby(t *testing.T) {
	const max = 5
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s1, s2 := streamInstances(t, b, max, time.Minute)
		var ids []string
		for i := range 3 {
			ids = append(ids, mustCreate(t, s1, alice, spread(i)).Room.ID)
		}
		before := countKeys(t, s1)
		// rooms 0, 1, 2, the lobby, room 0 again: max, over both instances
		plan := []string{ids[0], ids[1], "", ids[2], ids[0]}
		var held []sse.Lease
		for i, room := range plan {
			l, err := openAny(ctx, []*store.Store{s1, s2}[i%2], alice, room, fmt.Sprint("i", i%2, ".", i))
			if err != nil {
				t.Fatalf("stream %d of %d (room %q): %v", i+1, max, room, err)
			}
			held = append(held, l)
		}
		if got := userStreams(t, s1, alice); len(got) != max {
			t.Fatalf("recorded %v, want %d streams", got, max)
		}
		checkInvariants(t, s1)
		ver := roomVersion(t, s1, ids[1])
		for i, room := range []string{ids[1], "", ids[2]} {
			_, err := openAny(ctx, []*store.Store{s1, s2}[i%2], alice, room, fmt.Sprint("over", i))
			wantErr(t, err, rooms.ErrStreamLimit)
		}
		if v := roomVersion(t, s1, ids[1]); v != ver {
			t.Errorf("a refused stream changed the room: version %d, was %d", v, ver)
		}
		// another user is not affected
		if _, err := openAny(ctx, s2, bob, "", "bob"); err != nil {
			t.Fatalf("bob's lobby: %v", err)
		}
		closeAny(t, s2, held[1])
		l, err := openAny(ctx, s2, alice, "", "again")
		if err != nil {
			t.Fatalf("after a close: %v", err)
		}
		held[1] = l
		_, err = openAny(ctx, s1, alice, ids[1], "over-again")
		wantErr(t, err, rooms.ErrStreamLimit)
		for _, l := range held {
			closeAny(t, s1, l)
		}
		closeAny(t, s1, sse.Lease{UserID: bob.ID, Stream: "bob"})
		if got := userStreams(t, s1, alice); got != nil {
			t.Errorf("after every close: %v", got)
		}
		checkInvariants(t, s1)
		if after := countKeys(t, s1); !slices.Equal(sorted(after), sorted(before)) {
			t.Errorf("keys before %v, after %v", before, after)
		}
	})
}

// A stream the room refuses (not a member, too many streams of the player
// in the room) takes no place among the user's streams.
func TestRefusedRoomStreamTakesNoPlace(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := streamInstances(t, b, 16, time.Minute)
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		_, err := openAny(ctx, s, bob, id, "b")
		wantErr(t, err, rooms.ErrNotMember)
		if got := userStreams(t, s, bob); got != nil {
			t.Errorf("a non-member's refused stream left %v", got)
		}
		for i := range rooms.MaxStreamsPerPlayer {
			if _, err := openAny(ctx, s, alice, id, fmt.Sprint("a", i)); err != nil {
				t.Fatal(err)
			}
		}
		_, err = openAny(ctx, s, alice, id, "one-too-many")
		wantErr(t, err, rooms.ErrTooManyStreams)
		if got := userStreams(t, s, alice); len(got) != rooms.MaxStreamsPerPlayer {
			t.Errorf("recorded %d streams, want %d: %v", len(got), rooms.MaxStreamsPerPlayer, got)
		}
	})
}

// 2×max opens of one user at once, through two instances, on rooms and
// the lobby: exactly max succeed, every other is refused with
// STREAM_LIMIT.
func TestStreamLimitHoldsUnderConcurrency(t *testing.T) {
	const max = 8
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s1, s2 := streamInstances(t, b, max, time.Minute)
		var ids []string
		for i := range 4 {
			ids = append(ids, mustCreate(t, s1, alice, spread(i)).Room.ID)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2*max)
		for i := range errs {
			wg.Go(func() {
				room := ""
				if i%5 != 0 {
					room = ids[i%len(ids)]
				}
				_, errs[i] = openAny(ctx, []*store.Store{s1, s2}[i%2], alice, room, fmt.Sprint("c", i))
			})
		}
		wg.Wait()
		ok, limited := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, rooms.ErrStreamLimit):
				limited++
			default:
				t.Errorf("unexpected error %v", err)
			}
		}
		if ok != max || limited != max {
			t.Errorf("%d opened, %d refused; want %d and %d", ok, limited, max, max)
		}
		if got := userStreams(t, s1, alice); len(got) != max {
			t.Errorf("recorded %d streams, want %d", len(got), max)
		}
		checkInvariants(t, s1)
	})
}

// The leases of an instance that stops renewing (killed) lapse after the
// TTL and free their places; renewed leases hold theirs, and a lease no
// longer held is reported lost, lobby ones too.
func TestUserStreamLeasesLapseUnlessRenewed(t *testing.T) {
	// a TTL of 3 s: the leases held must outlast a loaded machine's
	// stalls between the calls below (1.5 s was tight)
	const max, ttl = 3, 3 * time.Second
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		dead, live := streamInstances(t, b, max, ttl)
		id := mustCreate(t, dead, alice, newRoom()).Room.ID
		mustJoin(t, dead, bob, id)
		// alice's streams on the instance that dies, bob's on one that renews
		var bobs []sse.Lease
		for i := range max {
			if _, err := openAny(ctx, dead, alice, []string{id, ""}[i%2], fmt.Sprint("dead.", i)); err != nil {
				t.Fatal(err)
			}
			l, err := openAny(ctx, live, bob, []string{id, ""}[i%2], fmt.Sprint("live.", i))
			if err != nil {
				t.Fatal(err)
			}
			bobs = append(bobs, l)
		}
		_, err := openAny(ctx, live, alice, "", "early")
		wantErr(t, err, rooms.ErrStreamLimit)
		// renew bob's every TTL/4 until alice's places are free again
		// the live instance renews what it holds, as its hub does, on
		// every wait below (a lease it stopped renewing would lapse too
		// on a machine slow enough)
		held := bobs
		renew := func() {
			t.Helper()
			if lost, err := live.RenewStreams(ctx, held); err != nil || len(lost) > 0 {
				t.Fatalf("renewal: lost %v, err %v", lost, err)
			}
		}
		freed := false
		for deadline := time.Now().Add(10 * ttl); time.Now().Before(deadline) && !freed; time.Sleep(ttl / 4) {
			renew()
			late, err := openAny(ctx, live, alice, "", "late")
			if freed = err == nil; freed {
				held = append(slices.Clone(bobs), late)
			}
			if err != nil && !errors.Is(err, rooms.ErrStreamLimit) {
				t.Fatal(err)
			}
		}
		if !freed {
			t.Fatal("the dead instance's leases never lapsed")
		}
		// the first lapsed lease freed a place; the others (opened a
		// moment later) lapse within a TTL more
		live_ := func() []string {
			m, err := live.LiveUserStreams(ctx, alice.ID)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		got := live_()
		for deadline := time.Now().Add(2 * ttl); len(got) != 1 && time.Now().Before(deadline); time.Sleep(ttl / 10) {
			renew()
			got = live_()
		}
		if len(got) != 1 {
			t.Errorf("alice's streams after the lapse: %v, want the new one only", got)
		}
		renew()
		_, err = openAny(ctx, live, bob, "", "bob-over")
		wantErr(t, err, rooms.ErrStreamLimit)
		lapsed := sse.Lease{UserID: alice.ID, Stream: "dead.1"}
		lost, err := live.RenewStreams(ctx, []sse.Lease{bobs[1], lapsed})
		if err != nil || !slices.Equal(lost, []sse.Lease{lapsed}) {
			t.Errorf("lost %v, err %v; want the lapsed lobby lease", lost, err)
		}
		checkInvariants(t, live)
	})
}

// The renewal pipeline runs again after Redis forgot its script.
func TestUserStreamsRenewAfterScriptFlush(t *testing.T) {
	for _, b := range backendsWithFlush(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := streamInstances(t, b, 4, time.Minute)
			var ls []sse.Lease
			for _, u := range []rooms.User{alice, bob, carol} {
				l, err := openAny(ctx, s, u, "", "f-"+u.ID)
				if err != nil {
					t.Fatal(err)
				}
				ls = append(ls, l)
			}
			flushScripts(t, s)
			if lost, err := s.RenewStreams(ctx, ls); err != nil || len(lost) > 0 {
				t.Fatalf("after SCRIPT FLUSH: lost %v, err %v", lost, err)
			}
			flushScripts(t, s)
			if _, err := openAny(ctx, s, alice, "", "f2"); err != nil {
				t.Fatalf("open after SCRIPT FLUSH: %v", err)
			}
		})
	}
}

func roomVersion(t *testing.T, s *store.Store, id string) int64 {
	t.Helper()
	r, _, err := s.Get(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	return r.Version
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// The invariants see a user's streams key that would outlive its leases
// or holds a malformed member.
func TestInvariantsCheckUserStreams(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := streamInstances(t, b, 4, time.Minute)
		if _, err := openAny(ctx, s, alice, "", "ok.1"); err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, s)
		keys, err := rediskeys.Scan(ctx, s.Client(), "{"+s.Prefix()+":*}:streams:"+alice.ID)
		if err != nil || len(keys) != 1 {
			t.Fatalf("keys %v, err %v", keys, err)
		}
		c := s.Client()
		c.ZAdd(ctx, keys[0], redis.Z{Score: 1, Member: "no slash"})
		c.Persist(ctx, keys[0])
		bad, err := invariantsCheck(s)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(bad, "\n")
		for _, want := range []string{"no expiry"} {
			if !strings.Contains(got, want) {
				t.Errorf("violations %q, want one with %q", got, want)
			}
		}
		c.PExpire(ctx, keys[0], time.Minute)
		c.ZAdd(ctx, keys[0], redis.Z{Score: 1, Member: "no slash"}, redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: "/late.1"})
		bad, _ = invariantsCheck(s)
		got = strings.Join(bad, "\n")
		for _, want := range []string{`malformed member "no slash"`, "lease /late.1 lives until"} {
			if !strings.Contains(got, want) {
				t.Errorf("violations %q, want one with %q", got, want)
			}
		}
		c.Del(ctx, keys[0])
	})
}

package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

func lease(room string, u rooms.User, stream string) sse.Lease {
	return sse.Lease{Room: room, UserID: u.ID, Stream: stream}
}

func open(t *testing.T, s *store.Store, l sse.Lease, c sse.Cursor) sse.Opening {
	t.Helper()
	o, err := s.OpenStream(context.Background(), l, sse.ReadFrom, c, 1000)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	return o
}

func TestOpenStreamReadsSnapshotOrReplay(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		j, _ := s.Create(ctx, alice, newRoom())
		id := j.Room.ID
		s.Join(ctx, bob, id)
		first := open(t, s, lease(id, alice, "a"), sse.Cursor{})
		if first.Snapshot == nil || first.Snapshot.Version != 3 || first.Version != 3 || first.PlayerID != 1 {
			t.Fatalf("first open: %+v", first)
		}
		if p := first.Snapshot.Room.Players[0]; !p.Connected {
			t.Errorf("snapshot shows the opener disconnected: %+v", p)
		}
		evs := events(t, s, id)
		if got := types(evs); got[2] != "player_connected" {
			t.Fatalf("events %v", got)
		}
		s.PatchState(ctx, alice, id, rooms.StatePatch{Set: rooms.State{"k": []byte(`1`)}, IfMatch: rooms.NoIfMatch})
		tag := first.Snapshot.Tag
		cases := []struct {
			name     string
			c        sse.Cursor
			snapshot bool
			replay   []int64 // versions
		}{
			{"same history", sse.Cursor{Set: true, Version: 3, Tag: tag}, false, []int64{4}},
			{"tagless id", sse.Cursor{Set: true, Version: 2}, false, []int64{3, 4}},
			{"from the start", sse.Cursor{Set: true, Version: 0}, false, []int64{1, 2, 3, 4}},
			// no event has id 0-<tag>: a tag made up, not the whole log
			{"from the start, tagged", sse.Cursor{Set: true, Version: 0, Tag: tag}, true, nil},
			{"from the start, made up", sse.Cursor{Set: true, Version: 0, Tag: "madeup"}, true, nil},
			{"up to date", sse.Cursor{Set: true, Version: 4}, false, nil},
			{"other history", sse.Cursor{Set: true, Version: 3, Tag: "zzzzzz"}, true, nil},
			{"from the future", sse.Cursor{Set: true, Version: 99}, true, nil},
		}
		for _, c := range cases {
			o := open(t, s, lease(id, alice, "a"), c.c)
			if (o.Snapshot != nil) != c.snapshot {
				t.Errorf("%s: snapshot %v, want %v", c.name, o.Snapshot != nil, c.snapshot)
			}
			var got []int64
			for _, e := range o.Replay {
				got = append(got, e.Version)
			}
			if len(got) != len(c.replay) || (len(got) > 0 && got[len(got)-1] != c.replay[len(c.replay)-1]) || (len(got) > 0 && got[0] != c.replay[0]) {
				t.Errorf("%s: replay %v, want %v", c.name, got, c.replay)
			}
		}
		if o, _ := s.OpenStream(ctx, lease(id, alice, "a"), sse.ReadFrom, sse.Cursor{Set: true, Version: 1}, 2); o.Snapshot == nil {
			t.Error("a resume further behind than the limit replayed")
		}
	})
}

func TestOpenStreamRefusesNonMembers(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		pub, _ := s.Create(ctx, alice, newRoom())
		priv, _ := s.Create(ctx, alice, newRoom(func(r *rooms.NewRoom) { r.Visibility = rooms.Private }))
		for _, c := range []struct {
			room string
			want error
		}{{pub.Room.ID, rooms.ErrNotMember}, {priv.Room.ID, rooms.ErrRoomNotFound}, {"00nonexistent00", rooms.ErrRoomNotFound}} {
			if _, err := s.OpenStream(ctx, lease(c.room, bob, "b"), sse.ReadFrom, sse.Cursor{}, 10); !errors.Is(err, c.want) {
				t.Errorf("room %s: %v, want %v", c.room, err, c.want)
			}
		}
		if n := len(events(t, s, pub.Room.ID)); n != 1 {
			t.Errorf("a refused open wrote events: %d", n)
		}
	})
}

func TestPresenceCountsEachPlayerOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		j, _ := s.Create(ctx, alice, newRoom())
		id := j.Room.ID
		a1, a2 := lease(id, alice, "one"), lease(id, alice, "two")
		a1.PlayerID = open(t, s, a1, sse.Cursor{}).PlayerID
		a2.PlayerID = open(t, s, a2, sse.Cursor{}).PlayerID
		if err := s.CloseStream(ctx, a1); err != nil {
			t.Fatal(err)
		}
		r, _, _ := s.Get(ctx, id, false)
		if !r.Players[0].Connected {
			t.Error("player shown disconnected with a stream still open")
		}
		s.CloseStream(ctx, a2)
		r, _, _ = s.Get(ctx, id, false)
		if r.Players[0].Connected {
			t.Error("player shown connected with no stream")
		}
		want := []string{"player_joined", "player_connected", "player_disconnected"}
		if got := types(events(t, s, id)); !equal(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A stream whose instance stops renewing it lapses: the janitor announces
// the player disconnected, and removes them once the grace has passed.
// The kept stream, renewed once a loop, must not lapse between a renewal
// and the sweeps that follow it: the TTL is a second (with 300 ms, a
// loaded machine's 300 ms between them lapsed it too).
func TestJanitorRemovesPlayersOfDeadInstances(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
			Prefix: redistest.Prefix(t), Shards: 4, PresenceTTL: time.Second, DisconnectGrace: 300 * time.Millisecond})
		j, _ := s.Create(ctx, alice, newRoom())
		id := j.Room.ID
		s.Join(ctx, bob, id)
		kept := lease(id, alice, "kept")
		kept.PlayerID = open(t, s, kept, sse.Cursor{}).PlayerID
		open(t, s, lease(id, bob, "dead"), sse.Cursor{})

		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if lost, err := s.RenewStreams(ctx, []sse.Lease{kept}); err != nil || len(lost) > 0 {
				t.Fatalf("renew: lost %v, err %v", lost, err)
			}
			for shard := range 4 {
				if _, err := s.Sweep(ctx, shard, "test", time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			if r, _, _ := s.Get(ctx, id, false); r.PlayerCount == 1 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		evs := events(t, s, id)
		want := []string{"player_joined", "player_joined", "player_connected", "player_connected",
			"player_disconnected", "player_left"}
		if got := types(evs); !equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
		if last := evs[len(evs)-1]; last.PlayerID != 2 || last.Reason != "disconnected" {
			t.Errorf("last event %+v", last)
		}
		r, _, _ := s.Get(ctx, id, false)
		if len(r.Players) != 1 || !r.Players[0].Connected {
			t.Errorf("players %+v", r.Players)
		}
	})
}

// A dead instance's streams over many rooms are all announced
// disconnected in one janitor visit of their shard, batch after batch,
// not sweepBatch (100) rooms a visit.
func TestDeadInstanceRoomsDisconnectedInOneVisit(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		ttl := 500 * time.Millisecond
		s := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
			Prefix: redistest.Prefix(t), Shards: 1, PresenceTTL: ttl, DisconnectGrace: time.Minute})
		const n = 250
		for i := range n {
			u := rooms.User{ID: fmt.Sprintf("u%d", i), Name: "p"}
			j := mustCreate(t, s, u, newRoom())
			open(t, s, lease(j.Room.ID, u, "dead"), sse.Cursor{})
		}
		time.Sleep(ttl + 200*time.Millisecond) // no renewal: every lease lapses
		rep, err := s.Sweep(ctx, 0, "janitor", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got := rep["presence_disconnect"]; got != n || rep["presence_debounced"] != 0 {
			t.Errorf("one visit announced %d players disconnected, want %d (report %v)", got, n, rep)
		}
	})
}

func TestRenewReportsLapsedLeases(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		j, _ := s.Create(ctx, alice, newRoom())
		l := lease(j.Room.ID, alice, "x")
		l.PlayerID = open(t, s, l, sse.Cursor{}).PlayerID
		// more leases than one renewal script takes: ghosts (never opened)
		// in the first, a middle and the last batch are each reported
		var all, ghosts []sse.Lease
		for i := range 600 {
			if i == 3 || i == 300 || i == 599 {
				g := l
				g.Stream = fmt.Sprint("never-opened-", i)
				ghosts = append(ghosts, g)
				all = append(all, g)
			} else {
				all = append(all, l)
			}
		}
		lost, err := s.RenewStreams(ctx, all)
		if err != nil || !slices.Equal(lost, ghosts) {
			t.Fatalf("lost %v, err %v; want %v", lost, err, ghosts)
		}
	})
}

// Presence leases are renewed through connections of their own: with
// every connection of the request pool held (as by thousands of event
// streams opening at once, each waiting for one), a renewal of a room
// stream's lease and of its place among its user's streams still reaches
// Redis before its deadline. Through the request pool it waited for a
// connection past the deadline, and the hub ended the stream as lapsed
// although Redis answered (docs/BENCHMARKS.md: the h2c reconnects).
func TestRenewStreamsHasConnectionsOfItsOwn(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openStoreWith(t, b, func(c *store.Config) { c.Quotas.StreamsPerUser = 4 })
		ctx := context.Background()
		j, err := s.Create(ctx, alice, newRoom())
		if err != nil {
			t.Fatal(err)
		}
		l := lease(j.Room.ID, alice, "x")
		l.PlayerID = open(t, s, l, sse.Cursor{}).PlayerID
		holdRequestPool(t, s)
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if lost, err := s.RenewStreams(rctx, []sse.Lease{l}); err != nil || len(lost) > 0 {
			t.Fatalf("renewal with the request pool taken: lost %v, err %v; want the lease renewed", lost, err)
		}
	})
}

package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// A member opening and closing a stream 300 times, with the janitor running
// meanwhile, makes one player_connected and nothing else while it flaps;
// once it stops for longer than the debounce window, the janitor reports
// the disconnect exactly once, and the grace removal follows as before.
func TestPresenceFlapsAreDebounced(t *testing.T) {
	const debounce = 400 * time.Millisecond
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s := openStoreWith(t, b, func(c *store.Config) {
			c.Shards = 4
			c.PresenceDebounce = debounce
			c.DisconnectGrace = time.Hour
		})
		reps := store.Report{}
		sweep := func() {
			t.Helper()
			for shard := range 4 {
				rep, err := s.Sweep(ctx, shard, "test", time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				for k, n := range rep {
					reps[k] += n
				}
			}
		}
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		if _, err := s.Join(ctx, bob, id); err != nil {
			t.Fatal(err)
		}
		l := lease(id, bob, "flap")
		for i := range 300 {
			l.PlayerID = open(t, s, l, sse.Cursor{}).PlayerID
			if err := s.CloseStream(ctx, l); err != nil {
				t.Fatal(err)
			}
			if i%20 == 0 {
				sweep()
			}
		}
		presence := func() []string {
			var out []string
			for _, e := range events(t, s, id) {
				if e.Type == "player_connected" || e.Type == "player_disconnected" {
					out = append(out, e.Type)
				}
			}
			return out
		}
		if got := presence(); !equal(got, []string{"player_connected"}) {
			t.Fatalf("presence events while flapping: %d %v, want one player_connected", len(got), got)
		}
		checkInvariants(t, s) // the debounce entry pending
		if r, _, _ := s.Get(ctx, id, false); !r.Players[1].Connected {
			t.Error("player shown disconnected within the debounce window")
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && len(presence()) < 2 {
			sweep()
			time.Sleep(50 * time.Millisecond)
		}
		if got := presence(); !equal(got, []string{"player_connected", "player_disconnected"}) {
			t.Fatalf("presence events after the window: %v", got)
		}
		r, _, _ := s.Get(ctx, id, false)
		if r.Players[1].Connected {
			t.Error("player still shown connected after the window")
		}
		sweep()
		if got := presence(); len(got) != 2 {
			t.Fatalf("a later sweep announced again: %v", got)
		}
		// the janitor's counts tell a debounced close from a lapsed lease
		if reps["presence_debounced"] != 1 || reps["presence_disconnect"] != 0 {
			t.Fatalf("janitor's report %v, want one presence_debounced and no presence_disconnect", reps)
		}
		checkInvariants(t, s)
	})
}

// Without a debounce (the store's zero value) the last stream's end is
// announced at once, as before; a reconnect within what would have been the
// window is a new player_connected.
func TestPresenceWithoutDebounceAnnouncesAtOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		id := mustCreate(t, s, alice, newRoom(func(r *rooms.NewRoom) {})).Room.ID
		l := lease(id, alice, "one")
		for range 2 {
			l.PlayerID = open(t, s, l, sse.Cursor{}).PlayerID
			if err := s.CloseStream(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"player_joined", "player_connected", "player_disconnected", "player_connected", "player_disconnected"}
		if got := types(events(t, s, id)); !equal(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
	})
}

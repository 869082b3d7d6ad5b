package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// Many streams of the same players open and close at once through two
// instances, while some players leave: each player's presence events
// alternate connected/disconnected (several streams count once), nobody
// ends connected, and the data stays consistent.
func TestConcurrentStreamsCountEachPlayerOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s1, s2 := twoInstances(t, b)
		ctx := context.Background()
		id := mustCreate(t, s1, user(0), newRoom(func(r *rooms.NewRoom) { r.MaxPlayers = 10 })).Room.ID
		const players, streams, rounds = 6, 3, 15
		for i := 1; i < players; i++ {
			if _, err := s1.Join(ctx, user(i), id); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for p := range players {
			for k := range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := []*store.Store{s1, s2}[(p+k)%2]
					l := sse.Lease{Room: id, UserID: user(p).ID, Stream: fmt.Sprintf("s%d-%d", p, k)}
					for range rounds {
						o, err := s.OpenStream(ctx, l, sse.ReadNone, sse.Cursor{}, 0)
						if err != nil {
							t.Error(err)
							return
						}
						l.PlayerID = o.PlayerID
						if err := s.CloseStream(ctx, l); err != nil {
							t.Error(err)
						}
					}
				}()
			}
		}
		wg.Wait()
		perPlayer := map[int][]string{}
		for _, e := range events(t, s1, id) {
			if e.Type == "player_connected" || e.Type == "player_disconnected" {
				perPlayer[e.PlayerID] = append(perPlayer[e.PlayerID], e.Type)
			}
		}
		if len(perPlayer) != players {
			t.Fatalf("presence events for %d players, want %d", len(perPlayer), players)
		}
		for pid, es := range perPlayer {
			for i, e := range es {
				if want := []string{"player_connected", "player_disconnected"}[i%2]; e != want {
					t.Fatalf("player %d: event %d is %s, want %s (%v)", pid, i, e, want, es)
				}
			}
			if len(es)%2 != 0 {
				t.Errorf("player %d ends connected: %v", pid, es)
			}
		}
		r, _, _ := s1.Get(ctx, id, false)
		for _, p := range r.Players {
			if p.Connected {
				t.Errorf("player %d shown connected", p.PlayerID)
			}
		}
		checkInvariants(t, s1)
	})
}

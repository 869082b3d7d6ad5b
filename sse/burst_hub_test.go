package sse_test

import (
	"context"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// AfterBurst is called once a burst of openings is over, counting every
// kind of stream: a burst of 3 is a room, a lobby and a personal stream's
// openings, or none (small bursts end with nothing).
func TestAfterBurstCountsEveryKindOfStream(t *testing.T) {
	calls := make(chan int64, 4)
	e := newEnv(t, redistest.Backend{Name: "embedded"}, func(c *sse.Config) {
		c.Users = c.Source.(*store.Store).Sessions()
		c.BurstOpenings = 3
		c.AfterBurst = func(n int64) { calls <- n }
	})
	id := e.room(t, bob)
	// the three at once: a second without an opening ends a burst
	room, lobby, me := newClient(), newClient(), newClient()
	stopRoom, _ := e.serve(t, bob, id, sse.Cursor{}, room)
	defer stopRoom()
	stopLobby, _ := e.serveLobby(t, alice, lobby)
	defer stopLobby()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.hub.ServeMe(ctx, me, bob, "web", sse.Cursor{}) }()
	defer func() { cancel(); <-done }()
	for _, c := range []*client{room, lobby, me} {
		wait.Until(t, "the streams opened", func() bool { return len(c.all()) > 0 })
	}
	select {
	case n := <-calls:
		if n != 3 {
			t.Fatalf("AfterBurst(%d), want 3", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("AfterBurst not called 10 s after the third opening")
	}
}

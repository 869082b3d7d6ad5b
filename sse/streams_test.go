package sse_test

import (
	"context"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/sse"
)

// Streams counts the open room and lobby streams (the instance registry
// reports it).
func TestStreamsCountsRoomAndLobbyStreams(t *testing.T) {
	e := newEnv(t, redistest.Backend{Name: "embedded"})
	id := e.room(t, bob)
	room := newClient()
	stopRoom, _ := e.serve(t, bob, id, sse.Cursor{}, room)
	waitStreams(t, e.hub, 1, func() bool { return len(room.all()) > 0 })
	lobby := newClient()
	ctx, stopLobby := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.hub.ServeLobby(ctx, lobby, alice, "", ""); close(done) }()
	waitStreams(t, e.hub, 2, func() bool { return len(lobby.all()) > 0 })
	stopLobby()
	<-done
	stopRoom()
	if n := e.hub.Streams(); n != 0 {
		t.Fatalf("%d streams after both ended", n)
	}
}

// waitStreams waits until started() (the stream sent its first frame),
// then checks the count.
func waitStreams(t *testing.T, h *sse.Hub, want int, started func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !started(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stream never started")
		}
	}
	if n := h.Streams(); n != want {
		t.Fatalf("%d streams, want %d", n, want)
	}
}

// AfterBurst is called once a burst of openings (of every kind) is over,
// with how many it counted, and not again without a new burst.
func TestAfterBurstCalledOnceABurstIsOver(t *testing.T) {
	calls := make(chan int64, 4)
	e := newEnv(t, redistest.Backend{Name: "embedded"}, func(c *sse.Config) {
		c.BurstOpenings = 3
		c.AfterBurst = func(n int64) { calls <- n }
	})
	id := e.room(t, bob)
	for i := range 2 {
		room := newClient()
		stop, _ := e.serve(t, bob, id, sse.Cursor{}, room)
		waitStreams(t, e.hub, 1, func() bool { return len(room.all()) > 0 })
		stop()
		select {
		case n := <-calls:
			t.Fatalf("AfterBurst(%d) after %d openings of 3", n, i+1)
		default:
		}
	}
	lobby := newClient()
	stop, _ := e.serveLobby(t, alice, lobby)
	defer stop()
	waitStreams(t, e.hub, 1, func() bool { return len(lobby.all()) > 0 })
	select {
	case n := <-calls:
		if n != 3 {
			t.Fatalf("AfterBurst(%d), want 3", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("AfterBurst not called 10 s after the third opening")
	}
	select {
	case n := <-calls:
		t.Fatalf("AfterBurst(%d) again without a new burst", n)
	case <-time.After(3 * time.Second):
	}
}

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

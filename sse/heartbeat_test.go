package sse_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/sse"
)

// A stream served by its own goroutine (here a lobby stream) holds no
// timer: the hub's sweep asks for its heartbeats, so a silent stream gets
// a ping every heartbeat or so, and one that ends (the client gone) is
// forgotten by the sweep.
func TestLoopedStreamHeartbeatsFromTheSweep(t *testing.T) {
	b := redistest.Backends(t)[0]
	e := newEnv(t, b, func(c *sse.Config) { c.Heartbeat = 200 * time.Millisecond })
	cl := newClient()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.hub.ServeLobby(ctx, cl, alice, "", "") }()
	waitLobby(t, cl, 1)
	deadline := time.Now().Add(10 * time.Second)
	for {
		cl.mu.Lock()
		pings := bytes.Count(cl.raw, []byte(": ping\n\n"))
		cl.mu.Unlock()
		if pings >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pings in 10 s of a silent stream with a 200 ms heartbeat", pings)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := sse.LoopedStreams(e.hub); n != 0 {
		t.Fatalf("%d streams left in the sweep after the stream ended", n)
	}
}

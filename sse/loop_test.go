package sse

import (
	"context"
	"errors"
	"testing"
	"time"
)

// failingSender accepts its first Send (the opening) and fails the others.
type failingSender struct{ sends int }

func (f *failingSender) Send([]byte) error {
	f.sends++
	if f.sends > 1 {
		return errors.New("gone")
	}
	return nil
}

// A stream whose item handler flushes itself (a personal stream's logged
// events) ends when that flush fails, at once: not at the next item or
// heartbeat, meanwhile holding its lease.
func TestLoopEndsWhenTheHandlersFlushFails(t *testing.T) {
	h := &Hub{done: make(chan struct{}), looped: map[*held]struct{}{}}
	hd := newHeld(Lease{})
	out := lent(&failingSender{}, noMetrics{}, KindMe)
	out.write(retryFrame(0))
	items := make(chan int, 1)
	items <- 1
	ended := make(chan string, 1)
	go func() {
		ended <- loop(context.Background(), h, &hd, out, items, func(int) string {
			out.writeEvent([]byte("data: {}\n\n"))
			out.flush() // its error is the loop's to see
			return ""
		})
	}()
	select {
	case why := <-ended:
		if why != EndWriteError {
			t.Fatalf("ended %q, want %q", why, EndWriteError)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream goes on after its write failed")
	}
	if len(h.looped) != 0 {
		t.Fatal("the ended stream is still among the sweep's")
	}
}

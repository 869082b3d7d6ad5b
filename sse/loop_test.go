package sse

import (
	"context"
	"errors"
	"testing"
	"time"
)

// loop runs a looper to its end on the calling goroutine, as a Client
// that is no Carrier has it run, and returns why the stream ended.
func loop[T any](ctx context.Context, h *Hub, hd *held, out *writer, items <-chan T, handle func(T) string) string {
	l := newLooper(ctx, h, hd, out, items, handle)
	run(l)
	return l.why
}

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

// A carried stream's Step that panics (an item's handler) still ends the
// stream: it leaves the sweep's streams and its done runs, once, as the
// carrier that recovers the panic (api.carryStreams) relies on.
func TestLooperStepThatPanicsReleasesTheStream(t *testing.T) {
	h := &Hub{done: make(chan struct{}), looped: map[*held]struct{}{}}
	hd := newHeld(Lease{})
	out := lent(&failingSender{sends: -10}, noMetrics{}, KindLobby)
	items := make(chan int, 1)
	l := newLooper(context.Background(), h, &hd, out, items, func(int) string { panic("in a handler") })
	var ended []string
	l.done = func(why string) { ended = append(ended, why) }
	l.Wait()
	if !l.Step() || len(h.looped) != 1 {
		t.Fatalf("the stream did not begin: %d among the sweep's", len(h.looped))
	}
	items <- 1
	l.Wait()
	func() {
		defer func() {
			if v := recover(); v != "in a handler" {
				t.Fatalf("recovered %v", v)
			}
		}()
		l.Step()
	}()
	if len(h.looped) != 0 || len(ended) != 1 || ended[0] != EndClientGone {
		t.Fatalf("after the panic: %d among the sweep's, ended %q", len(h.looped), ended)
	}
	l.end(EndShutdown)
	if len(ended) != 1 {
		t.Fatalf("done ran again: %q", ended)
	}
}

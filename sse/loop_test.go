package sse

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// loop runs a looper to its end on the calling goroutine, as a Client
// that is no Carrier has it run, and returns why the stream ended.
func loop(ctx context.Context, h *Hub, hd *held, out *writer, handle func(context.Context) string) string {
	l := newLooper(ctx, h, hd, out, handle)
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
	hd := newHeld(nil, Lease{})
	out := lent(&failingSender{}, noMetrics{}, KindMe)
	out.write(retryFrame(0))
	hd.signal() // something queued
	ended := make(chan string, 1)
	go func() {
		ended <- loop(context.Background(), h, &hd, out, func(context.Context) string {
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
	hd := newHeld(nil, Lease{})
	out := lent(&failingSender{sends: -10}, noMetrics{}, KindLobby)
	l := newLooper(context.Background(), h, &hd, out, func(context.Context) string { panic("in a handler") })
	var ended []string
	l.done = func(why string) { ended = append(ended, why) }
	l.Wait()
	if !l.Step() || len(h.looped) != 1 {
		t.Fatalf("the stream did not begin: %d among the sweep's", len(h.looped))
	}
	hd.signal() // something queued
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

// recordingSender keeps what it is sent.
type recordingSender struct {
	mu   sync.Mutex
	sent []byte
}

func (r *recordingSender) Send(b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, b...)
	return nil
}

func (r *recordingSender) all() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.sent)
}

// A looped stream waits on its one channel (held.wake), and every cause
// wakes it there: its request's end, the hub's shutdown (also one that
// came before the stream was among the sweep's, which Close's wake-up
// missed), its end by the hub, the sweep's heartbeat, a room stream's
// events (items nil: handle at each wake-up). The shutdown comes first
// when the request ended too by the time the stream looks (its retry
// frame is the last thing sent).
func TestLooperWakesOnItsChannel(t *testing.T) {
	shutdown := func(h *Hub) {
		close(h.done)
		h.mu.Lock()
		for hd := range h.looped {
			hd.signal() // as CloseContext does
		}
		h.mu.Unlock()
	}
	tests := []struct {
		name   string
		before bool // the cause comes before the stream begins
		cause  func(h *Hub, hd *held, cancel context.CancelFunc)
		why    string
		last   string // what the stream sent last, after its opening
	}{
		{"RequestEnded", false, func(_ *Hub, _ *held, cancel context.CancelFunc) { cancel() }, EndClientGone, "opening\n\n"},
		{"Shutdown", false, func(h *Hub, _ *held, _ context.CancelFunc) { shutdown(h) }, EndShutdown, "retry: "},
		{"ShutdownBeforeItBegan", true, func(h *Hub, _ *held, _ context.CancelFunc) { close(h.done) }, EndShutdown, "retry: "},
		// both in effect before the stream wakes: the hub's done closed
		// (no wake-up of its own), then the request's end wakes it (a
		// shutdown's own wake-up first, or a request's end before it,
		// could be looked at alone: CI saw the second end client_gone)
		{"ShutdownAndRequestEnded", false, func(h *Hub, _ *held, cancel context.CancelFunc) { close(h.done); cancel() }, EndShutdown, "retry: "},
		{"EndedByTheHub", false, func(_ *Hub, hd *held, _ context.CancelFunc) { hd.end(EndSlow) }, EndSlow, "opening\n\n"},
		{"Heartbeat", false, func(_ *Hub, hd *held, _ context.CancelFunc) {
			hd.beat.Store(true)
			hd.signal()
		}, EndSlow, ": ping\n\nevent\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &Hub{done: make(chan struct{}), looped: map[*held]struct{}{}}
			hd := newHeld(nil, Lease{})
			rec := &recordingSender{}
			out := lent(rec, noMetrics{}, KindRoom)
			out.write([]byte("opening\n\n"))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.before {
				tc.cause(h, &hd, cancel)
			}
			handled := make(chan struct{}, 8)
			ended := make(chan string, 1)
			go func() {
				ended <- loop(ctx, h, &hd, out, func(context.Context) string {
					if tc.name == "Heartbeat" && bytes.HasSuffix(out.buf, pingFrame) { // the ping, then its events
						out.write([]byte("event\n\n"))
						return EndSlow
					}
					select {
					case handled <- struct{}{}:
					default:
					}
					return ""
				})
			}()
			if !tc.before {
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
					h.mu.Lock()
					begun := len(h.looped) == 1
					h.mu.Unlock()
					if begun {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the stream did not begin")
					}
				}
				tc.cause(h, &hd, cancel)
			}
			select {
			case why := <-ended:
				sent := rec.all()
				if i := bytes.LastIndex(sent, []byte(tc.last)); why != tc.why || i < 0 || !bytes.HasPrefix(sent, []byte("opening\n\n")) ||
					(tc.last != "retry: " && i+len(tc.last) != len(sent)) {
					t.Fatalf("ended %q having sent %q, want %q ending with %q", why, sent, tc.why, tc.last)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the stream did not end (%d wake-ups handled)", len(handled))
			}
			if len(h.looped) != 0 {
				t.Fatal("the ended stream is still among the sweep's")
			}
		})
	}
}

// A looped stream whose context ended ends client_gone when the hub
// ended it before the context's AfterFunc told it (held.gone not set
// yet), as it did when it asked the context at each wake-up; a write
// that failed ends it write_error whether its context ended or not (x/net
// cancels the context of a stream it reset: the stall watch's cut).
func TestLooperContextEndedBeforeItWasTold(t *testing.T) {
	tests := []struct {
		name      string
		sendFails bool
		cause     func(hd *held)
		ended     string // why, the context ended; else the cause's why
		live      string
	}{
		{"EndedByTheHub", false, func(hd *held) { hd.end(EndSlow) }, EndClientGone, EndSlow},
		{"WriteFailed", true, func(hd *held) { hd.signal() }, EndWriteError, EndWriteError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, ended := range []bool{true, false} {
				h := &Hub{done: make(chan struct{}), looped: map[*held]struct{}{}}
				hd := newHeld(nil, Lease{})
				var s sender = &recordingSender{}
				if tc.sendFails {
					s = &failingSender{sends: 1} // its next Send fails
				}
				out := lent(s, noMetrics{}, KindRoom)
				ctx, cancel := context.WithCancel(context.Background())
				l := newLooper(ctx, h, &hd, out, func(context.Context) string {
					out.writeEvent([]byte("event\n\n"))
					return ""
				})
				l.started, l.woke = true, wokeWake // begun, with no AfterFunc to set gone
				if ended {
					cancel()
				}
				tc.cause(&hd)
				want := tc.live
				if ended {
					want = tc.ended
				}
				if got := l.step(); got != want {
					t.Errorf("context ended %v: ended %q, want %q", ended, got, want)
				}
				cancel()
			}
		})
	}
}

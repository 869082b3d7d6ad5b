package sse

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/wait"
)

// detachable is a Client whose connection the hub may take over: its
// Line records what is sent and ended, and says the client is gone once
// gone is set.
type detachable struct {
	recordingSender // what went through the request (the opening)
	line            *recordingLine
}

func (d *detachable) Start()           {}
func (d *detachable) Detachable() bool { return true }
func (d *detachable) Detach() Line     { return d.line }

type recordingLine struct {
	recordingSender
	mu     sync.Mutex
	gone   bool
	ended  int
	hangup func() // what OnHangup registered
}

func (l *recordingLine) OnHangup(f func()) { l.mu.Lock(); defer l.mu.Unlock(); l.hangup = f }

func (l *recordingLine) Alive() bool { l.mu.Lock(); defer l.mu.Unlock(); return !l.gone }
func (l *recordingLine) End(final []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended++
}

func (l *recordingLine) endedTimes() int { l.mu.Lock(); defer l.mu.Unlock(); return l.ended }

// requestTag is a request's value in TestDetachLooper's contexts, which
// requestTagged adds to the lines logged with them (as api.LogHandler
// adds a request's id).
type requestTag struct{}

type requestTagged struct{ slog.Handler }

func (h requestTagged) Handle(ctx context.Context, r slog.Record) error {
	if v, ok := ctx.Value(requestTag{}).(string); ok {
		r.AddAttrs(slog.String("tag", v))
	}
	return h.Handler.Handle(ctx, r)
}

// A looped stream whose client gives up its connection runs on a
// goroutine of its own once its opening went through the request: what
// it writes goes to the Line, on a context that outlives the request's;
// the sweep ends it once its client is gone; it is released before its
// body ends, once; a Step that panics releases it too, and is logged
// with its request's context. A
// stream whose end is a channel (an API key's revocation, watched through
// its request's context) stays with its request.
func TestDetachLooper(t *testing.T) {
	for _, tc := range []struct {
		name     string
		end      func(ctx context.Context) context.Context
		panics   bool
		taken    bool
		shutdown bool // the hub's Close began first
		told     bool // the line tells the hang-up (HangupNotifier), no sweep runs
	}{
		{"client gone", func(ctx context.Context) context.Context { return ctx }, false, true, false, false},
		{"client gone, told", func(ctx context.Context) context.Context { return ctx }, false, true, false, true},
		{"a step panics", func(ctx context.Context) context.Context { return ctx }, true, true, false, false},
		{"an end by a channel", func(ctx context.Context) context.Context {
			return WithTokenExpiry(ctx, make(chan time.Time))
		}, false, false, false, false},
		// left to its request, which the HTTP server's shutdown waits for:
		// the hub's may have stopped waiting for detached streams
		{"a shutdown begun", func(ctx context.Context) context.Context { return ctx }, false, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := &Hub{done: make(chan struct{}), looped: map[*held]struct{}{},
				cfg: Config{Log: slog.New(requestTagged{slog.NewTextHandler(&logs, nil)}), Heartbeat: time.Hour}}
			hd := newHeld(nil, Lease{UserID: "u"})
			c := &detachable{line: &recordingLine{}}
			out := lent(c, noMetrics{}, KindMe)
			out.write([]byte("opening\n\n"))
			req, endRequest := context.WithCancel(context.WithValue(context.Background(), requestTag{}, "r-1"))
			defer endRequest()
			var handled []context.Context
			l := newLooper(tc.end(req), h, &hd, out, func(ctx context.Context) string {
				handled = append(handled, ctx)
				if tc.panics {
					panic("in a handler")
				}
				out.write([]byte("item\n\n"))
				return ""
			})
			released := make(chan string, 2)
			l.done = func(why string) {
				if c.line.endedTimes() != 0 {
					t.Error("the body ended before the stream was released")
				}
				released <- why
			}
			if tc.shutdown {
				close(h.done)
			}
			if got := h.detachLooper(c, l); got != tc.taken {
				t.Fatalf("taken over: %v, want %v", got, tc.taken)
			}
			if !tc.taken {
				if n := h.detached.Load(); n != 0 || c.line.endedTimes() != 0 {
					t.Fatalf("not taken over, yet %d detached streams counted, its line ended %d times", n, c.line.endedTimes())
				}
				return
			}
			if !bytes.Equal(c.all(), []byte("opening\n\n")) {
				t.Fatalf("through the request: %q, want the opening alone", c.all())
			}
			endRequest() // the handler returned
			hd.signal()  // something queued
			wait.Until(t, "the item handled", func() bool { return len(c.line.all()) > 0 || tc.panics && len(released) > 0 })
			if tc.panics {
				if why := receive(t, released); why != EndClientGone {
					t.Fatalf("released for %q", why)
				}
				// logged by the stream's goroutine once it recovered
				wait.Until(t, "the stream's goroutine's end", func() bool { return h.detached.Load() == 0 })
				// with the request's context (what api.LogHandler reads its id from)
				if !bytes.Contains(logs.Bytes(), []byte("panicked")) || !bytes.Contains(logs.Bytes(), []byte("tag=r-1")) {
					t.Fatalf("logged %q", logs.String())
				}
			} else {
				if handled[0].Err() != nil || !bytes.Equal(c.line.all(), []byte("item\n\n")) {
					t.Fatalf("handled on a context ended with the request (%v), wrote %q to the line", handled[0].Err(), c.line.all())
				}
				c.line.mu.Lock()
				hangup := c.line.hangup
				c.line.gone = !tc.told
				c.line.mu.Unlock()
				switch {
				case !tc.told:
					h.sweep(context.Background())
				case hangup == nil:
					t.Fatal("the stream asked its line to tell its hang-up of nobody")
				default:
					hangup()
				}
				if why := receive(t, released); why != EndClientGone {
					t.Fatalf("released for %q", why)
				}
			}
			wait.Until(t, "the body ended", func() bool { return c.line.endedTimes() == 1 && h.detached.Load() == 0 })
			if len(handled) > 0 && handled[0].Err() == nil {
				t.Error("the stream's context outlived the stream")
			}
			if len(released) != 0 || c.line.endedTimes() != 1 {
				t.Fatal("released or ended twice")
			}
		})
	}
}

// receive receives from c within 10 s.
func receive[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing received within 10 s")
		panic("unreachable")
	}
}

package sse_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/testlog"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/sse"
)

// faultyLine is a taken-over connection whose writes panic once armed (a
// fault in the stream's writing, as a bug would make it).
type faultyLine struct {
	*lineClient
	armed atomic.Bool
}

func (l *faultyLine) Detach() sse.Line { return l }

func (l *faultyLine) Send(b []byte) error {
	if l.armed.Load() {
		panic("a fault in a write")
	}
	return l.lineClient.Send(b)
}

// faultyTryLine is a faultyLine whose room worker writes it itself
// (sse.TrySender), and panics there.
type faultyTryLine struct{ *faultyLine }

func (l *faultyTryLine) Detach() sse.Line { return l }

func (l *faultyTryLine) TrySend(b []byte) (bool, error) {
	if l.armed.Load() {
		panic("a fault in a write")
	}
	return true, l.lineClient.Send(b)
}

// A taken-over room stream whose writing panics, on its drain's goroutine
// or on the room's worker, ends alone: logged, its lease given back, its
// body ended; the room's other stream gets the later events, and the hub
// (the process) goes on.
func TestTakenOverStreamsFaultEndsItAlone(t *testing.T) {
	ctx := context.Background()
	b := redistest.Backends(t)[0]
	for _, tc := range []struct {
		name string
		line func(*lineClient) (sse.Client, *atomic.Bool)
	}{
		{"its drain", func(c *lineClient) (sse.Client, *atomic.Bool) {
			l := &faultyLine{lineClient: c}
			return l, &l.armed
		}},
		{"the room's worker", func(c *lineClient) (sse.Client, *atomic.Bool) {
			l := &faultyTryLine{&faultyLine{lineClient: c}}
			return l, &l.armed
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testlog.Buffer
			e, _ := newCapEnv(t, b, 2, &logs)
			id := e.room(t, bob)
			faulty := &lineClient{client: newClient(), ended: make(chan struct{}), atEnd: func() {}}
			cl, armed := tc.line(faulty)
			go e.hub.Serve(ctx, cl, alice, id, sse.Cursor{})
			faulty.waitFor(t, 3)
			other := newClient()
			e.serve(t, bob, id, sse.Cursor{}, other)
			other.waitFor(t, version(t, e, id))
			armed.Store(true)
			e.patch(t, alice, id, 1)
			faulty.awaitEnd(t, "the faulty stream's body did not end")
			e.patch(t, bob, id, 2)
			other.waitFor(t, version(t, e, id))
			if !strings.Contains(logs.String(), "a taken-over stream panicked") {
				t.Errorf("the fault was not logged:\n%s", logs.String())
			}
			wait.Until(t, "alice's lease given back", func() bool {
				r, _, err := e.st.Get(ctx, id, false)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range r.Players {
					if p.UserID == alice.ID {
						return !p.Connected
					}
				}
				return false
			})
		})
	}
}

package sse_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/testlog"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/sse"
)

// lostThenEnded is a Source whose renewal, once armed, finds the leases
// gone (lapsed and swept), and whose record of user's lost lease again
// first lets its stream end (end): a stream that ends between the
// renewal's look at it and the record.
type lostThenEnded struct {
	sse.Source
	user     string
	lose     atomic.Bool
	renewals atomic.Int64 // renewals begun
	mu       sync.Mutex
	end      func()
	ended    chan struct{}
}

func (s *lostThenEnded) RenewStreams(ctx context.Context, ls []sse.Lease) ([]sse.Lease, error) {
	s.renewals.Add(1)
	if !s.lose.CompareAndSwap(true, false) {
		return s.Source.RenewStreams(ctx, ls)
	}
	for _, l := range ls {
		if l.Room == "" {
			s.Source.CloseLobby(ctx, l)
		} else {
			s.Source.CloseStream(ctx, l)
		}
	}
	return ls, nil
}

// endFirst ends the stream, once, before the record of lease l of its user.
func (s *lostThenEnded) endFirst(l sse.Lease) {
	if l.UserID != s.user {
		return
	}
	s.mu.Lock()
	end := s.end
	s.end = nil
	s.mu.Unlock()
	if end != nil {
		end()
		close(s.ended)
	}
}

func (s *lostThenEnded) OpenStream(ctx context.Context, l sse.Lease, read sse.Read, c sse.Cursor, limit int) (sse.Opening, error) {
	if read == sse.ReadNone {
		s.endFirst(l)
	}
	return s.Source.OpenStream(ctx, l, read, c, limit)
}

func (s *lostThenEnded) OpenLobby(ctx context.Context, l sse.Lease) error {
	s.endFirst(l)
	return s.Source.OpenLobby(ctx, l)
}

// A lost lease the renewal records again while its stream ends is dropped
// once recorded: no lease outlives its stream (its player shown connected,
// its user's place taken, until it lapsed).
func TestLostLeaseNotKeptForAStreamThatEnded(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"room", "lobby"} {
		t.Run(kind, func(t *testing.T) {
			redistest.Each(t, func(t *testing.T, b redistest.Backend) {
				src := &lostThenEnded{user: bob.ID, ended: make(chan struct{})}
				var logs testlog.Buffer
				e, _ := newCapEnv(t, b, 4, &logs, func(c *sse.Config) { src.Source, c.Source = c.Source, src })
				places := func() int64 {
					return e.st.Client().ZCard(ctx, e.st.Sessions().StreamsKey(bob.ID)).Val()
				}
				id := e.room(t, bob)
				connected := func() bool {
					r, _, err := e.st.Get(ctx, id, false)
					if err != nil {
						t.Fatal(err)
					}
					return r.Players[1].Connected
				}
				// alice's stream keeps the renewals going once bob's ended
				other := newClient()
				e.serve(t, alice, id, sse.Cursor{}, other)
				other.waitFor(t, 3)
				cl := newClient()
				var stop func()
				if kind == "room" {
					stop, _ = e.serve(t, bob, id, sse.Cursor{}, cl)
					cl.waitFor(t, 4)
				} else {
					stop, _ = e.serveLobby(t, bob, cl)
					wait.Until(t, "the lobby stream opened", func() bool { return places() == 1 })
				}
				src.mu.Lock()
				src.end = stop
				src.mu.Unlock()
				src.lose.Store(true)
				select {
				case <-src.ended:
				case <-time.After(10 * time.Second):
					t.Fatal("the lost lease was not recorded again")
				}
				// the renewal after the record's (a third of the TTL later:
				// the lease recorded again has not lapsed yet)
				n := src.renewals.Load()
				wait.Until(t, "the next renewal", func() bool { return src.renewals.Load() > n })
				if places() != 0 || connected() {
					t.Errorf("a lease recorded again outlives its stream: %d places taken, connected %v", places(), connected())
				}
			})
		})
	}
}

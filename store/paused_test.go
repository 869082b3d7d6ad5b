package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// Against a Redis that accepts connections and answers nothing (a
// process paused with SIGSTOP: a standalone server, or the master of the
// room's slot on a Cluster), every store call fails with
// rooms.ErrUnavailable within its own bound (3 s standalone, 6 s on a
// Cluster: redisx.Bound), reads, a listing's and the stats' pipelines
// and a script run alike, and a call whose context has a deadline (a
// request's, here 1 s) ends by it. Before, each new connection's HELLO
// waited a reply timeout of its own and each try its own: a listing or
// the stats took 8 s standalone and 12 s on a Cluster, and a call with
// a 1 s deadline as long (4 s for a script run). A message cut so after
// it was sent is a lost reply: sent again with its Idempotency-Key once
// Redis is back, it is sent once. The bounds are generous (the call's
// bound and 3 s more; three times the deadline), not measurements.
func TestCallsEndAgainstAPausedRedis(t *testing.T) {
	// not parallel: it bounds the calls' time, which other tests on the
	// same cores would stretch
	type backend struct {
		b     redistest.Backend
		bound time.Duration // a call's own (redisx.Bound)
		// paused is the server that serves room id, to pause
		paused func(s *store.Store, id string) *redistest.Server
	}
	srv := ownServer(t)
	backends := []backend{{redistest.Backend{Name: "standalone", URL: "redis://" + srv.Addr}, 3 * time.Second,
		func(*store.Store, string) *redistest.Server { return srv }}}
	if !testing.Short() {
		c := ownCluster(t)
		backends = append(backends, backend{redistest.Backend{Name: "cluster", ClusterAddrs: c.Addrs()}, 6 * time.Second,
			func(s *store.Store, id string) *redistest.Server {
				m, _, err := c.MasterOf(context.Background(), s.RoomKey(id))
				if err != nil {
					t.Fatal(err)
				}
				return m
			}})
	}
	for _, be := range backends {
		t.Run(be.b.Name, func(t *testing.T) {
			s := openStore(t, be.b)
			ctx := context.Background()
			j, err := s.Create(ctx, alice, newRoom())
			if err != nil {
				t.Fatal(err)
			}
			id := j.Room.ID
			n := 0
			calls := []struct {
				name string
				call func(ctx context.Context) error
			}{
				{"room read", func(ctx context.Context) error { _, _, err := s.Get(ctx, id, true); return err }},
				{"listing", func(ctx context.Context) error {
					_, err := s.Listing().List(ctx, lobby.Query{Statuses: []rooms.Status{rooms.Waiting}, Limit: 10})
					return err
				}},
				{"stats", func(ctx context.Context) error { _, err := s.Listing().Stats(ctx); return err }},
				{"script run (join)", func(ctx context.Context) error {
					n++
					_, err := s.Join(ctx, rooms.User{ID: "u-j" + string(rune('a'+n)), Name: "j"}, id)
					return err
				}},
			}
			m := be.paused(s, id)
			m.Pause()
			t.Cleanup(m.Resume) // before the server's stop, even on a failure
			fails := func(what string, ctx context.Context, within time.Duration, call func(context.Context) error) {
				t.Helper()
				began := time.Now()
				err := call(ctx)
				took := time.Since(began)
				if !errors.Is(err, rooms.ErrUnavailable) {
					t.Errorf("%s, Redis paused: %v, want rooms.ErrUnavailable", what, err)
				}
				if took > within {
					t.Errorf("%s, Redis paused: %s, want within %s", what, took.Round(time.Millisecond), within)
				}
			}
			// first, on the connection the room's creation left in the pool:
			// a message cut by its deadline once sent
			msg := rooms.Message{Type: "cut", Data: []byte(`1`), Key: "k-cut"}
			cut, cancel := context.WithTimeout(ctx, time.Second)
			fails("a message with a 1 s deadline", cut, 3*time.Second, func(ctx context.Context) error {
				_, err := s.SendMessage(ctx, alice, id, msg)
				return err
			})
			cancel()
			for _, c := range calls {
				fails(c.name, ctx, be.bound+3*time.Second, c.call)
			}
			for _, c := range calls {
				ctx, cancel := context.WithTimeout(ctx, time.Second)
				fails(c.name+" with a 1 s deadline", ctx, 3*time.Second, c.call)
				cancel()
			}
			m.Resume()
			// Redis ran it when it went on: the cut was a lost reply
			wait.Until(t, "the message cut once sent is in the room", func() bool {
				_, ms, err := s.Messages(ctx, alice, id, 0)
				return err == nil && len(ms) == 1
			})
			var v int64
			wait.Until(t, "the message sent again once Redis goes on", func() bool {
				var sent rooms.Sent
				sent, err = s.SendMessage(ctx, alice, id, msg)
				v = sent.Version
				return err == nil
			})
			_, ms, err := s.Messages(ctx, alice, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			sent := 0
			for _, m := range ms {
				if m.Type == "cut" {
					sent++
					if m.Version != v {
						t.Errorf("message sent again: version %d, the room's message is %d", v, m.Version)
					}
				}
			}
			if sent != 1 {
				t.Errorf("message cut, then sent again with its key: %d in the room, want 1", sent)
			}
		})
	}
}

// A batched call (a script run, a room read) whose context has a deadline
// ends by it when Redis hangs, however long the replies may take
// (Config.ReadTimeout, here 10 s): its batch's pipeline is given the
// latest of its calls' deadlines. Before, the batch's pipeline had none,
// and a request's call waited for the reply timeout past its deadline.
// Standalone and the master of the room's slot on a Cluster; the bound
// is generous (three times the deadline), not a measurement.
func TestBatchedCallEndsByItsDeadline(t *testing.T) {
	srv, c := ownRedis(t)
	backends := []redistest.Backend{{Name: "standalone", URL: "redis://" + srv.Addr}}
	if c != nil {
		backends = append(backends, redistest.Backend{Name: "cluster", ClusterAddrs: c.Addrs()})
	}
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			s := openStoreWith(t, b, func(cfg *store.Config) {
				cfg.ReadTimeout = 10 * time.Second
				cfg.Batch = &store.Batching{}
			})
			ctx := context.Background()
			j, err := s.Create(ctx, alice, newRoom())
			if err != nil {
				t.Fatal(err)
			}
			id := j.Room.ID
			m := srv
			if b.ClusterAddrs != nil {
				if m, _, err = c.MasterOf(ctx, s.RoomKey(id)); err != nil {
					t.Fatal(err)
				}
			}
			m.Pause()
			t.Cleanup(m.Resume) // before the server's stop, even on a failure
			for _, call := range []struct {
				name string
				call func(ctx context.Context) error
			}{
				{"script run (join)", func(ctx context.Context) error { _, err := s.Join(ctx, bob, id); return err }},
				{"room read", func(ctx context.Context) error { _, _, err := s.Get(ctx, id, true); return err }},
			} {
				ctx, cancel := context.WithTimeout(ctx, time.Second)
				began := time.Now()
				err := call.call(ctx)
				took := time.Since(began)
				cancel()
				if !errors.Is(err, rooms.ErrUnavailable) {
					t.Errorf("%s with a 1 s deadline, Redis paused: %v, want rooms.ErrUnavailable", call.name, err)
				}
				if took > 3*time.Second {
					t.Errorf("%s with a 1 s deadline, Redis paused: %s, want within 3 s", call.name, took.Round(time.Millisecond))
				}
			}
		})
	}
}

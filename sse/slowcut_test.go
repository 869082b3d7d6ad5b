package sse_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/testlog"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// A stream cut as slow (its queue filled while its write was stuck) gives
// its lease back at the cut, not once its stuck write ends (over HTTP, at
// the write timeout, 10 s later): while the write is still stuck, its
// place among its user's streams is free, a room stream's player shows
// disconnected, a personal stream's session is closed (its user offline).
// Renewals do not record it again, and the stream then ends as before,
// once its write fails. Without the early release the hub renews the
// lease as long as the write is stuck.
func TestSlowStreamGivesItsLeaseBackAtTheCut(t *testing.T) {
	ctx := context.Background()
	// places is alice's count of open streams (room and lobby streams).
	places := func(t *testing.T, e *env) int64 {
		n, err := e.st.Client().ZCard(ctx, e.st.Sessions().StreamsKey(alice.ID)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	online := func(t *testing.T, e *env) bool {
		ss, err := e.st.Sessions().Statuses(ctx, []string{alice.ID})
		if err != nil {
			t.Fatal(err)
		}
		return ss[0].Online
	}
	type stream struct {
		done  chan error
		flood func()      // fills the stream's queue
		held  func() bool // whether the stream's lease is held, as its kind shows it
	}
	kinds := []struct {
		name string
		open func(t *testing.T, e *env, cl *client) stream
	}{
		{"room", func(t *testing.T, e *env, cl *client) stream {
			id := e.room(t)
			_, done := e.serve(t, alice, id, sse.Cursor{}, cl)
			return stream{done: done,
				flood: func() {
					for i := range 30 {
						e.patch(t, alice, id, i)
					}
				},
				held: func() bool {
					r, _, err := e.st.Get(ctx, id, false)
					if err != nil {
						t.Fatal(err)
					}
					return r.Players[0].Connected || places(t, e) != 0
				}}
		}},
		{"lobby", func(t *testing.T, e *env, cl *client) stream {
			_, done := e.serveLobby(t, alice, cl)
			return stream{done: done,
				flood: func() {
					for i := range 30 {
						u := rooms.User{ID: "u-creator-" + strconv.Itoa(i), Name: "c"}
						if _, err := e.st.Create(ctx, u, rooms.NewRoom{Name: "r", Mode: "m", Region: "r", MaxPlayers: 4,
							Visibility: rooms.Public, Attributes: map[string]any{}, State: rooms.State{},
							StatePolicy: rooms.PolicyOpen}); err != nil {
							t.Fatal(err)
						}
					}
				},
				held: func() bool { return places(t, e) != 0 }}
		}},
		{"personal", func(t *testing.T, e *env, cl *client) stream {
			sctx, cancel := context.WithCancel(ctx)
			t.Cleanup(cancel)
			done := make(chan error, 1)
			go func() { done <- e.hub.ServeMe(sctx, cl, alice, "web", sse.Cursor{}) }()
			return stream{done: done,
				flood: func() {
					for i := range 30 {
						dm := players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, alice.ID, time.Now()),
							From: players.Sender{Server: true}, Message: players.DirectMessageBody{Type: "n", Data: []byte(strconv.Itoa(i))}}
						if err := e.st.Sessions().Send(ctx, alice.ID, dm); err != nil {
							t.Fatal(err)
						}
					}
				},
				held: func() bool { return online(t, e) }}
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			redistest.Each(t, func(t *testing.T, b redistest.Backend) {
				var logs testlog.Buffer
				e, _ := newCapEnv(t, b, 1, &logs, func(c *sse.Config) {
					c.QueueSize, c.Users = 8, c.Source.(*store.Store).Sessions()
				})
				cl := newClient()
				cl.blocked = make(chan struct{}) // every write stuck, the opening's too
				s := k.open(t, e, cl)
				wait.Until(t, "the stream's lease held", s.held)
				// the lease is taken before the stream subscribes to its
				// events: a flood before that is not received (a loaded
				// Cluster's lobby subscription took until after the flood)
				wait.Until(t, "the stream started", cl.started.Load)
				s.flood()
				wait.Until(t, "the lease given back at the cut", func() bool { return !s.held() })
				// over two renewals of the hub's (every capTTL/3), which
				// must not record it again
				time.Sleep(capTTL)
				if s.held() {
					t.Error("the lease is held again while the write is still stuck")
				}
				select {
				case err := <-s.done:
					t.Fatalf("the stream ended (%v) before its stuck write did", err)
				default:
				}
				close(cl.blocked)
				awaitEnd(t, s.done, "the cut stream, once its write failed")
				if s.held() {
					t.Error("the lease is held again after the stream's end")
				}
			})
		})
	}
}

// openingSource runs flood right after a room stream's lease was recorded,
// before Serve goes on: within its opening.
type openingSource struct {
	sse.Source
	flood func()
}

func (s openingSource) OpenStream(ctx context.Context, l sse.Lease, read sse.Read, c sse.Cursor, limit int) (sse.Opening, error) {
	o, err := s.Source.OpenStream(ctx, l, read, c, limit)
	if err == nil {
		s.flood()
	}
	return o, err
}

// openingUsers runs flood right after a personal stream's session was
// opened, before ServeMe goes on.
type openingUsers struct {
	sse.UserSource
	flood func()
}

func (u openingUsers) OpenSession(ctx context.Context, s sse.Session, c sse.Cursor, limit int) (sse.UserOpening, error) {
	o, err := u.UserSource.OpenSession(ctx, s, c, limit)
	if err == nil {
		u.flood()
	}
	return o, err
}

// A stream cut as slow within its opening (its queue full before it was
// among the hub's renewed streams) gives its lease back once it is, while
// its write is stuck; renewals do not record it again, and once it ended
// the hub holds no stream. (The lobby's stream gets no item before it
// opened.)
func TestSlowCutWithinTheOpeningGivesTheLeaseBack(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"room", "personal"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			redistest.Each(t, func(t *testing.T, b redistest.Backend) {
				var logs testlog.Buffer
				rec := newRecorder()
				var e *env
				var id string
				dropped := func() bool { _, _, _, d := rec.snapshot(); return d[sse.KindRoom]+d[sse.KindMe] > 0 }
				e, _ = newCapEnv(t, b, 1, &logs, func(c *sse.Config) {
					st := c.Source.(*store.Store)
					c.QueueSize, c.Metrics = 8, rec
					c.Source = openingSource{Source: st, flood: func() {
						for i := range 30 {
							e.patch(t, alice, id, i)
						}
						wait.Until(t, "the stream's queue full within its opening", dropped)
					}}
					c.Users = openingUsers{UserSource: st.Sessions(), flood: func() {
						for i := range 30 {
							dm := players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, alice.ID, time.Now()),
								From: players.Sender{Server: true}, Message: players.DirectMessageBody{Type: "n", Data: []byte(strconv.Itoa(i))}}
							if err := st.Sessions().Send(ctx, alice.ID, dm); err != nil {
								t.Error(err)
							}
						}
						wait.Until(t, "the stream's queue full within its opening", dropped)
					}}
				})
				cl := newClient()
				cl.blocked = make(chan struct{})
				var done chan error
				var held func() bool
				if kind == "room" {
					id = e.room(t)
					_, done = e.serve(t, alice, id, sse.Cursor{}, cl)
					held = func() bool {
						r, _, err := e.st.Get(ctx, id, false)
						if err != nil {
							t.Fatal(err)
						}
						n, err := e.st.Client().ZCard(ctx, e.st.Sessions().StreamsKey(alice.ID)).Result()
						if err != nil {
							t.Fatal(err)
						}
						return r.Players[0].Connected || n != 0
					}
				} else {
					sctx, cancel := context.WithCancel(ctx)
					t.Cleanup(cancel)
					done = make(chan error, 1)
					go func() { done <- e.hub.ServeMe(sctx, cl, alice, "web", sse.Cursor{}) }()
					held = func() bool {
						ss, err := e.st.Sessions().Statuses(ctx, []string{alice.ID})
						if err != nil {
							t.Fatal(err)
						}
						return ss[0].Online
					}
				}
				wait.Until(t, "the stream cut within its opening", dropped)
				wait.Until(t, "the lease given back once the stream opened", func() bool { return !held() })
				time.Sleep(capTTL) // over two of the hub's renewals
				if held() {
					t.Error("the lease is held again while the write is still stuck")
				}
				close(cl.blocked)
				awaitEnd(t, done, "the cut stream, once its write failed")
				if held() || e.hub.Streams() != 0 {
					t.Errorf("after the stream's end: lease held %v, the hub holds %d streams", held(), e.hub.Streams())
				}
			})
		})
	}
}

package sse_test

import (
	"context"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// recorder is an sse.Metrics that remembers what it was told.
type recorder struct {
	mu        sync.Mutex
	opened    map[string]int // "<kind> <start>"
	ended     map[string]int // "<kind> <reason>"
	delivered map[string]int // by kind
	dropped   map[string]int // by kind
}

var _ sse.Metrics = (*recorder)(nil)

func newRecorder() *recorder {
	return &recorder{opened: map[string]int{}, ended: map[string]int{}, delivered: map[string]int{}, dropped: map[string]int{}}
}

func (r *recorder) StreamOpened(kind, start string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opened[kind+" "+start]++
}

func (r *recorder) StreamEnded(kind, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended[kind+" "+reason]++
}

func (r *recorder) Events(kind string, delivered, dropped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delivered[kind] += delivered
	r.dropped[kind] += dropped
}

// snapshot returns copies of the recorder's counts.
func (r *recorder) snapshot() (opened, ended, delivered, dropped map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.opened), maps.Clone(r.ended), maps.Clone(r.delivered), maps.Clone(r.dropped)
}

// Every stream is reported opened (fresh, replay or snapshot) and ended
// once, with why; every event a client received is counted delivered.
func TestStreamMetrics(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		rec := newRecorder()
		e := newEnv(t, b, func(c *sse.Config) { c.Metrics = rec })
		ctx := context.Background()
		id := e.room(t, bob)
		fresh := newClient()
		stopFresh, _ := e.serve(t, alice, id, sse.Cursor{}, fresh)
		fresh.waitFor(t, version(t, e, id))
		for i := range 3 {
			e.patch(t, alice, id, i)
		}
		v := version(t, e, id)
		fresh.waitFor(t, v)
		replay, other := newClient(), newClient()
		_, replayDone := e.serve(t, bob, id, cursorOf(t, fresh, v-2), replay)
		_, otherDone := e.serve(t, bob, id, sse.Cursor{Set: true, Version: v, Tag: "zzzzzz"}, other)
		replay.waitFor(t, v)
		other.waitFor(t, v)
		if f := other.all()[0]; f.Type != "snapshot" {
			t.Fatalf("a resume from another history starts with %s, want a snapshot", f.Type)
		}
		lobby := newClient()
		lobbyCtx, endLobby := context.WithCancel(ctx)
		defer endLobby()
		lobbyDone := make(chan error, 1)
		go func() { lobbyDone <- e.hub.ServeLobby(lobbyCtx, lobby, alice, "", "") }()
		waitLobby(t, lobby, 1)

		if err := e.st.Kick(ctx, alice, id, 2); err != nil {
			t.Fatal(err)
		}
		awaitEnd(t, replayDone, "kicked player's replayed stream")
		awaitEnd(t, otherDone, "kicked player's other stream")
		stopFresh()
		closing := newClient()
		_, closingDone := e.serve(t, alice, id, sse.Cursor{}, closing)
		closing.waitFor(t, version(t, e, id))
		if _, err := e.st.Delete(ctx, alice, id); err != nil {
			t.Fatal(err)
		}
		awaitEnd(t, closingDone, "closed room's stream")
		e.hub.Close()
		awaitEnd(t, lobbyDone, "lobby stream after Close")

		opened, ended, delivered, dropped := rec.snapshot()
		wantOpened := map[string]int{"room fresh": 2, "room replay": 1, "room snapshot": 1, "lobby fresh": 1}
		wantEnded := map[string]int{"room left": 2, "room client_gone": 1, "room room_closed": 1, "lobby shutdown": 1}
		if !maps.Equal(opened, wantOpened) || !maps.Equal(ended, wantEnded) {
			t.Errorf("opened %v, ended %v; want %v and %v", opened, ended, wantOpened, wantEnded)
		}
		got := len(fresh.all()) + len(replay.all()) + len(other.all()) + len(closing.all())
		if delivered[sse.KindRoom] != got || delivered[sse.KindLobby] != len(lobby.all()) {
			t.Errorf("delivered %v; the clients received %d room and %d lobby events", delivered, got, len(lobby.all()))
		}
		if dropped[sse.KindRoom] != 0 || dropped[sse.KindLobby] != 0 {
			t.Errorf("dropped %v, want none", dropped)
		}
	})
}

// A client that stops reading makes its stream drop the events its queue
// cannot hold; the stream ends when its stuck write fails.
func TestSlowStreamMetrics(t *testing.T) {
	b := redistest.Backends(t)[0]
	rec := newRecorder()
	e := newEnv(t, b, func(c *sse.Config) { c.QueueSize = 8; c.Metrics = rec })
	id := e.room(t, bob)
	slow := newClient()
	slow.blocked = make(chan struct{})
	_, slowDone := e.serve(t, bob, id, sse.Cursor{}, slow)
	wait.Until(t, "the slow stream opened", func() bool { o, _, _, _ := rec.snapshot(); return o["room fresh"] == 1 })
	for i := range 30 {
		e.patch(t, alice, id, i)
	}
	wait.Until(t, "events dropped", func() bool { _, _, _, d := rec.snapshot(); return d[sse.KindRoom] > 0 })
	close(slow.blocked)
	awaitEnd(t, slowDone, "slow stream")
	_, ended, delivered, _ := rec.snapshot()
	if ended["room write_error"] != 1 || delivered[sse.KindRoom] != 0 {
		t.Errorf("ended %v, delivered %v; want one write_error and nothing delivered", ended, delivered)
	}
}

// A personal stream whose client stops reading drops the events its queue
// cannot hold, counted as dropped ("me"), and ends when its stuck write
// fails.
func TestSlowMeStreamMetrics(t *testing.T) {
	b := redistest.Backends(t)[0]
	rec := newRecorder()
	var st *store.Store
	e := newEnv(t, b, func(c *sse.Config) {
		st = c.Source.(*store.Store)
		c.QueueSize, c.Metrics, c.Users = 8, rec, st.Sessions()
	})
	slow := newClient()
	slow.blocked = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.hub.ServeMe(ctx, slow, bob, "web", sse.Cursor{}) }()
	wait.Until(t, "the slow personal stream opened", func() bool { o, _, _, _ := rec.snapshot(); return o["me fresh"] == 1 })
	for i := range 30 {
		dm := players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, bob.ID, time.Now()),
			From: players.Sender{Server: true}, Message: players.DirectMessageBody{Type: "n", Data: []byte(strconv.Itoa(i))}}
		if err := st.Sessions().Send(ctx, bob.ID, dm); err != nil {
			t.Fatal(err)
		}
	}
	wait.Until(t, "personal events dropped", func() bool { _, _, _, d := rec.snapshot(); return d[sse.KindMe] > 0 })
	close(slow.blocked)
	awaitEnd(t, done, "slow personal stream")
	_, ended, _, _ := rec.snapshot()
	if ended["me slow"]+ended["me write_error"] != 1 {
		t.Errorf("ended %v; want the personal stream ended slow or by its failed write", ended)
	}
}

package sse_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/testlog"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// capTTL is short, yet long enough that a loaded machine's stall does not
// pass for a lapse (600 ms did not leave that room).
const capTTL = 1500 * time.Millisecond

// newCapEnv is a store capping each user at max open streams and a hub
// over it (its Config changed by mut), both with a short lease TTL
// (renewals every 500 ms).
func newCapEnv(t *testing.T, b redistest.Backend, max int, logs *testlog.Buffer, mut ...func(*sse.Config)) (*env, string) {
	t.Helper()
	prefix := redistest.Prefix(t)
	st, err := store.Open(context.Background(), store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
		Prefix: prefix, Shards: 4, PresenceTTL: capTTL, Quotas: store.Quotas{StreamsPerUser: max}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sse.Config{Source: st, Lobby: st.Listing(), Feed: st.Feed, PresenceTTL: capTTL,
		RoomJSON: func(r rooms.Room) any { return map[string]any{"id": r.ID} },
		Log:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, m := range mut {
		m(&cfg)
	}
	hub := sse.NewHub(cfg)
	t.Cleanup(func() { hub.Close(); st.Close() })
	return &env{st: st, hub: hub}, prefix
}

// serveLobby runs u's lobby stream until the test ends or stop.
func (e *env) serveLobby(t *testing.T, u rooms.User, cl *client) (stop func(), done chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- e.hub.ServeLobby(ctx, cl, u, "", "") }()
	t.Cleanup(cancel)
	return func() { cancel(); <-done }, done
}

// streamsKey is u's open streams key under prefix.
func (e *env) streamsKey(t *testing.T, prefix string, u rooms.User) string {
	t.Helper()
	keys, err := rediskeys.Scan(context.Background(), e.st.Client(), "{"+prefix+":*}:streams:"+u.ID)
	if err != nil || len(keys) != 1 {
		t.Fatalf("streams keys of %s: %v, %v", u.ID, keys, err)
	}
	return keys[0]
}

// A room stream and a lobby stream of one user hold its 2 places while
// the hub renews their leases (well past the TTL); a third of either kind
// is refused with ErrStreamLimit; a stream's end frees its place.
func TestHubCapsStreamsPerUser(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		var logs testlog.Buffer
		e, _ := newCapEnv(t, b, 2, &logs)
		id := e.room(t)
		cl, lc := newClient(), newClient()
		e.serve(t, alice, id, sse.Cursor{}, cl)
		cl.waitFor(t, 2)
		stopLobby, _ := e.serveLobby(t, alice, lc)
		for len(lc.all()) == 0 {
			<-lc.got
		}
		time.Sleep(3 * capTTL) // leases renewed, not lapsed: the places stay taken
		// (a stream served by mistake ends with the context, answering nil)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := e.hub.Serve(ctx, newClient(), alice, id, sse.Cursor{}); !errors.Is(err, rooms.ErrStreamLimit) {
			t.Errorf("a third room stream: %v, want ErrStreamLimit", err)
		}
		if err := e.hub.ServeLobby(ctx, newClient(), alice, "", ""); !errors.Is(err, rooms.ErrStreamLimit) {
			t.Errorf("a third lobby stream: %v, want ErrStreamLimit", err)
		}
		stopLobby()
		_, done := e.serveLobby(t, alice, newClient())
		select {
		case err := <-done:
			t.Fatalf("a lobby stream after one ended: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	})
}

// A lease lost from its user's streams (a failover that lost writes) is
// recorded again by the next renewal; when the user's places were taken
// meanwhile, the streams whose leases cannot be recorded end (lapsed).
func TestLostUserLeasesRecordedOrStreamsEnd(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		var logs testlog.Buffer
		e, prefix := newCapEnv(t, b, 2, &logs)
		ctx := context.Background()
		id := e.room(t)
		cl := newClient()
		_, done := e.serve(t, alice, id, sse.Cursor{}, cl)
		cl.waitFor(t, 2)
		_, ldone := e.serveLobby(t, alice, newClient())
		key := e.streamsKey(t, prefix, alice)
		c := e.st.Client()
		c.Del(ctx, key)
		deadline := time.Now().Add(10 * time.Second)
		for n := int64(0); n != 2; n = c.ZCard(ctx, key).Val() {
			if time.Now().After(deadline) {
				t.Fatalf("the lost leases were not recorded again: %d of 2", n)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Del(ctx, key)
		for _, name := range []string{"elsewhere.1", "elsewhere.2"} {
			if err := e.st.OpenLobby(ctx, sse.Lease{UserID: alice.ID, Stream: name}); err != nil {
				t.Fatal(err)
			}
		}
		awaitEnd(t, done, "a room stream whose lease could not be recorded again")
		awaitEnd(t, ldone, "a lobby stream whose lease could not be recorded again")
		if got := strings.Count(logs.String(), "why=lapsed"); got != 1 { // the room stream's; the lobby's ends unlogged
			t.Errorf("%d room streams ended lapsed, want 1:\n%s", got, logs.String())
		}
	})
}

// lineClient is a client whose connection the hub takes over once its
// opening is written (as api's streamClient over plain HTTP/1.1): what
// follows goes through it as a Line, and atEnd runs when the hub ends the
// body, before the end is written.
type lineClient struct {
	*client
	atEnd  func()
	ended  chan struct{}
	hangup chan func() // what OnHangup registered
}

// awaitEnd fails the test with failure unless the stream's body ends
// within 10 s.
func (c *lineClient) awaitEnd(t *testing.T, failure string) {
	t.Helper()
	select {
	case <-c.ended:
	case <-time.After(10 * time.Second):
		t.Fatal(failure)
	}
}

func (c *lineClient) OnHangup(f func()) {
	if c.hangup != nil {
		c.hangup <- f
	}
}

func (c *lineClient) Detachable() bool { return true }
func (c *lineClient) Detach() sse.Line { return c }
func (c *lineClient) Alive() bool      { return true }
func (c *lineClient) End([]byte) {
	c.atEnd()
	close(c.ended)
}

// A taken-over room stream that the server ends (here its player leaves)
// gives its place among its user's streams back before its body ends, as
// a stream its request holds does: a client that reconnects as soon as it
// reads the end is not refused STREAM_LIMIT by its own old stream.
func TestTakenOverStreamFreesItsPlaceBeforeItsEnd(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		var logs testlog.Buffer
		e, prefix := newCapEnv(t, b, 1, &logs)
		ctx := context.Background()
		id := e.room(t, bob) // bob keeps the room open once alice leaves
		var held int64 = -1
		keys := make(chan string, 1)
		cl := &lineClient{client: newClient(), ended: make(chan struct{}),
			atEnd: func() { held = e.st.Client().ZCard(ctx, <-keys).Val() }}
		go e.hub.Serve(ctx, cl, alice, id, sse.Cursor{})
		cl.waitFor(t, 2)
		key := e.streamsKey(t, prefix, alice)
		if n := e.st.Client().ZCard(ctx, key).Val(); n != 1 {
			t.Fatalf("alice's open stream holds %d places, want 1", n)
		}
		keys <- key
		if err := e.st.Leave(ctx, alice, id); err != nil {
			t.Fatal(err)
		}
		cl.awaitEnd(t, "the stream of a player who left did not end")
		if held != 0 {
			t.Errorf("alice's stream held %d places of hers when its body ended, want 0", held)
		}
	})
}

// A taken-over room stream whose line tells that its client hung up
// (sse.HangupNotifier) ends at once, its place among its user's streams
// freed before its end, without the hub's sweep (which finds the line
// alive here): a client that closed its stream and opens another at once
// at its cap is not refused for the one it closed.
func TestTakenOverStreamEndsWhenToldOfItsHangup(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		var logs testlog.Buffer
		e, prefix := newCapEnv(t, b, 1, &logs)
		ctx := context.Background()
		id := e.room(t)
		var held int64 = -1
		keys := make(chan string, 1)
		cl := &lineClient{client: newClient(), ended: make(chan struct{}), hangup: make(chan func(), 1),
			atEnd: func() { held = e.st.Client().ZCard(ctx, <-keys).Val() }}
		go e.hub.Serve(ctx, cl, alice, id, sse.Cursor{})
		cl.waitFor(t, 1)
		keys <- e.streamsKey(t, prefix, alice)
		var hangup func()
		select {
		case hangup = <-cl.hangup:
		case <-time.After(10 * time.Second):
			t.Fatal("the taken-over stream asked its line to tell nobody of its hang-up")
		}
		hangup()
		cl.awaitEnd(t, "the stream whose client hung up did not end")
		if held != 0 {
			t.Errorf("alice's stream held %d places of hers when its body ended, want 0", held)
		}
		// served until its context ends (nil) unless refused at once
		lctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		if err := e.hub.ServeLobby(lctx, newClient(), alice, "", ""); errors.Is(err, rooms.ErrStreamLimit) {
			t.Error("a lobby stream after the room stream hung up: refused at the cap")
		}
	})
}

// stallingRelease is a Source whose CloseStream waits until release is
// closed, whatever its context says: a Redis that does not answer.
type stallingRelease struct {
	sse.Source
	release chan struct{}
	calls   atomic.Int32
}

func (s *stallingRelease) CloseStream(_ context.Context, l sse.Lease) error {
	s.calls.Add(1)
	<-s.release
	return s.Source.CloseStream(context.Background(), l)
}

// A stream's end waits for its release (its lease, its place among its
// user's streams) only so long: a Redis that does not answer does not
// hold up the end of a taken-over room stream, which tells its client to
// reconnect (elsewhere, in a shutdown). The release was asked first.
func TestStreamEndNotHeldUpByItsRelease(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		src := &stallingRelease{release: make(chan struct{})}
		e := newEnv(t, b, func(c *sse.Config) { src.Source, c.Source = c.Source, src })
		defer close(src.release) // before the hub's close, which waits for it
		ctx := context.Background()
		id := e.room(t, bob)
		cl := &lineClient{client: newClient(), ended: make(chan struct{}), atEnd: func() {}}
		go e.hub.Serve(ctx, cl, alice, id, sse.Cursor{})
		cl.waitFor(t, 2)
		if err := e.st.Leave(ctx, alice, id); err != nil {
			t.Fatal(err)
		}
		cl.awaitEnd(t, "the stream's end waits for a release that does not come")
		if n := src.calls.Load(); n != 1 {
			t.Errorf("%d releases asked before the end, want 1", n)
		}
	})
}

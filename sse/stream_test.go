package sse_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/testlog"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

func version(t *testing.T, e *env, id string) int64 {
	t.Helper()
	r, _, err := e.st.Get(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	return r.Version
}

// cursorOf is the Last-Event-ID of the event of version v cl received.
func cursorOf(t *testing.T, cl *client, v int64) sse.Cursor {
	t.Helper()
	for _, f := range cl.waitFor(t, v) {
		if f.Version == v {
			c := sse.ParseCursor(f.ID)
			if !c.Verifiable() {
				t.Fatalf("event %d has the untagged id %q", v, f.ID)
			}
			return c
		}
	}
	t.Fatalf("no event of version %d in %v", v, cl.all())
	return sse.Cursor{}
}

// Streams opened while a writer keeps writing each get a snapshot (or the
// replay after their cursor) and then every later event once, in order:
// subscribe first, then read, then drop what was already sent.
func TestStreamsOpenedDuringWritesMissNothing(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newEnv(t, b)
		id := e.room(t, bob)
		tracker := newClient() // its ids are the cursors resumed from
		e.serve(t, alice, id, sse.Cursor{}, tracker)
		tracker.waitFor(t, version(t, e, id))
		const writes = 150
		var wg sync.WaitGroup
		wg.Add(1)
		opened := make(chan struct{})
		go func() {
			defer wg.Done()
			for i := range writes {
				e.patch(t, alice, id, i)
			}
			// one more once every stream is open: the writes may all be
			// done before the last stream opens, and each stream must see
			// at least one live event
			<-opened
			e.patch(t, alice, id, writes)
		}()
		var clients []*client
		for i := range 8 {
			cl := newClient()
			c := sse.Cursor{}
			if i%2 == 1 { // resume from a version the log holds
				c = sse.ParseCursor(last(tracker.all()).ID)
			}
			e.serve(t, []rooms.User{alice, bob}[i%2], id, c, cl)
			clients = append(clients, cl)
			time.Sleep(5 * time.Millisecond)
		}
		close(opened)
		wg.Wait()
		final := version(t, e, id)
		for i, cl := range clients {
			fs := cl.waitFor(t, final)
			if i%2 == 0 && fs[0].Type != "snapshot" {
				t.Errorf("stream %d starts with %s, want snapshot", i, fs[0].Type)
			}
			if i%2 == 1 && fs[0].Type == "snapshot" {
				t.Errorf("stream %d resumed with a snapshot", i)
			}
			if rs := cl.resumes(); len(rs) != i%2 {
				t.Errorf("stream %d got %d resumed events, want %d (one after a replay, none after a snapshot)", i, len(rs), i%2)
			}
			contiguous(t, "stream", fs)
			if l := last(fs); l.Version != final {
				t.Errorf("stream %d ends at %d, want %d", i, l.Version, final)
			}
		}
	})
}

// dropSink loses every third live event, as Pub/Sub does around a
// reconnect.
type dropSink struct {
	sse.Sink
	mu sync.Mutex
	n  int
}

func (d *dropSink) Deliver(room string, e sse.Event) {
	d.mu.Lock()
	d.n++
	drop := d.n%3 == 0
	d.mu.Unlock()
	if !drop {
		d.Sink.Deliver(room, e)
	}
}

func TestLostLiveEventsAreFilledFromTheLog(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newEnv(t, b, func(c *sse.Config) {
			feed := c.Feed
			c.Feed = func(s sse.Sink) sse.Feed { return feed(&dropSink{Sink: s}) }
		})
		id := e.room(t)
		cl := newClient()
		e.serve(t, alice, id, sse.Cursor{}, cl)
		cl.waitFor(t, 2) // the snapshot, with alice connected
		for i := range 60 {
			e.patch(t, alice, id, i)
		}
		fs := cl.waitFor(t, version(t, e, id))
		contiguous(t, "stream", fs)
	})
}

// A client that stops reading is cut off once its queue is full; a reading
// client of the same room keeps receiving everything meanwhile. The events
// come a half queue at a time, each read before the next: a reader handed
// a whole queue at once (the room's worker hands on what piled up while
// the reader's goroutine did not run, on a loaded machine) is too slow by
// the same rule, and was cut off too.
func TestSlowClientIsCutOff(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		const queue = 32
		e := newEnv(t, b, func(c *sse.Config) { c.QueueSize = queue })
		id := e.room(t, bob)
		slow := newClient()
		slow.blocked = make(chan struct{})
		_, slowDone := e.serve(t, bob, id, sse.Cursor{}, slow)
		fast := newClient()
		e.serve(t, alice, id, sse.Cursor{}, fast)
		fast.waitFor(t, 4)   // both connected
		for i := range 100 { // far more than the queue holds
			e.patch(t, alice, id, i)
			if (i+1)%(queue/2) == 0 {
				fast.waitFor(t, version(t, e, id))
			}
		}
		contiguous(t, "reading stream", fast.waitFor(t, version(t, e, id)))
		close(slow.blocked) // the stuck write fails, as a write deadline would make it
		select {
		case <-slowDone:
		case <-time.After(10 * time.Second):
			t.Fatal("the stream of a client that stopped reading is still open")
		}
	})
}

func TestStreamEndsWhenPlayerLeavesOrRoomCloses(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newEnv(t, b)
		ctx := context.Background()
		id := e.room(t, bob)
		bc, ac := newClient(), newClient()
		_, bobDone := e.serve(t, bob, id, sse.Cursor{}, bc)
		_, aliceDone := e.serve(t, alice, id, sse.Cursor{}, ac)
		ac.waitFor(t, 4)
		if err := e.st.Kick(ctx, alice, id, 2); err != nil {
			t.Fatal(err)
		}
		awaitEnd(t, bobDone, "kicked player's stream")
		if l := last(bc.all()); l.Type != "player_left" || !strings.Contains(l.Data, `"playerId":2`) {
			t.Errorf("kicked stream ends with %+v", l)
		}
		if _, err := e.st.Delete(ctx, alice, id); err != nil {
			t.Fatal(err)
		}
		awaitEnd(t, aliceDone, "closed room's stream")
		if l := last(ac.all()); l.Type != "room_closed" {
			t.Errorf("stream ends with %+v", l)
		}
	})
}

func awaitEnd(t *testing.T, done chan error, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not end", what)
	}
}

func TestMessagesReachOnlyTheirRecipients(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newEnv(t, b)
		ctx := context.Background()
		id := e.room(t, bob, carol)
		cls := map[string]*client{}
		for _, u := range []rooms.User{alice, bob, carol} {
			cls[u.Name] = newClient()
			e.serve(t, u, id, sse.Cursor{}, cls[u.Name])
		}
		cls["alice"].waitFor(t, 6)
		p, _ := e.st.SendMessage(ctx, bob, id, rooms.Message{Type: "whisper", Data: []byte(`"psst"`), To: []int{3}})
		q, _ := e.st.SendMessage(ctx, alice, id, rooms.Message{Type: "chat", Data: []byte(`"hi"`)})
		private, public := p.Version, q.Version
		for name, sees := range map[string]bool{"alice": false, "bob": true, "carol": true} {
			fs := cls[name].waitFor(t, public)
			got := false
			for _, f := range fs {
				got = got || f.Version == private
			}
			if got != sees {
				t.Errorf("%s sees the message to carol: %v, want %v", name, got, sees)
			}
		}
	})
}

func TestPresenceFollowsStreams(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newEnv(t, b)
		id := e.room(t, bob)
		watcher := newClient()
		e.serve(t, alice, id, sse.Cursor{}, watcher)
		watcher.waitFor(t, 3) // its snapshot
		b1, b2 := newClient(), newClient()
		stop1, _ := e.serve(t, bob, id, sse.Cursor{}, b1)
		stop2, _ := e.serve(t, bob, id, sse.Cursor{}, b2)
		b1.waitFor(t, 1) // both of bob's streams are open
		b2.waitFor(t, 1)
		watcher.waitFor(t, 4)
		stop1()
		e.patch(t, alice, id, 1) // a marker: nothing about bob may come before it
		stop2()
		fs := watcher.waitFor(t, 6)
		var types []string
		for _, f := range fs[1:] {
			types = append(types, f.Type)
		}
		want := "player_connected state player_disconnected"
		if strings.Join(types, " ") != want {
			t.Errorf("events %v, want %s", types, want)
		}
	})
}

// Close ends every room and lobby stream, the last thing sent being a
// retry line of 0.5 to 2 s: the client comes back soon, to another
// instance.
func TestCloseEndsEveryStream(t *testing.T) {
	b := redistest.Backends(t)[0]
	e := newEnv(t, b)
	id := e.room(t, bob)
	var dones []chan error
	var cls []*client
	for _, u := range []rooms.User{alice, bob} {
		cl := newClient()
		_, done := e.serve(t, u, id, sse.Cursor{}, cl)
		cl.waitFor(t, 2)
		dones, cls = append(dones, done), append(cls, cl)
	}
	lc, ldone := newClient(), make(chan error, 1)
	go func() { ldone <- e.hub.ServeLobby(context.Background(), lc, alice, "", "") }()
	for len(lc.all()) == 0 {
		<-lc.got
	}
	e.hub.Close()
	for i, d := range append(dones, ldone) {
		awaitEnd(t, d, "stream after Close")
		endsWithShutdownRetry(t, i, append(cls, lc)[i])
	}
}

// endsWithShutdownRetry checks that stream i's last frame is a
// shutdown's retry line, of 0.5 to 2 s.
func endsWithShutdownRetry(t *testing.T, i int, cl *client) {
	t.Helper()
	raw := string(cl.raw)
	m := regexp.MustCompile(`\n\nretry: (\d+)\n\n$`).FindStringSubmatch(raw)
	if m == nil {
		t.Errorf("stream %d does not end with a retry line: %q", i, raw[max(0, len(raw)-40):])
		return
	}
	if ms, _ := strconv.Atoi(m[1]); ms < 500 || ms >= 2000 {
		t.Errorf("stream %d ends with retry %d ms, want 500..1999", i, ms)
	}
}

// A room whose data vanishes under its streams (a flush, a restore of a
// backup without it) ends them within the position check interval with
// room_closed, reason gone, one version above the last event sent; also
// when its event log survived.
func TestVanishedRoomEndsStreams(t *testing.T) {
	tests := []struct {
		name    string
		keepLog bool // delete every key of the room but its event log
	}{
		{"Flushed", false},
		{"LogKept", true},
	}
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, b, func(c *sse.Config) { c.CheckInterval = 200 * time.Millisecond })
				id := e.room(t, bob)
				var dones []chan error
				var cls []*client
				for _, u := range []rooms.User{alice, bob} {
					cl := newClient()
					_, done := e.serve(t, u, id, sse.Cursor{}, cl)
					dones, cls = append(dones, done), append(cls, cl)
				}
				cls[0].waitFor(t, 4) // both connected
				cls[1].waitFor(t, 4)
				var del []string
				for _, k := range e.st.RoomKeys(id) {
					if !tc.keepLog || !strings.HasSuffix(k, ":log") {
						del = append(del, k)
					}
				}
				if err := e.st.Client().Del(context.Background(), del...).Err(); err != nil {
					t.Fatal(err)
				}
				for i, d := range dones {
					awaitEnd(t, d, "stream of a vanished room")
					l := last(cls[i].all())
					if l.Type != "room_closed" || l.Version != 5 || !strings.Contains(l.Data, `"reason":"gone"`) ||
						!strings.Contains(l.Data, `"version":5`) {
						t.Errorf("stream %d ends with %+v", i, l)
					}
				}
			})
		}
	})
}

// A room restored to an older version under its streams (a backup brought
// back) gives them a snapshot of the history as it now is, then the
// events written after it: found by the position check (the versions
// differ), or, when the writes since the restore reached the streams'
// version again (the versions equal), by the live event of that version,
// of another history. The streams dropped the new history's events as
// already seen, and went on from the old one (a tester's find).
func TestRestoredRoomResyncsStreams(t *testing.T) {
	for _, c := range []struct {
		name          string
		check         time.Duration
		before, after int // writes before the restore (of version 3), and after it
	}{
		{"by the position check", 200 * time.Millisecond, 5, 0},
		{"written back to its version", time.Hour, 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			redistest.Each(t, func(t *testing.T, b redistest.Backend) {
				if b.Name == "embedded" {
					t.Skip("miniredis cannot DUMP a hash")
				}
				e := newEnv(t, b, func(cfg *sse.Config) { cfg.CheckInterval = c.check })
				id := e.room(t, bob)
				cl := newClient()
				e.serve(t, bob, id, sse.Cursor{}, cl)
				cl.waitFor(t, 3)
				restore := backupRoom(t, e, id)
				for i := range c.before {
					e.patch(t, alice, id, i)
				}
				cl.waitFor(t, int64(3+c.before))
				restore()
				for i := range c.after {
					e.patch(t, alice, id, 10+i)
				}
				v := int64(3 + c.after)
				deadline := time.Now().Add(10 * time.Second)
				for l := last(cl.all()); l.Type != "snapshot" || l.Version != v; l = last(cl.all()) {
					if time.Now().After(deadline) {
						t.Fatalf("no snapshot of the restored history at version %d; last frame %+v", v, l)
					}
					time.Sleep(20 * time.Millisecond)
				}
				if l := last(cl.all()); c.after > 0 && !strings.Contains(l.Data, fmt.Sprintf(`"n":%d`, 10+c.after-1)) {
					t.Errorf("the snapshot of version %d is not the new history's: %s", v, l.Data)
				}
				e.patch(t, alice, id, 99)
				fs := cl.waitFor(t, v+1)
				if l := last(fs); l.Type != "state" || l.Version != v+1 || !strings.Contains(l.Data, `"n":99`) {
					t.Errorf("after the snapshot: %+v", l)
				}
			})
		})
	}
}

// backupRoom dumps room id's keys; restore brings them back as they were
// (a backup restored under the room's streams).
func backupRoom(t *testing.T, e *env, id string) (restore func()) {
	t.Helper()
	ctx := context.Background()
	backup := map[string]string{}
	for _, k := range e.st.RoomKeys(id) {
		if v, err := e.st.Client().Dump(ctx, k).Result(); err == nil {
			backup[k] = v
		}
	}
	return func() {
		t.Helper()
		for k, v := range backup {
			if err := e.st.Client().RestoreReplace(ctx, k, 0, v).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A room's only stream closing while the next one opens: the new stream
// still gets live events (unsubscribing the old never undoes the new
// subscription).
func TestReopeningARoomKeepsItsSubscription(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newEnv(t, b)
		id := e.room(t)
		var stop func()
		for i := range 25 {
			cl := newClient()
			next, _ := e.serve(t, alice, id, sse.Cursor{}, cl)
			if stop != nil {
				go stop()
			}
			stop = next
			cl.waitFor(t, 1)
			e.patch(t, alice, id, i)
			cl.waitFor(t, version(t, e, id))
		}
		stop()
	})
}

// renewFails is a Source whose renewals hang until their deadline and fail
// while fail is set, as when Redis is out of reach.
type renewFails struct {
	sse.Source
	fail atomic.Bool
}

func (s *renewFails) RenewStreams(ctx context.Context, ls []sse.Lease) ([]sse.Lease, error) {
	if s.fail.Load() {
		<-ctx.Done()
		return nil, rooms.ErrUnavailable
	}
	return s.Source.RenewStreams(ctx, ls)
}

// A stream whose presence lease goes a whole TTL without a renewal (Redis
// out of reach, renewals hanging) ends, so that its client reconnects to an
// instance that reaches Redis; while its lease is renewed it stays open.
func TestStreamEndsWhenItsLeaseLapses(t *testing.T) {
	src := &renewFails{}
	var logs testlog.Buffer
	e := newEnv(t, redistest.Backend{Name: "embedded"}, func(c *sse.Config) {
		src.Source, c.Source = c.Source, src
		c.PresenceTTL = 1500 * time.Millisecond // a stall of a loaded machine is no lapse
		c.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	id := e.room(t, bob)
	cl := newClient()
	_, done := e.serve(t, bob, id, sse.Cursor{}, cl)
	cl.waitFor(t, 3)
	time.Sleep(2 * time.Second) // four renewals
	select {
	case <-done:
		t.Fatalf("the stream ended while its lease was renewed:\n%s", logs.String())
	default:
	}
	src.fail.Store(true)
	awaitEnd(t, done, "a stream whose lease lapsed")
	if !strings.Contains(logs.String(), `why=lapsed`) {
		t.Errorf("the hub does not say why the stream ended:\n%s", logs.String())
	}
}

// A Last-Event-ID without its tag cannot be checked against the room's
// history, so the stream starts with a snapshot; the same version with its
// tag resumes from the log.
func TestUntaggedLastEventIDStartsWithSnapshot(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newEnv(t, b)
		id := e.room(t, bob)
		tracker := newClient()
		e.serve(t, alice, id, sse.Cursor{}, tracker)
		tracker.waitFor(t, version(t, e, id))
		for i := range 3 {
			e.patch(t, alice, id, i)
		}
		v := version(t, e, id)
		tagged := cursorOf(t, tracker, v-1)
		cases := []struct {
			name     string
			c        sse.Cursor
			snapshot bool
		}{
			{"Tagged", tagged, false},
			{"Bare", sse.Cursor{Set: true, Version: tagged.Version}, true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				cl := newClient()
				e.serve(t, bob, id, tc.c, cl)
				fs := cl.waitFor(t, v)
				if got := fs[0].Type == "snapshot"; got != tc.snapshot {
					t.Fatalf("resume from %q starts with %s (%d frames)", tc.c, fs[0].Type, len(fs))
				}
				// A replay is followed by one resumed event, without an id,
				// at the version of the last event replayed; a snapshot by none.
				rs := cl.resumes()
				switch {
				case tc.snapshot && len(rs) != 0:
					t.Errorf("a snapshot was followed by %d resumed events", len(rs))
				case !tc.snapshot && (len(rs) != 1 || rs[0].ID != "" || rs[0].Version <= tagged.Version ||
					!strings.Contains(rs[0].Data, fmt.Sprintf(`"version":%d,`, rs[0].Version))):
					t.Errorf("after a replay from %d: resumed events %+v, want one at the last version replayed, without an id", tagged.Version, rs)
				}
			})
		}
	})
}

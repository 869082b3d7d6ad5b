package realsync_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	rs "github.com/realsync/realsync/sdk/go"
)

// fastBackoff keeps reconnections quick in tests.
var fastBackoff = rs.WithBackoff(rs.Backoff{Base: 5 * time.Millisecond, Max: 50 * time.Millisecond, Reset: time.Hour})

// until reads s until stop returns true for an item, and returns every
// item read. A Closed item stop did not ask for fails the test; so does
// the stream's context ending (ctx(t)'s bound).
func until(t *testing.T, s *rs.Stream, stop func(rs.Event) bool) []rs.Event {
	t.Helper()
	var got []rs.Event
	for {
		ev, err := s.Next()
		if err != nil && !stop(ev) {
			t.Fatalf("stream ended: %v after %s", err, kinds(got))
		}
		got = append(got, ev)
		if stop(ev) {
			return got
		}
		if c, ok := ev.(*rs.Closed); ok {
			t.Fatalf("stream closed (%s) after %s", c.Reason, kinds(got))
		}
	}
}

// kinds lists items by type, for failure messages and exact sequences.
func kinds(evs []rs.Event) string {
	var b []string
	for _, ev := range evs {
		k := ev.EventType()
		switch ev := ev.(type) {
		case *rs.Resumed:
			k = fmt.Sprintf("resumed(snapshot=%v)", ev.Snapshot)
		case *rs.Closed:
			k = "closed(" + ev.Reason + ")"
		}
		b = append(b, k)
	}
	return strings.Join(b, " ")
}

func count[T rs.Event](evs []rs.Event) (n int) {
	for _, ev := range evs {
		if _, ok := ev.(T); ok {
			n++
		}
	}
	return n
}

// stateN is the "n" of a state event, 0 for any other item.
func stateN(ev rs.Event) int {
	if s, ok := ev.(*rs.StateChanged); ok {
		if n, ok := s.Set["n"].(float64); ok {
			return int(n)
		}
	}
	return 0
}

// A stream whose connection is dropped resumes with Last-Event-ID: every
// event written meanwhile arrives once, in order, without a snapshot.
func TestStreamResumesAfterDrop(t *testing.T) {
	eachBackend(t, serverOpts{}, func(t *testing.T, s *server) {
		c := ctx(t)
		_, id := s.hostRoom(t, "Arena")
		gs := rs.New(s.url, rs.WithAPIKey(s.keys.all), fastBackoff)
		st := gs.Stream(c, id)
		defer st.Close()
		if err := st.Ready(); err != nil {
			t.Fatal(err)
		}
		var all []rs.Event
		last := int64(0)
		for round := range 3 {
			s.dropStreams(t) // the stream's connection, with nothing read since
			for i := round*10 + 1; i <= round*10+10; i++ {
				if _, err := gs.PatchState(c, id, rs.State{"n": i}); err != nil {
					t.Fatal(err)
				}
			}
			// the replay (and live events) up to n, and the server's resumed
			all = append(all, until(t, st, both(func(ev rs.Event) bool { return stateN(ev) == round*10+10 }, isResumed))...)
		}
		var ns []int
		for _, ev := range all {
			if n := stateN(ev); n != 0 {
				ns = append(ns, n)
				v := ev.(*rs.StateChanged).Version
				if v <= last || !strings.HasPrefix(ev.(*rs.StateChanged).ID, fmt.Sprint(v)) {
					t.Fatalf("version %d (id %s) after %d", v, ev.(*rs.StateChanged).ID, last)
				}
				last = v
			}
		}
		for i, n := range ns {
			if n != i+1 {
				t.Fatalf("state events %v: want 1..30 once each", ns)
			}
		}
		if len(ns) != 30 || count[*rs.Snapshot](all) != 1 || count[*rs.Reconnecting](all) != 3 ||
			count[*rs.Resumed](all) != 3 || strings.Contains(kinds(all), "resumed(snapshot=true)") || count[*rs.UnknownEvent](all) != 0 {
			t.Fatalf("items: %s", kinds(all))
		}
	})
}

// After a reconnection to a quiet room the server's resumed event reports
// at once that nothing was lost (without waiting for a room event or a
// heartbeat): Resumed, not a room event, and LastEventID and the room's
// Version stay.
func TestStreamResumedInQuietRoom(t *testing.T) {
	eachBackend(t, serverOpts{}, func(t *testing.T, s *server) {
		c := ctx(t)
		_, id := s.hostRoom(t, "Quiet")
		gs := rs.New(s.url, rs.WithAPIKey(s.keys.all), fastBackoff)
		st := gs.Stream(c, id)
		defer st.Close()
		live := &rs.LiveRoom{}
		apply := func(evs []rs.Event) {
			for _, ev := range evs {
				if err := live.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
		}
		apply(until(t, st, func(ev rs.Event) bool { _, ok := ev.(*rs.Snapshot); return ok }))
		last, version := st.LastEventID(), live.Version
		s.dropStreams(t)
		// the heartbeat is 15 s: ctx(t) would end first without the resumed event
		got := until(t, st, isResumed)
		apply(got)
		if k := kinds(got); k != "reconnecting connecting open resumed(snapshot=false)" || st.LastEventID() != last || live.Version != version {
			t.Fatalf("items %s, last id %s (was %s), version %d (was %d)", k, st.LastEventID(), last, live.Version, version)
		}
		if _, err := gs.PatchState(c, id, rs.State{"n": 1}); err != nil {
			t.Fatal(err)
		}
		if ev, err := st.Next(); err != nil || stateN(ev) != 1 {
			t.Fatalf("after resumed: %s %v", kinds([]rs.Event{ev}), err)
		}
	})
}

// A stream opened with AfterEventID replays what came after that event,
// without a snapshot.
func TestStreamAfterEventID(t *testing.T) {
	s := newServer(t, redistestEmbedded, serverOpts{})
	c := ctx(t)
	host, id := s.hostRoom(t, "Arena")
	gs := rs.New(s.url, rs.WithAPIKey(s.keys.reader))
	first := gs.Stream(c, id)
	if err := first.Ready(); err != nil { // connected: the patches come as events
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if _, err := host.PatchState(c, id, rs.State{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	until(t, first, func(ev rs.Event) bool { return stateN(ev) == 2 })
	last := first.LastEventID()
	first.Close()
	for i := 3; i <= 4; i++ {
		if _, err := host.PatchState(c, id, rs.State{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	second := gs.Stream(c, id, rs.AfterEventID(last))
	defer second.Close()
	if err := second.Ready(); err != nil {
		t.Fatal(err)
	}
	got := until(t, second, func(ev rs.Event) bool { return stateN(ev) == 4 })
	if k := kinds(got); k != "connecting open state state" || stateN(got[2]) != 3 {
		t.Fatalf("items after %s: %s", last, k)
	}
}

// A resume the server's log cannot serve (the events missed were trimmed)
// gets a snapshot, reported by Resumed{Snapshot: true}.
func TestStreamResumeNeedsSnapshot(t *testing.T) {
	eachBackend(t, serverOpts{logMaxBytes: 4096}, func(t *testing.T, s *server) {
		c := ctx(t)
		host, id := s.hostRoom(t, "Arena")
		st := rs.New(s.url, rs.WithAPIKey(s.keys.reader), fastBackoff).Stream(c, id)
		defer st.Close()
		until(t, st, func(ev rs.Event) bool { _, ok := ev.(*rs.Snapshot); return ok })
		s.dropStreams(t)
		for i := 1; i <= 12; i++ { // 12 KiB of events: the first ones leave the 4 KiB log
			if _, err := host.PatchState(c, id, rs.State{"n": i, "pad": strings.Repeat("p", 1000)}); err != nil {
				t.Fatal(err)
			}
		}
		got := until(t, st, func(ev rs.Event) bool { _, ok := ev.(*rs.Snapshot); return ok })
		k := kinds(got)
		if !strings.HasSuffix(k, "reconnecting connecting open resumed(snapshot=true) snapshot") {
			t.Fatalf("items: %s", k)
		}
		snap := got[len(got)-1].(*rs.Snapshot)
		if snap.State["n"] != float64(12) || snap.StateVersion != 12 || snap.Room.Id != id {
			t.Fatalf("snapshot %+v", snap)
		}
	})
}

// A permanent refusal ends the stream at once with the typed error: no
// reconnection, Ready returns it, and the Closed item carries it.
func TestStreamPermanentErrors(t *testing.T) {
	s := newServer(t, redistestEmbedded, serverOpts{})
	c := ctx(t)
	host := s.guest(t, "host")
	room, err := host.CreateRoom(c, arena("Arena"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		client *rs.Client
		room   string
		status int
		code   string
	}{
		{"unknown room", host, "nope", 404, "ROOM_NOT_FOUND"},
		{"not a member", s.guest(t, "eve"), room.Room.Id, 403, "NOT_A_MEMBER"},
		{"unknown API key", rs.New(s.url, rs.WithAPIKey("rsk_unknown")), room.Room.Id, 401, "UNAUTHENTICATED"},
		{"bad token", rs.New(s.url, rs.WithToken("junk")), room.Room.Id, 401, "UNAUTHENTICATED"},
		{"a guest the server no longer knows", staleGuest(t, s), room.Room.Id, 401, "UNAUTHENTICATED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.client.Stream(c, tc.room)
			defer st.Close()
			ready := st.Ready()
			var items []rs.Event
			var last error
			for ev, err := range st.Events() {
				items, last = append(items, ev), err
			}
			var e *rs.Error
			if !errors.As(ready, &e) || e.Status != tc.status || e.Code != tc.code {
				t.Fatalf("Ready: %v, want %d %s", ready, tc.status, tc.code)
			}
			closed, _ := items[len(items)-1].(*rs.Closed)
			if kinds(items) != "connecting closed(error)" || last != closed.Err || !rs.IsCode(last, tc.code) {
				t.Fatalf("items %s, last error %v", kinds(items), last)
			}
			if ev, err := st.Next(); ev != nil || !errors.Is(err, rs.ErrStreamEnded) {
				t.Fatalf("after the end: %v %v", ev, err)
			}
		})
	}
}

// staleGuest is a Guest client of s whose token s refuses and cannot
// renew, as after a server restart with a new secret (realsyncd without
// REALSYNC_JWT_SECRET): its guest token comes from a server with another
// secret, every other request goes to s.
func staleGuest(t *testing.T, s *server) *rs.Client {
	t.Helper()
	other := newServer(t, redistestEmbedded, serverOpts{secret: "another-secret"})
	to, err := url.Parse(other.url)
	if err != nil {
		t.Fatal(err)
	}
	c := rs.New(s.url, rs.WithHTTP(&http.Client{Transport: guestFrom{to}}))
	if _, err := c.Guest(ctx(t), "stale"); err != nil {
		t.Fatal(err)
	}
	return c
}

// guestFrom sends POST /v1/auth/guest to another server.
type guestFrom struct{ to *url.URL }

func (g guestFrom) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/v1/auth/guest" {
		req = req.Clone(req.Context())
		req.URL.Scheme, req.URL.Host, req.Host = g.to.Scheme, g.to.Host, g.to.Host
	}
	return http.DefaultTransport.RoundTrip(req)
}

// A stream ends cleanly after room_closed, and after its own player's
// player_left: at once when it knows its playerId (AsPlayer, or the
// client joined the room), else after the refused reconnection; another
// player's leave does not end it.
func TestStreamEnds(t *testing.T) {
	s := newServer(t, redistestEmbedded, serverOpts{})
	c := ctx(t)
	host, carol := s.guest(t, "host"), s.guest(t, "carol")
	bob := rs.New(s.url, fastBackoff)
	tok, err := bob.Guest(c, "bob")
	if err != nil {
		t.Fatal(err)
	}
	bobElsewhere := rs.New(s.url, rs.WithToken(tok.Token), fastBackoff) // did not join: does not know bob's playerId
	gs := rs.New(s.url, rs.WithAPIKey(s.keys.all))
	closed := func(ev rs.Event) bool { _, ok := ev.(*rs.Closed); return ok }
	for _, tc := range []struct {
		name   string
		reader *rs.Client // bob's client reading the stream
		opts   []rs.StreamOption
		end    func(id string) error // what ends bob's stream
		reason string
		tail   string // the items from the last event on
	}{
		{"room closed", bob, nil, func(id string) error { return gs.DeleteRoom(c, id) }, rs.ClosedRoomClosed, "room_closed closed(room_closed)"},
		{"left", bob, nil, func(id string) error { return bob.LeaveRoom(c, id) }, rs.ClosedLeft, "player_left closed(left)"},
		{"kicked", bob, nil, func(id string) error { return host.Kick(c, id, 2, false) }, rs.ClosedLeft, "player_left closed(left)"},
		{"kicked, as player 2", bobElsewhere, []rs.StreamOption{rs.AsPlayer(2)}, func(id string) error { return gs.Kick(c, id, 2, false) },
			rs.ClosedLeft, "player_left closed(left)"},
		{"left, learnt", bobElsewhere, nil, func(id string) error { return bob.LeaveRoom(c, id) }, rs.ClosedLeft,
			"player_left reconnecting connecting closed(left)"},
		{"kicked, learnt", bobElsewhere, nil, func(id string) error { return host.Kick(c, id, 2, false) }, rs.ClosedLeft,
			"player_left reconnecting connecting closed(left)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			room, err := host.CreateRoom(c, arena(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			id := room.Room.Id
			for _, p := range []*rs.Client{bob, carol} {
				if _, err := p.JoinRoom(c, id); err != nil {
					t.Fatal(err)
				}
			}
			st := tc.reader.Stream(c, id, tc.opts...)
			defer st.Close()
			if err := st.Ready(); err != nil {
				t.Fatal(err)
			}
			if err := carol.LeaveRoom(c, id); err != nil {
				t.Fatal(err)
			}
			if _, err := host.PatchState(c, id, rs.State{"n": 1}); err != nil {
				t.Fatal(err)
			}
			until(t, st, func(ev rs.Event) bool { return stateN(ev) == 1 }) // carol's leave did not end it
			if err := tc.end(id); err != nil {
				t.Fatal(err)
			}
			got := until(t, st, closed)
			last := 0
			for i, ev := range got {
				if !isLifecycle(ev) {
					last = i
				}
			}
			cl := got[len(got)-1].(*rs.Closed)
			if cl.Reason != tc.reason || cl.Err != nil || kinds(got[last:]) != tc.tail {
				t.Fatalf("closed %+v after %s", cl, kinds(got))
			}
		})
	}
	t.Run("closed by the caller", func(t *testing.T) {
		room, err := host.CreateRoom(c, arena("Closing"))
		if err != nil {
			t.Fatal(err)
		}
		st := host.Stream(c, room.Room.Id)
		if err := st.Ready(); err != nil {
			t.Fatal(err)
		}
		for ev, err := range st.Events() {
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := ev.(*rs.Snapshot); ok {
				break // closes the stream
			}
		}
		if ev, err := st.Next(); err != nil || kinds([]rs.Event{ev}) != "closed(closed)" {
			t.Fatalf("after break: %v %v", ev, err)
		}
	})
}

// After Close (or the end of the stream's context) the next item is the
// Closed event with ClosedByCaller, then ErrStreamEnded: the items read
// but not yet handed out (Ready's connecting, open, snapshot) are dropped,
// and a Next waiting for the next event when Close comes returns Closed.
func TestStreamClose(t *testing.T) {
	s := newServer(t, redistestEmbedded, serverOpts{})
	host, id := s.hostRoom(t, "Close")
	for _, tc := range []struct {
		name  string
		close func(t *testing.T, st *rs.Stream, cancel context.CancelFunc)
	}{
		{"Close with items queued", func(_ *testing.T, st *rs.Stream, _ context.CancelFunc) { st.Close() }},
		{"context ends with items queued", func(_ *testing.T, _ *rs.Stream, cancel context.CancelFunc) { cancel() }},
		{"Close while Next waits", func(t *testing.T, st *rs.Stream, _ context.CancelFunc) {
			until(t, st, func(ev rs.Event) bool { _, ok := ev.(*rs.Snapshot); return ok }) // nothing queued
			time.AfterFunc(100*time.Millisecond, func() { st.Close() })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, cancel := context.WithCancel(ctx(t))
			defer cancel()
			st := host.Stream(c, id)
			defer st.Close()
			if err := st.Ready(); err != nil {
				t.Fatal(err)
			}
			tc.close(t, st, cancel)
			var got []rs.Event
			for {
				ev, err := st.Next()
				if errors.Is(err, rs.ErrStreamEnded) {
					break
				}
				if err != nil {
					t.Fatalf("Next: %v after %s", err, kinds(got))
				}
				got = append(got, ev)
			}
			if k := kinds(got); k != "closed(closed)" {
				t.Fatalf("items after Close: %s, want closed(closed) only", k)
			}
		})
	}
}

func isResumed(ev rs.Event) bool { _, ok := ev.(*rs.Resumed); return ok }

// both is a stop function for until: true once a and b have each been
// true for an item (of the same until call).
func both(a, b func(rs.Event) bool) func(rs.Event) bool {
	var sawA, sawB bool
	return func(ev rs.Event) bool {
		sawA, sawB = sawA || a(ev), sawB || b(ev)
		return sawA && sawB
	}
}

func isLifecycle(ev rs.Event) bool {
	switch ev.(type) {
	case *rs.Connecting, *rs.Opened, *rs.Reconnecting, *rs.Resumed, *rs.Closed:
		return true
	}
	return false
}

// Lines far over a bufio.Scanner's 64 KiB are read whole, and heartbeat
// comments are skipped: the item after the snapshot is the next event.
func TestStreamLongLinesAndHeartbeats(t *testing.T) {
	s := newServer(t, redistestEmbedded, serverOpts{heartbeat: 10 * time.Millisecond})
	c := ctx(t)
	host := s.guest(t, "host")
	big := rs.State{}
	for i := range 7 {
		big[fmt.Sprint("k", i)] = strings.Repeat(fmt.Sprint(i), 8000)
	}
	req := arena("Big")
	req.State = &big
	room, err := host.CreateRoom(c, req)
	if err != nil {
		t.Fatal(err)
	}
	// an API key's stream: no presence events of its own
	st := rs.New(s.url, rs.WithAPIKey(s.keys.reader)).Stream(c, room.Room.Id, rs.IdleTimeout(10*time.Second))
	defer st.Close()
	first := until(t, st, func(ev rs.Event) bool { _, ok := ev.(*rs.Snapshot); return ok })
	snap := first[len(first)-1].(*rs.Snapshot)
	if len(snap.Raw) < 56000 || len(snap.State) != 7 || snap.State["k6"] != big["k6"] {
		t.Fatalf("snapshot of %d bytes, %d keys", len(snap.Raw), len(snap.State))
	}
	time.Sleep(100 * time.Millisecond) // heartbeats go out meanwhile (not asserted on time)
	value := strings.Repeat("v", 8000)
	if _, err := host.PatchState(c, room.Room.Id, rs.State{"k0": value}); err != nil {
		t.Fatal(err)
	}
	got := until(t, st, func(ev rs.Event) bool { _, ok := ev.(*rs.StateChanged); return ok })
	if k := kinds(got); k != "state" {
		t.Fatalf("after the snapshot: %s", k)
	}
	if got[0].(*rs.StateChanged).Set["k0"] != value {
		t.Fatal("the patch's value differs")
	}
}

// A stream that ends with token_expiring asks the token source again and
// resumes at once (no Reconnecting, no backoff), missing nothing.
func TestStreamTokenExpiring(t *testing.T) {
	s := newServer(t, redistestEmbedded, serverOpts{})
	c := ctx(t)
	sign := func(ttl time.Duration) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u_expiring", "name": "exp",
			"exp": time.Now().Add(ttl).Unix()}).SignedString([]byte(jwtSecret))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	long := rs.New(s.url, rs.WithToken(sign(time.Hour)))
	room, err := long.CreateRoom(c, arena("Expiring"))
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	src := func(context.Context, string) (string, error) {
		if calls.Add(1) == 1 {
			return sign(3 * time.Second), nil // the stream ends half of it later
		}
		return sign(time.Hour), nil
	}
	st := rs.New(s.url, rs.WithTokenSource(src)).Stream(c, room.Room.Id)
	defer st.Close()
	got := until(t, st, func(ev rs.Event) bool { _, ok := ev.(*rs.TokenExpiring); return ok })
	if _, err := long.PatchState(c, room.Room.Id, rs.State{"n": 1}); err != nil {
		t.Fatal(err)
	}
	got = append(got, until(t, st, both(func(ev rs.Event) bool { return stateN(ev) == 1 }, isResumed))...)
	k := kinds(got)
	// (the replay may hold the player's own player_disconnected and the
	// state, before resumed, or the state may come live after it)
	if !strings.Contains(k, "token_expiring connecting open ") || strings.Contains(k, "reconnecting") ||
		count[*rs.Resumed](got) != 1 || count[*rs.Snapshot](got) != 1 || count[*rs.UnknownEvent](got) != 0 {
		t.Fatalf("items: %s", k)
	}
	if calls.Load() != 2 {
		t.Fatalf("token source called %d times", calls.Load())
	}
}

// The lobby stream starts with the rooms list, follows changes, and starts
// over with a new list after a drop.
func TestLobbyStream(t *testing.T) {
	eachBackend(t, serverOpts{}, func(t *testing.T, s *server) {
		c := ctx(t)
		host := s.guest(t, "host")
		st := rs.New(s.url, rs.WithAPIKey(s.keys.reader), fastBackoff).LobbyStream(c, rs.LobbyFilter{Mode: "battle"})
		defer st.Close()
		if err := st.Ready(); err != nil {
			t.Fatal(err)
		}
		a, err := host.CreateRoom(c, arena("A"))
		if err != nil {
			t.Fatal(err)
		}
		got := until(t, st, func(ev rs.Event) bool { ch, ok := ev.(*rs.LobbyChange); return ok && ch.Room.Id == a.Room.Id })
		if ch := got[len(got)-1].(*rs.LobbyChange); ch.Type != "room_added" || ch.Room.Name != "A" {
			t.Fatalf("change %+v", ch)
		}
		s.dropStreams(t)
		b, err := host.CreateRoom(c, arena("B"))
		if err != nil {
			t.Fatal(err)
		}
		got = until(t, st, func(ev rs.Event) bool { _, ok := ev.(*rs.LobbyRooms); return ok })
		list := got[len(got)-1].(*rs.LobbyRooms)
		if !strings.HasSuffix(kinds(got), "reconnecting connecting open resumed(snapshot=true) rooms") || len(list.Rooms) != 2 {
			t.Fatalf("items %s, rooms %+v", kinds(got), list.Rooms)
		}
		ids := map[string]bool{list.Rooms[0].Id: true, list.Rooms[1].Id: true}
		if !ids[a.Room.Id] || !ids[b.Room.Id] {
			t.Fatalf("rooms %+v", list.Rooms)
		}
	})
}

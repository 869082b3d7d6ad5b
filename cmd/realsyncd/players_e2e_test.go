package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// meEvent is one event of a personal stream.
type meEvent struct {
	typ  string
	data map[string]any
}

// meStream is an open personal stream whose events a goroutine reads into
// events (closed when the stream ends).
type meStream struct {
	events chan meEvent
	close  func()
}

// openMe opens token's personal stream on platform at base, failing
// unless 200.
func openMe(t *testing.T, base, token, platform string) *meStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/me/events?platform="+platform, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		cancel()
		t.Fatalf("open %s: %v %v", platform, res, err)
	}
	s := &meStream{events: make(chan meEvent, 100), close: func() { cancel(); res.Body.Close() }}
	t.Cleanup(s.close)
	go func() {
		defer close(s.events)
		rd := bufio.NewReader(res.Body)
		var e meEvent
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "" && e.typ != "":
				s.events <- e
				e = meEvent{}
			case strings.HasPrefix(line, "event: "):
				e.typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(line[6:]), &e.data)
			}
		}
	}()
	return s
}

// next returns the stream's next event within d; ok false when it ended.
func (s *meStream) next(t *testing.T, d time.Duration) (meEvent, bool) {
	t.Helper()
	select {
	case e, ok := <-s.events:
		return e, ok
	case <-time.After(d):
		t.Fatalf("no event within %v", d)
		return meEvent{}, false
	}
}

func guestWithID(t *testing.T, in *instance, name string) (token, id string) {
	t.Helper()
	status, body := call(t, "POST", in.url+"/v1/auth/guest", "", map[string]any{"name": name})
	if status != 201 {
		t.Fatalf("guest: %d %v", status, body)
	}
	return body["token"].(string), body["userId"].(string)
}

// watchedByBob makes the guests alice (on aliceOn) and bob (on bobOn),
// opens bob's personal stream (web) on bobOn, whose first event is its
// snapshot, and has bob follow alice through via: the stream's next event
// is alice's presence, offline (she has no session yet). It returns
// alice's token and id, bob's token and his stream.
func watchedByBob(t *testing.T, aliceOn, bobOn, via *instance) (alice, aliceID, bob string, watch *meStream) {
	t.Helper()
	alice, aliceID = guestWithID(t, aliceOn, "alice")
	bob, _ = guestWithID(t, bobOn, "bob")
	watch = openMe(t, bobOn.url, bob, "web")
	if e, _ := watch.next(t, 10*time.Second); e.typ != "snapshot" {
		t.Fatalf("first event %+v", e)
	}
	if status, body := call(t, "PUT", via.url+"/v1/me/following", bob, map[string]any{"userIds": []string{aliceID}}); status != 200 {
		t.Fatalf("follow: %d %v", status, body)
	}
	if e, _ := watch.next(t, 10*time.Second); e.typ != "presence" || e.data["online"] != false {
		t.Fatalf("current status %+v", e)
	}
	return alice, aliceID, bob, watch
}

// Two realsyncd processes: a follower's stream on one sees a user come
// online on the other; a second login on pc through the first instance
// replaces the pc session on the second (session_replaced, then the end);
// the second instance killed with a console session open, the follower
// sees the user lose console within the TTL (1 s) plus the debounce (3
// s, a lapse's as a close's) plus the janitor's sweeps, and GET
// /v1/presence agrees.
func TestPersonalStreamsAcrossInstances(t *testing.T) {
	t.Parallel()
	bin := raceBinary(t)
	for _, backend := range []string{"standalone", "cluster"} {
		t.Run(backend, func(t *testing.T) {
			env := append(backendEnv(t, backend), "REALSYNC_PRESENCE_TTL=1s")
			a, b := start(t, bin, env...), start(t, bin, env...)
			alice, aliceID, bob, watch := watchedByBob(t, a, a, b)
			pcB := openMe(t, b.url, alice, "pc")
			pcB.next(t, 10*time.Second)
			if e, _ := watch.next(t, 10*time.Second); e.data["online"] != true || len(e.data["platforms"].([]any)) != 1 {
				t.Fatalf("alice on pc: %+v", e)
			}
			pcA := openMe(t, a.url, alice, "pc")
			pcA.next(t, 10*time.Second)
			if e, _ := pcB.next(t, 10*time.Second); e.typ != "session_replaced" {
				t.Fatalf("the old pc session got %+v", e)
			}
			if e, ok := pcB.next(t, 10*time.Second); ok {
				t.Fatalf("the old pc session goes on: %+v", e)
			}
			console := openMe(t, b.url, alice, "console")
			console.next(t, 10*time.Second)
			if e, _ := watch.next(t, 10*time.Second); strings.Join(platforms(e), ",") != "pc,console" {
				t.Fatalf("alice on pc and console: %+v", e)
			}
			killed := time.Now()
			b.kill()
			e, _ := watch.next(t, 15*time.Second)
			if strings.Join(platforms(e), ",") != "pc" || e.data["online"] != true {
				t.Fatalf("after the kill: %+v", e)
			}
			t.Logf("console offline %v after the kill", time.Since(killed).Round(10*time.Millisecond))
			_, body := call(t, "GET", a.url+"/v1/presence?userIds="+aliceID, bob, nil)
			if p := body["users"].([]any)[0].(map[string]any); p["version"] != e.data["version"] {
				t.Errorf("GET /v1/presence %v, stream %v", p, e.data)
			}
		})
	}
}

func platforms(e meEvent) []string {
	var out []string
	ps, _ := e.data["platforms"].([]any)
	for _, p := range ps {
		out = append(out, p.(string))
	}
	return out
}

// SIGTERM ends a personal stream, whose session closes, debounced as a
// room stream's presence (REALSYNC_PRESENCE_DEBOUNCE, 6 s here, twice the
// default, so that a stalled machine's slow reopening stays within it):
// the client back on the other instance at once, its follower sees no
// offline and no online (it saw both before); the session closed for good,
// the follower sees the user offline once the debounce passed. The TTL is
// a minute, so no lapse plays a part.
func TestShutdownDebouncesOnlineStatus(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	env := append(backendEnv(t, "standalone"), "REALSYNC_PRESENCE_TTL=60s", "REALSYNC_PRESENCE_DEBOUNCE=6s")
	a, b := start(t, bin, env...), start(t, bin, env...)
	alice, _, _, watch := watchedByBob(t, a, b, b)
	pc := openMe(t, a.url, alice, "pc")
	pc.next(t, 10*time.Second)
	if e, _ := watch.next(t, 10*time.Second); e.data["online"] != true {
		t.Fatalf("alice on pc: %+v", e)
	}
	stopped := make(chan struct{})
	go func() { defer close(stopped); a.stop(t) }()
	for _, ok := pc.next(t, 10*time.Second); ok; _, ok = pc.next(t, 10*time.Second) {
	}
	again := openMe(t, b.url, alice, "pc") // back at once, as the retry hint has it
	again.next(t, 10*time.Second)
	<-stopped
	select {
	case e, ok := <-watch.events:
		t.Fatalf("the follower saw %+v (%v) for a reconnect within the debounce", e, ok)
	case <-time.After(8 * time.Second): // the debounce, a janitor pass and a margin
	}
	again.close()
	if e, _ := watch.next(t, 10*time.Second); e.typ != "presence" || e.data["online"] != false {
		t.Fatalf("after the last session closed: %+v, want offline", e)
	}
}

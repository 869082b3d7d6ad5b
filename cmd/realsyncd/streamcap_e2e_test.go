package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/invariants"
	"github.com/realsync/realsync/internal/rediskeys"
)

// eventually polls ok every 250 ms (gently: every try is a stream open)
// for up to 15 s.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15s", what)
		}
	}
}

// openRaw opens the event stream at url with token; for a 200 it returns
// a function that closes the connection, else the problem's code.
func openRaw(t *testing.T, url, token string) (status int, code string, closeConn func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		defer cancel()
		defer res.Body.Close()
		var p map[string]any
		json.NewDecoder(res.Body).Decode(&p)
		if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("refusal of type %q", ct)
		}
		code, _ := p["code"].(string)
		return res.StatusCode, code, nil
	}
	closed := false
	closeConn = func() {
		if !closed {
			closed = true
			cancel()
			res.Body.Close()
		}
	}
	t.Cleanup(closeConn)
	return 200, "", closeConn
}

// One user, two instances, a cap of 3 streams: streams of two rooms and
// the lobby spread over both instances hold the 3 places, the next stream
// of either kind is refused 429 STREAM_LIMIT (the room untouched); closing
// one frees a place; the places of an instance killed with its streams
// open come free once their leases lapse (TTL 3s: 1s let a loaded
// machine's stall of an instance pass for a lapse); once every stream is
// closed no key of them is left.
func TestStreamLimitAcrossInstances(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, backend := range []string{"standalone", "cluster"} {
		t.Run(backend, func(t *testing.T) {
			env := append(backendEnv(t, backend), "REALSYNC_MAX_STREAMS_PER_USER=3", "REALSYNC_PRESENCE_TTL=3s")
			a, b := start(t, bin, env...), start(t, bin, env...)
			tok := guest(t, a, "streamer")
			var rooms []string
			for range 2 {
				status, body := call(t, "POST", a.url+"/v1/rooms", tok, map[string]any{"name": "r", "mode": "m", "region": "r"})
				if status != 201 {
					t.Fatalf("create: %d %v", status, body)
				}
				rooms = append(rooms, body["room"].(map[string]any)["id"].(string))
			}
			roomURL := func(in *instance, i int) string { return in.url + "/v1/rooms/" + rooms[i] + "/events" }
			lobbyURL := func(in *instance) string { return in.url + "/v1/lobby/events" }
			var closers []func()
			for _, url := range []string{roomURL(a, 0), lobbyURL(b), roomURL(b, 1)} {
				status, code, c := openRaw(t, url, tok)
				if status != 200 {
					t.Fatalf("%s: %d %s", url, status, code)
				}
				closers = append(closers, c)
			}
			ver := roomVersion(t, a, rooms[0], tok)
			for _, url := range []string{roomURL(b, 0), lobbyURL(a), roomURL(a, 1)} {
				if status, code, _ := openRaw(t, url, tok); status != 429 || code != "STREAM_LIMIT" {
					t.Errorf("a 4th stream %s: %d %s, want 429 STREAM_LIMIT", url, status, code)
				}
			}
			if v := roomVersion(t, a, rooms[0], tok); v != ver {
				t.Errorf("a refused stream changed the room: version %d, was %d", v, ver)
			}
			// another user has places of their own
			status, code, other := openRaw(t, lobbyURL(a), guest(t, a, "other"))
			if status != 200 {
				t.Fatalf("another user's stream: %d %s", status, code)
			}

			closers[0]() // the room stream on a: its place comes free once a sees the client gone
			var reopened func()
			eventually(t, "a closed stream's place to come free", func() bool {
				status, code, c := openRaw(t, roomURL(a, 0), tok)
				if status != 200 && code != "STREAM_LIMIT" {
					t.Fatalf("reopen: %d %s", status, code)
				}
				reopened = c
				return status == 200
			})
			if status, code, _ := openRaw(t, lobbyURL(a), tok); status != 429 || code != "STREAM_LIMIT" {
				t.Errorf("over the cap again: %d %s", status, code)
			}

			b.kill() // holds the lobby stream and room 1's: both lapse within the TTL
			var more []func()
			eventually(t, "a killed instance's places to come free", func() bool {
				status, code, c := openRaw(t, lobbyURL(a), tok)
				if status != 200 && code != "STREAM_LIMIT" {
					t.Fatalf("after the kill: %d %s", status, code)
				}
				if c != nil {
					more = append(more, c)
				}
				return len(more) == 2
			})
			if status, code, _ := openRaw(t, roomURL(a, 1), tok); status != 429 || code != "STREAM_LIMIT" {
				t.Errorf("over the cap after the lapse: %d %s", status, code)
			}

			c := client(t, env)
			prefix := env[0][len("REALSYNC_KEY_PREFIX="):]
			for _, f := range append(more, reopened, other) {
				f()
			}
			eventually(t, "the user's streams key to go", func() bool {
				keys, err := rediskeys.Scan(context.Background(), c, "{"+prefix+":*}:streams:*")
				if err != nil {
					t.Fatal(err)
				}
				return len(keys) == 0
			})
			if bad, err := invariants.Check(context.Background(), c, prefix); err != nil || len(bad) > 0 {
				t.Errorf("invariants: %v %v", bad, err)
			}
		})
	}
}

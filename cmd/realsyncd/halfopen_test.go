package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/netns"
	"github.com/realsync/realsync/internal/redistest"
)

// halfOpenBound is how long a test waits for the server to notice a
// client that vanished: generous against heartbeat 1 s + user timeout 2 s,
// far below the kernel's own retransmission timeout (about 15 minutes).
const halfOpenBound = 20 * time.Second

// A client that vanished without closing its connection (a phone that
// changed network: a real half-open connection, its network link taken
// down, so nothing more arrives and nothing is closed) holds its personal
// session and its seat's presence until the server notices. With
// REALSYNC_TCP_USER_TIMEOUT the unacknowledged heartbeats end the
// connections: the streams end and their leases are released, so a new
// session of the user opens again under REALSYNC_SESSION_POLICY=reject-new
// (over TLS too: the timeout is set below it) and the room's owner sees
// the player disconnected. With 0 (the kernel's retransmission timeout)
// the session is still held, refused SESSION_EXISTS, and the player still
// connected, when the same time is up.
func TestHalfOpenClientReleasesItsSession(t *testing.T) {
	if why := netns.Unavailable(); why != "" {
		t.Skip(why)
	}
	bin := buildBinary(t)
	cert, key, _ := redistest.SelfSigned(t)
	for _, tc := range []struct {
		name     string
		timeout  string
		tls      bool
		released bool
	}{
		{"user-timeout", "2s", false, true},
		{"user-timeout-tls", "2s", true, true},
		{"kernel", "0", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := netns.New(t)
			toRedis, phoneNet := ns.Link(t), ns.Link(t)
			srv, err := redistest.StartServer("--bind", "127.0.0.1", toRedis.Host)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Stop)
			env := []string{"REALSYNC_KEY_PREFIX=" + redistest.Prefix(t), "REALSYNC_JWT_SECRET=e2e-secret",
				"REALSYNC_REDIS_URL=redis://" + toRedis.Host + ":" + fmt.Sprint(srv.Port),
				"REALSYNC_SESSION_POLICY=reject-new", "REALSYNC_SSE_HEARTBEAT=1s", "REALSYNC_TCP_USER_TIMEOUT=" + tc.timeout,
				"REALSYNC_RATE_LIMITS=off", "REALSYNC_ADDR=:8080"} // every link of the namespace: the observer's (toRedis) and the phone's
			if tc.tls {
				env = append(env, "REALSYNC_TLS_CERT="+cert, "REALSYNC_TLS_KEY="+key)
			}
			in := ready(t, launchCmd(t, ns.Command(bin), toRedis.Inside+":8080", env...))
			insecure := &tls.Config{InsecureSkipVerify: true}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: insecure}}
			// the phone: player 2 of a room whose owner watches it (over
			// plain HTTP: the helpers' client), or a guest alone (TLS)
			var token, room string
			var watcher *follower
			if tc.tls {
				res, err := client.Post(in.url+"/v1/auth/guest", "application/json", strings.NewReader(`{"name":"phone"}`))
				if err != nil {
					t.Fatal(err)
				}
				var g struct{ Token string }
				json.NewDecoder(res.Body).Decode(&g)
				res.Body.Close()
				token = g.Token
			} else {
				var toks []string
				room, toks = party(t, in, 1)
				token = toks[1]
				watcher = follow(t, []string{in.url}, room, toks[0], false)
			}
			// open opens the user's personal stream (or path) at base: its
			// status, and the open response while it streams
			open := func(c *http.Client, base string, path ...string) (int, *http.Response) {
				p := "/v1/me/events?platform=mobile"
				if len(path) > 0 {
					p = path[0]
				}
				req, _ := http.NewRequest("GET", base+p, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				res, err := c.Do(req)
				if err != nil {
					t.Fatalf("open %s: %v", base, err)
				}
				if res.StatusCode != 200 {
					res.Body.Close()
				}
				return res.StatusCode, res
			}
			scheme := strings.SplitN(in.url, "://", 2)[0]
			phone := &http.Client{Transport: &http.Transport{TLSClientConfig: insecure}}
			status, stream := open(phone, scheme+"://"+phoneNet.Inside+":8080")
			if status != 200 {
				t.Fatalf("phone's stream: %d", status)
			}
			buf := make([]byte, 64)
			if _, err := stream.Body.Read(buf); err != nil { // the stream's first bytes: it is served
				t.Fatal(err)
			}
			if status, _ := open(client, in.url); status != 409 {
				t.Fatalf("a second session while the phone's is open: %d, want 409 (reject-new)", status)
			}
			var roomStream *http.Response
			if watcher != nil {
				if status, roomStream = open(phone, scheme+"://"+phoneNet.Inside+":8080", "/v1/rooms/"+room+"/events"); status != 200 {
					t.Fatalf("phone's room stream: %d", status)
				}
				start := time.Now()
				for !connected(watcher.all(), 2) {
					if time.Since(start) > halfOpenBound {
						t.Fatalf("the owner never saw the phone connected: %s", types(watcher.all()))
					}
					time.Sleep(50 * time.Millisecond)
				}
			}

			phoneNet.Cut() // the phone left that network; its side is gone
			cut := time.Now()
			stream.Body.Close()
			if roomStream != nil {
				roomStream.Body.Close()
			}
			var reopened time.Duration
			for time.Since(cut) < halfOpenBound {
				time.Sleep(250 * time.Millisecond)
				status, res := open(client, in.url)
				if status == 200 {
					res.Body.Close()
					reopened = time.Since(cut)
					break
				}
				if status != 409 {
					t.Fatalf("a new session after the cut: %d, want 409 or 200", status)
				}
			}
			if watcher != nil { // the room's view: the player disconnected, or still connected
				for tc.released && !disconnected(watcher.all(), 2) && time.Since(cut) < halfOpenBound {
					time.Sleep(50 * time.Millisecond)
				}
				if gone := disconnected(watcher.all(), 2); gone != tc.released {
					t.Errorf("%v after the cut the owner's stream shows the phone disconnected: %v, want %v; events: %s",
						time.Since(cut).Round(time.Second), gone, tc.released, types(watcher.all()))
				}
			}
			switch {
			case tc.released && reopened == 0:
				t.Fatalf("REALSYNC_TCP_USER_TIMEOUT=%s: the vanished phone's session still held %v after its link went down", tc.timeout, halfOpenBound)
			case !tc.released && reopened != 0:
				t.Fatalf("REALSYNC_TCP_USER_TIMEOUT=0: a new session opened %v after the cut, though the kernel keeps the connection about 15 minutes: the comparison shows nothing", reopened.Round(time.Millisecond))
			case tc.released:
				t.Logf("the phone's session released %v after its link went down", reopened.Round(time.Millisecond))
			default:
				t.Logf("with the kernel's timeout the session was still held %v after the cut", halfOpenBound)
			}
		})
	}
}

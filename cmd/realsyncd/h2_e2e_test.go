package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
)

// h2Client is an HTTP client of one protocol that counts the connections
// it dials and checks the protocol of every response.
type h2Client struct {
	*http.Client
	dials atomic.Int32
	major int // every response's ProtoMajor must be this
}

// newH2Client: over https, HTTP/2 by ALPN when http2 (else HTTP/1.1 only),
// trusting pool; over http, h2c with prior knowledge when http2 (else
// HTTP/1.1).
func newH2Client(t *testing.T, pool *x509.CertPool, http2 bool) *h2Client {
	c := &h2Client{major: 1}
	var dialer net.Dialer
	var protocols http.Protocols
	if http2 {
		c.major = 2
		protocols.SetHTTP2(true)
		protocols.SetUnencryptedHTTP2(true)
	} else {
		protocols.SetHTTP1(true)
	}
	tr := &http.Transport{Protocols: &protocols, TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c.dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		}}
	t.Cleanup(tr.CloseIdleConnections)
	c.Client = &http.Client{Transport: tr}
	return c
}

// do sends a request with a JSON body (when not nil) and token (when not
// ""), and checks the answer's protocol.
func (c *h2Client) do(t *testing.T, ctx context.Context, method, url, token string, body any) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if res.ProtoMajor != c.major {
		t.Errorf("%s %s answered over %s, want HTTP/%d", method, url, res.Proto, c.major)
	}
	return res
}

// call is do for a JSON answer with status want.
func (c *h2Client) call(t *testing.T, method, url, token string, body any, want int) map[string]any {
	t.Helper()
	res := c.do(t, t.Context(), method, url, token, body)
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d %v, want %d", method, url, res.StatusCode, out, want)
	}
	return out
}

// stream is an open event stream, read in the background.
type stream struct {
	path   string
	mu     sync.Mutex
	events []string // event types, in order
	pings  int      // heartbeat comments
	retry  int      // the last retry hint (ms)
	err    error    // why reading ended, once ended
	// endedAt: when reading ended, set before ended is closed
	endedAt time.Time
	ended   chan struct{}
	update  chan struct{}
}

// open opens an event stream at path with token; the stream is read until
// it ends or the test does.
func (c *h2Client) open(t *testing.T, base, path, token string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res := c.do(t, ctx, "GET", base+path, token, nil)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	s := &stream{path: path, ended: make(chan struct{}), update: make(chan struct{}, 1)}
	go func() {
		defer close(s.ended)
		defer res.Body.Close()
		rd := bufio.NewReader(res.Body)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				s.mu.Lock()
				s.err, s.endedAt = err, time.Now()
				s.mu.Unlock()
				return
			}
			line = strings.TrimSuffix(line, "\n")
			s.mu.Lock()
			switch {
			case strings.HasPrefix(line, "event: "):
				s.events = append(s.events, line[7:])
			case strings.HasPrefix(line, ": ping"):
				s.pings++
			case strings.HasPrefix(line, "retry: "):
				s.retry, _ = strconv.Atoi(line[7:])
			}
			s.mu.Unlock()
			select {
			case s.update <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-s.ended })
	return s
}

// wait waits up to within for ok to hold of the stream's events and pings.
func (s *stream) wait(t *testing.T, what string, within time.Duration, ok func(events []string, pings int) bool) {
	t.Helper()
	deadline := time.After(within)
	for {
		s.mu.Lock()
		events, pings := append([]string(nil), s.events...), s.pings
		s.mu.Unlock()
		if ok(events, pings) {
			return
		}
		select {
		case <-s.update:
		case <-s.ended:
			s.mu.Lock()
			err := s.err
			s.mu.Unlock()
			t.Fatalf("%s ended (%v) before %s; events %v", s.path, err, what, events)
		case <-deadline:
			t.Fatalf("%s: no %s within %s; events %v, %d pings", s.path, what, within, events, pings)
		}
	}
}

// Over HTTP/2, with TLS and with h2c: one client opens 20 event streams
// (10 room, 10 lobby) and makes its REST calls all over ONE connection;
// every stream gets its first event (snapshot, rooms), heartbeats and a
// later event as it happens; HTTP/1.1 clients are still served on the same
// port; SIGTERM ends every HTTP/2 stream with its retry hint and the
// process exits cleanly.
func TestHTTP2StreamsShareOneConnection(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	cert, key, pool := redistest.SelfSigned(t)
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"tls", []string{"REALSYNC_TLS_CERT=" + cert, "REALSYNC_TLS_KEY=" + key}},
		{"h2c", []string{"REALSYNC_H2C=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append(backendEnv(t, "standalone"), loadTestLimits, "REALSYNC_SSE_HEARTBEAT=1s")
			in := start(t, bin, append(env, tc.env...)...)
			if want := map[string]string{"tls": "https://", "h2c": "http://"}[tc.name]; !strings.HasPrefix(in.url, want) {
				t.Fatalf("url %s, want %s", in.url, want)
			}
			if tc.name == "tls" {
				// net/http's own lines go through the instance's log: a
				// handshake a client broke off, at debug
				plain, err := net.Dial("tcp", strings.TrimPrefix(in.url, "https://"))
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprint(plain, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				io.Copy(io.Discard, plain)
				plain.Close()
				for began := time.Now(); !strings.Contains(grep(in.logText(), `msg="http server: TLS handshake broken off"`), `level=DEBUG`) ||
					!strings.Contains(grep(in.logText(), `msg="http server: TLS handshake broken off"`), "TLS handshake error"); time.Sleep(20 * time.Millisecond) {
					if time.Since(began) > 5*time.Second {
						t.Fatalf("no debug line of net/http's handshake error:\n%s", in.logText())
					}
				}
			}
			c := newH2Client(t, pool, true)
			tokens := make([]string, 10)
			for i := range tokens {
				tokens[i] = c.call(t, "POST", in.url+"/v1/auth/guest", "", map[string]any{"name": fmt.Sprint("p", i)}, 201)["token"].(string)
			}
			created := c.call(t, "POST", in.url+"/v1/rooms", tokens[0], map[string]any{"name": "r", "mode": "h2", "region": "eu",
				"maxPlayers": 100, "statePolicy": "open"}, 201)
			id := created["room"].(map[string]any)["id"].(string)
			for _, tok := range tokens[1:] {
				c.call(t, "POST", in.url+"/v1/rooms/"+id+"/join", tok, nil, 200)
			}
			var rooms, lobbies []*stream
			for _, tok := range tokens {
				rooms = append(rooms, c.open(t, in.url, "/v1/rooms/"+id+"/events", tok))
				lobbies = append(lobbies, c.open(t, in.url, "/v1/lobby/events?mode=h2&region=eu", tok))
			}
			all := append(append([]*stream(nil), rooms...), lobbies...)
			for i, s := range all {
				first := "snapshot"
				if i >= len(rooms) {
					first = "rooms"
				}
				s.wait(t, first, 10*time.Second, func(es []string, _ int) bool { return len(es) > 0 && es[0] == first })
			}
			// Later events: a state change for the room streams, a new room
			// of the mode for the lobby streams.
			c.call(t, "PATCH", in.url+"/v1/rooms/"+id+"/state", tokens[0], map[string]any{"over": "h2"}, 200)
			c.call(t, "POST", in.url+"/v1/rooms", tokens[1], map[string]any{"name": "r2", "mode": "h2", "region": "eu", "maxPlayers": 4}, 201)
			for i, s := range all {
				later := "state"
				if i >= len(rooms) {
					later = "room_added"
				}
				s.wait(t, later+" and a heartbeat", 10*time.Second, func(es []string, pings int) bool {
					return pings > 0 && strings.Contains(strings.Join(es, " "), later)
				})
			}
			// a body refused (413) ends its own stream, not the connection
			// the others share ("Connection: close" over HTTP/2 is a GOAWAY:
			// the next call dialed anew)
			c.call(t, "PATCH", in.url+"/v1/rooms/"+id+"/state", tokens[0], map[string]any{"big": strings.Repeat("x", 1<<20)}, 413)
			c.call(t, "GET", in.url+"/v1/rooms/"+id, tokens[0], nil, 200)
			if n := c.dials.Load(); n != 1 {
				t.Errorf("%d connections dialed for 20 streams and 24 REST calls, want 1", n)
			}
			if got := in.metric(t, "realsync_sse_streams", `kind="room"`); got != "10" {
				t.Errorf("realsync_sse_streams{kind=room} %s, want 10", got)
			}

			// HTTP/1.1 still works on the same port, streams included.
			h1 := newH2Client(t, pool, false)
			h1.call(t, "GET", in.url+"/v1/rooms/"+id, tokens[2], nil, 200)
			old := h1.open(t, in.url, "/v1/rooms/"+id+"/events", tokens[2])
			old.wait(t, "snapshot", 10*time.Second, func(es []string, _ int) bool { return len(es) > 0 && es[0] == "snapshot" })

			// SIGTERM ends every stream, each with a retry hint, and the
			// process exits 0 (stop fails the test otherwise: a stream
			// left open would hold the shutdown until its timeout).
			in.stop(t)
			for _, s := range append(all, old) {
				select {
				case <-s.ended:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s still open after the shutdown", s.path)
				}
				s.mu.Lock()
				retry := s.retry
				s.mu.Unlock()
				if retry < 500 || retry >= 2000 {
					t.Errorf("%s ended with retry %d ms, want 500..1999", s.path, retry)
				}
			}
		})
	}
}

// metric reads one sample of name whose labels contain label from the
// instance's /metrics ("" when absent).
func (in *instance) metric(t *testing.T, name, label string) string {
	t.Helper()
	res, err := in.probe.Get(in.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, label) {
			return line[strings.LastIndex(line, " ")+1:]
		}
	}
	return ""
}

// Over HTTP/2 a stalled stream shares its connection with others: a client
// that stops reading one stream (its flow-control window fills, the
// server's writes to it block) must lose only that stream, cut off as a
// slow reader, while the stream beside it on the same connection gets
// every event in order and the connection stays usable.
func TestHTTP2StalledStreamIsCutOffAlone(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	in := start(t, bin, append(backendEnv(t, "standalone"), loadTestLimits, "REALSYNC_H2C=true")...)
	id, toks := party(t, in, 1)
	c := newH2Client(t, nil, true)
	reading := c.open(t, in.url, "/v1/rooms/"+id+"/events", toks[0])
	reading.wait(t, "snapshot", 10*time.Second, func(es []string, _ int) bool { return len(es) > 0 && es[0] == "snapshot" })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stalled := c.do(t, ctx, "GET", in.url+"/v1/rooms/"+id+"/events", toks[1], nil)
	defer stalled.Body.Close() // never read
	if stalled.StatusCode != 200 {
		t.Fatalf("stalled stream: %d", stalled.StatusCode)
	}
	// 1 500 events of 8 KB: 12 MB, three times the client's 4 MB window of
	// one HTTP/2 stream. They go in batches of 100 that the reading stream
	// has received before the next: a reader that keeps up is never a slow
	// one, however loaded the machine, so only the stall can cut a stream.
	big := strings.Repeat("x", 8000)
	count := func(es []string) (states int, gone bool) {
		for _, e := range es {
			states += btoi(e == "state")
			gone = gone || e == "player_disconnected"
		}
		return states, gone
	}
	for batch := range 15 {
		for i := range 100 {
			if !patch(t, in, id, toks[0], map[string]any{"big": big + strconv.Itoa(batch*100+i)}) {
				t.Fatal("patch failed")
			}
		}
		reading.wait(t, fmt.Sprint((batch+1)*100, " state events"), 30*time.Second, func(es []string, _ int) bool {
			states, _ := count(es)
			return states >= (batch+1)*100
		})
	}
	final := roomVersion(t, in, id, toks[0])
	reading.wait(t, "every state event and player 2's disconnection", 60*time.Second, func(es []string, _ int) bool {
		states, gone := count(es)
		return states == 1500 && gone
	})
	in.awaitLogThat(t, "the cut of the stalled stream", streamCut(2))
	// The connection is still the only one, and still serves.
	if got := int64(c.call(t, "GET", in.url+"/v1/rooms/"+id, toks[0], nil, 200)["version"].(float64)); got < final {
		t.Errorf("room version %d after the stall, want ≥ %d", got, final)
	}
	if n := c.dials.Load(); n != 1 {
		t.Errorf("%d connections dialed, want 1", n)
	}
}

// A client that stops reading one HTTP/2 stream, when what it leaves
// unread fills the stream's window but not the stream's queue: the Send
// under way blocks, nothing else ends the stream, and the server's stall
// watch resets it once the Send has been under way for the write timeout
// (10 s), through every middleware's ResponseWriter. The client's
// window is 64 KiB a stream: 40 events of 8 KB, about 8 of which fill
// it, the rest waiting in the queue of 256.
func TestHTTP2StalledWriteIsCutByTheWatch(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	in := start(t, bin, append(backendEnv(t, "standalone"), loadTestLimits, "REALSYNC_H2C=true")...)
	id, toks := party(t, in, 1)
	c := newH2Client(t, nil, true)
	c.Transport.(*http.Transport).HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerStream: 64 << 10}
	stalled := c.do(t, t.Context(), "GET", in.url+"/v1/rooms/"+id+"/events", toks[1], nil)
	defer stalled.Body.Close() // never read
	if stalled.StatusCode != 200 {
		t.Fatalf("stalled stream: %d", stalled.StatusCode)
	}
	big := strings.Repeat("x", 8000)
	for i := range 40 {
		if !patch(t, in, id, toks[0], map[string]any{"big": big + strconv.Itoa(i)}) {
			t.Fatal("patch failed")
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		l := grep(in.logText(), "player=2")
		if strings.Contains(l, "why=slow") {
			t.Fatalf("the stalled stream was cut as slow, not by the watch:\n%s", l)
		}
		if strings.Contains(l, "why=write_error") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stalled stream's write was not cut within 60 s:\n%s", l)
		}
	}
}

// Over HTTP/2 a write deadline is a timer that resets the stream when it
// fires, write or no write: an event stream that stays quiet longer than
// the server's per-write timeout (10 s) between heartbeats must not be
// reset by a deadline left from its last write (it was, before Send
// cleared it: every quiet h2 stream died 10 s after its last event).
func TestHTTP2QuietStreamOutlivesWriteTimeout(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	in := start(t, bin, append(backendEnv(t, "standalone"), "REALSYNC_H2C=true", "REALSYNC_SSE_HEARTBEAT=60s")...)
	id, toks := party(t, in, 0)
	c := newH2Client(t, nil, true)
	s := c.open(t, in.url, "/v1/rooms/"+id+"/events", toks[0])
	s.wait(t, "snapshot", 10*time.Second, func(es []string, _ int) bool { return len(es) > 0 && es[0] == "snapshot" })
	time.Sleep(12 * time.Second) // quiet: no event, no heartbeat, past the 10 s write timeout
	if !patch(t, in, id, toks[0], map[string]any{"after": "quiet"}) {
		t.Fatal("patch failed")
	}
	s.wait(t, "the state event after 12 s of quiet", 10*time.Second, func(es []string, _ int) bool {
		return strings.Contains(strings.Join(es, " "), "state")
	})
}

// A shutdown spreads the ends of every kind of stream (room, lobby,
// personal) as it does those of taken-over HTTP/1.1 room streams
// (TestShutdownSpreadsStreamEnds): 102 streams multiplexed over one h2c
// connection (carried: they stay with their request), and 102 over
// HTTP/1.1 (taken over: the lobby and personal ones keep a goroutine of
// their own, which the shutdown waits for as net/http does not) end one by
// one over the spread, in no order of kind, each with its retry hint, and
// the process exits cleanly once the last ended.
func TestShutdownSpreadsStreamEndsOfEveryKind(t *testing.T) {
	t.Parallel()
	const users, spread = 34, time.Second // 102 streams: min(3 s, 102 / 100 a second), as the floor rate makes it
	bin := buildBinary(t)
	for _, tc := range []struct {
		name  string
		http2 bool
	}{{"h2c", true}, {"HTTP/1.1", false}} {
		t.Run(tc.name, func(t *testing.T) {
			env := append(backendEnv(t, "standalone"), loadTestLimits, "REALSYNC_H2C=true", "REALSYNC_SHUTDOWN_TIMEOUT=9s",
				"REALSYNC_SSE_SHUTDOWN_SPREAD=") // unset: launchCmd's 0 undone
			in := start(t, bin, env...)
			c := newH2Client(t, nil, tc.http2)
			tokens := make([]string, users)
			for i := range tokens {
				tokens[i] = c.call(t, "POST", in.url+"/v1/auth/guest", "", map[string]any{"name": fmt.Sprint("p", i)}, 201)["token"].(string)
			}
			created := c.call(t, "POST", in.url+"/v1/rooms", tokens[0], map[string]any{"name": "r", "mode": "h2", "region": "eu", "maxPlayers": 100}, 201)
			id := created["room"].(map[string]any)["id"].(string)
			for _, tok := range tokens[1:] {
				c.call(t, "POST", in.url+"/v1/rooms/"+id+"/join", tok, nil, 200)
			}
			kinds := []struct{ path, first string }{
				{"/v1/rooms/" + id + "/events", "snapshot"},
				{"/v1/lobby/events?mode=h2&region=eu", "rooms"},
				{"/v1/me/events?platform=pc", "snapshot"},
			}
			var all []*stream
			for _, tok := range tokens {
				for _, k := range kinds {
					s := c.open(t, in.url, k.path, tok)
					s.wait(t, k.first, 10*time.Second, func(es []string, _ int) bool { return len(es) > 0 && es[0] == k.first })
					all = append(all, s)
				}
			}
			if n := c.dials.Load(); tc.http2 && n != 1 {
				t.Fatalf("%d connections dialed, want the streams on 1", n)
			}
			term := time.Now()
			in.stop(t) // a stream left open would hold the shutdown to its timeout: exit 1
			ends := make([]time.Duration, len(all))
			for i, s := range all {
				select {
				case <-s.ended:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s still open after the shutdown", s.path)
				}
				s.mu.Lock()
				ends[i] = s.endedAt.Sub(term)
				if s.retry < 500 || s.retry >= 2000 {
					t.Errorf("%s ended with retry %d ms, want 500..1999", s.path, s.retry)
				}
				s.mu.Unlock()
			}
			first, last := slices.Min(ends), slices.Max(ends)
			t.Logf("the %d streams ended from %s to %s after SIGTERM (spread %s)", len(all), first.Round(time.Millisecond), last.Round(time.Millisecond), spread)
			if first < spread/time.Duration(len(all)) {
				t.Errorf("a stream ended %s after SIGTERM, before the spread's first share was due", first)
			}
			if last < spread {
				t.Errorf("the last stream ended %s after SIGTERM, before the spread (%s) was over", last, spread)
			}
			if last-first < spread/2 {
				t.Errorf("the streams ended within %s of each other, want them spread over %s", last-first, spread)
			}
			// each kind's ends are spread too: the streams are ended in a
			// random order, not kind by kind
			for k, kind := range kinds {
				var of []time.Duration
				for i := k; i < len(ends); i += len(kinds) {
					of = append(of, ends[i])
				}
				if d := slices.Max(of) - slices.Min(of); d < spread/2 {
					t.Errorf("the %s streams ended within %s of each other, want them spread over %s", kind.path, d, spread)
				}
			}
			// the spread is of the streams the hub held when it began: one
			// whose client saw its opening may not be among them yet (its
			// rest not begun), and is ended at the spread's end
			logs := in.logText()
			m := regexp.MustCompile(`ending the streams over the shutdown's spread" streams=(\d+) spread=(\S+)`).FindStringSubmatch(logs)
			if m == nil {
				t.Fatalf("the shutdown's log does not name the spread:\n%s", grep(logs, "spread"))
			}
			n, _ := strconv.Atoi(m[1])
			if d, err := time.ParseDuration(m[2]); n < len(all)-5 || n > len(all) || err != nil || d != time.Duration(n)*time.Second/100 {
				t.Errorf("the spread of %s streams over %s, want nearly %d over a hundredth of a second each", m[1], m[2], len(all))
			}
		})
	}
}

package api_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/metrics"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/internal/testlog"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// lineHeartbeat is the heartbeat of newLineEnv's hub, which sweeps its
// taken-over streams every half of it.
const lineHeartbeat = 300 * time.Millisecond

// newLineEnv is newEnvStore with a hub heartbeat of lineHeartbeat and the
// hub returned, for the tests of HTTP/1.1 streams taken over (eventLine),
// their connections watched by a Hangups of the server's.
func newLineEnv(t *testing.T, b redistest.Backend, q store.Quotas) (*env, *sse.Hub) {
	t.Helper()
	return newLineEnvWith(t, b, q, newHangups(t))
}

// newLineEnvWith is newLineEnv with hangups as the server's Hangups (nil:
// none, the streams' lines peek at their connections).
func newLineEnvWith(t *testing.T, b redistest.Backend, q store.Quotas, hangups *api.Hangups) (*env, *sse.Hub) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "test")
	st := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
		Prefix: redistest.Prefix(t), Shards: 4, Metrics: m, Quotas: q})
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hub := sse.NewHub(sse.Config{Source: st, Lobby: st.Listing(), Feed: st.Feed, RoomJSON: api.RoomJSON, Log: log, Metrics: m,
		Heartbeat: lineHeartbeat})
	h := api.NewHandler(api.Config{Rooms: rooms.NewService(st), Lobby: lobby.NewService(st.Listing()), Events: hub,
		Auth: &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true}, Ready: st.Ping, Spec: realsync.OpenAPI,
		Log: log, Metrics: m, MetricsHandler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), Hangups: hangups})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { hub.Close(); srv.Close() })
	return &env{t: t, url: srv.URL, store: st, logs: logs}, hub
}

// rawStream is an event stream read from a bare TCP connection, by the
// test's goroutine only: it adds no goroutine to the process.
type rawStream struct {
	conn net.Conn
	rd   *bufio.Reader
}

// openRaw sends GET path over a new connection, with hdr's name, value
// pairs, and reads the response up to the end of its first event (the
// snapshot); status is the response's.
func (e *env) openRaw(path string, hdr ...string) (s *rawStream, status int) {
	e.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	var extra strings.Builder
	for i := 0; i+1 < len(hdr); i += 2 {
		fmt.Fprintf(&extra, "%s: %s\r\n", hdr[i], hdr[i+1])
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n%s\r\n", path, extra.String())
	s = &rawStream{conn: conn, rd: bufio.NewReader(conn)}
	res, err := http.ReadResponse(s.rd, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if res.StatusCode != 200 {
		return s, res.StatusCode
	}
	// The body as chunks, read by net/http's strict chunked reader.
	body := bufio.NewReader(res.Body)
	for {
		line, err := body.ReadString('\n')
		if err != nil {
			e.t.Fatalf("stream ended before its snapshot: %v", err)
		}
		if line == "event: snapshot\n" {
			break
		}
	}
	conn.SetDeadline(time.Time{})
	return s, 200
}

// A plain HTTP/1.1 stream, whose connection the hub takes over after the
// snapshot, still speaks chunked SSE that Go's strict client reads: its
// headers, the snapshot, live events written by the hub, heartbeats, and
// a clean end of the body (the terminating chunk) when the player leaves.
func TestTakenOverStreamSpeaksChunkedSSE(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e, _ := newLineEnv(t, b, store.Quotas{})
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		id := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r"})["id"].(string)
		e.do("POST", "/v1/rooms/"+id+"/join", bob, nil)

		s := e.open("/v1/rooms/" + id + "/events?token=" + e.streamToken(bob, "/v1/rooms/"+id))
		if s.res.ProtoMajor != 1 || len(s.res.TransferEncoding) != 1 || s.res.TransferEncoding[0] != "chunked" || !s.res.Close {
			t.Fatalf("%s, transfer encoding %v, close %v", s.res.Proto, s.res.TransferEncoding, s.res.Close)
		}
		if f := s.next(); f.event != "snapshot" {
			t.Fatalf("first event %+v", f)
		}
		for i := range 3 {
			e.do("PATCH", "/v1/rooms/"+id+"/state", alice, map[string]any{"n": i})
			if f := s.next(); f.event != "state" || f.data["set"].(map[string]any)["n"] != float64(i) {
				t.Fatalf("event %d: %+v", i, f)
			}
		}
		// Quiet: heartbeats keep coming from the hub's sweep.
		for range 2 {
			if line, err := s.rd.ReadString('\n'); err != nil || line != ": ping\n" {
				t.Fatalf("want a heartbeat, got %q, %v", line, err)
			}
			s.rd.ReadString('\n')
		}
		want(t, e.do("POST", "/v1/rooms/"+id+"/leave", bob, nil), 204, "")
		if f := s.next(); f.event != "player_left" {
			t.Fatalf("want player_left, got %+v", f)
		}
		if rest, err := io.ReadAll(s.rd); err != nil || len(rest) != 0 {
			t.Fatalf("the body must end cleanly after player_left: %q, %v", rest, err)
		}
	})
}

// A client that closes its connection without a word is noticed within
// a sweep of the hub (half a heartbeat here): its stream ends (client_gone), its presence closes (the
// player shows disconnected) and its place among the user's streams is
// free again (the cap of one stream lets the next one open). Whether the
// server's Hangups tells the hub (watched) or each sweep peeks at the
// connection (no Hangups).
func TestTakenOverStreamNoticesGoneClient(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		for _, tc := range []struct {
			name    string
			watched bool // by a Hangups of the server's; else peeked
		}{{"watched", true}, {"peeked", false}} {
			t.Run(b.Name+"/"+tc.name, func(t *testing.T) { testTakenOverStreamNoticesGoneClient(t, b, tc.watched) })
		}
	}
}

// testTakenOverStreamNoticesGoneClient is TestTakenOverStreamNoticesGoneClient
// on backend b, its stream watched or peeked.
func testTakenOverStreamNoticesGoneClient(t *testing.T, b redistest.Backend, watched bool) {
	var hangups *api.Hangups
	if watched {
		hangups = newHangups(t)
	}
	e, _ := newLineEnvWith(t, b, store.Quotas{StreamsPerUser: 1}, hangups)
	alice, _ := e.guest("alice")
	bob, _ := e.guest("bob")
	id := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r"})["id"].(string)
	e.do("POST", "/v1/rooms/"+id+"/join", bob, nil)
	path := "/v1/rooms/" + id + "/events?token=" + e.streamToken(bob, "/v1/rooms/"+id)

	s, status := e.openRaw(path)
	if status != 200 {
		t.Fatalf("open: %d", status)
	}
	connected := func() bool {
		r := e.do("GET", "/v1/rooms/"+id, alice, nil)
		for _, p := range r.body["players"].([]any) {
			if p := p.(map[string]any); p["name"] == "bob" {
				return p["connected"] == true
			}
		}
		t.Fatalf("bob is not in %s", r.raw)
		return false
	}
	if !connected() {
		t.Fatal("bob does not show connected while his stream is open")
	}
	if watched && runtime.GOOS == "linux" {
		wait.Within(t, 20*time.Second, "the stream's connection watched", func() bool { return hangups.Watching() == 1 })
	}
	if _, status := e.openRaw(path); status != http.StatusTooManyRequests {
		t.Fatalf("a second stream past the cap of one: %d, want 429", status)
	}

	s.conn.Close()
	// the heartbeat, a sweep and the store's calls take well under a
	// second; 8 s leaves a loaded machine's stall room and is still half
	// the presence lease (15 s), whose lapse would otherwise end it
	limit := 8 * time.Second
	wait.Within(t, limit, "bob's stream closed", func() bool { return !connected() })
	wait.Within(t, limit, "the cap's place released", func() bool {
		_, status := e.openRaw(path)
		return status == 200
	})
	if watched && runtime.GOOS == "linux" { // the gone stream's connection unwatched as it ended, the new one's watched
		wait.Within(t, 20*time.Second, "one connection watched", func() bool { return hangups.Watching() == 1 })
	}
	m := e.do("GET", "/metrics", "", nil).raw
	if !strings.Contains(m, `realsync_sse_stream_ends_total{kind="room",reason="client_gone"} 1`) {
		t.Errorf("no client_gone end counted:\n%s", grepLines(m, "realsync_sse_stream_ends_total"))
	}
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Idle HTTP/1.1 streams hold no goroutine: n streams opened (and idle)
// leave the process's goroutines where they were, within a margin for the
// runtime's and the drains still writing presence events; streams kept by
// their handler would add two each (the handler and net/http's reader).
func TestIdleTakenOverStreamsHoldNoGoroutine(t *testing.T) {
	const n = 40
	e, hub := newLineEnv(t, redistest.Backends(t)[0], store.Quotas{})
	owner, _ := e.guest("owner")
	id := e.create(owner, map[string]any{"name": "r", "mode": "m", "region": "r", "maxPlayers": 100})["id"].(string)
	paths := make([]string, n)
	for i := range paths {
		tok, _ := e.guest(fmt.Sprintf("p%d", i))
		want(t, e.do("POST", "/v1/rooms/"+id+"/join", tok, nil), 200, "")
		paths[i] = "/v1/rooms/" + id + "/events?token=" + e.streamToken(tok, "/v1/rooms/"+id)
	}
	// The room's subscription and worker exist before the count.
	first, _ := e.openRaw("/v1/rooms/" + id + "/events?token=" + e.streamToken(owner, "/v1/rooms/"+id))
	defer first.conn.Close()
	http.DefaultClient.CloseIdleConnections()
	settle := func() int {
		// Bounded: until two counts a while apart agree.
		prev := -1
		for range 50 {
			time.Sleep(100 * time.Millisecond)
			if g := runtime.NumGoroutine(); g == prev {
				return g
			} else {
				prev = g
			}
		}
		return prev
	}
	before := settle()
	for _, p := range paths {
		if _, status := e.openRaw(p); status != 200 {
			t.Fatalf("open: %d", status)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	after := settle()
	if hub.Streams() != n+1 {
		t.Fatalf("%d streams open, want %d", hub.Streams(), n+1)
	}
	const margin = 5
	if after-before > margin {
		t.Fatalf("%d idle streams added %d goroutines (from %d to %d), want at most %d", n, after-before, before, after, margin)
	}
	t.Logf("%d idle streams: %d goroutines before, %d after", n, before, after)
}

// A taken-over stream whose client reads nothing while 5.6 MB of events
// come (or for 3 s of them) fills its connection: a write of the room's worker that does not
// wait stops short and the stream's drain finishes it (sse.TrySender),
// then writes the rest. The client, reading at last, gets every
// event once, in version order, with consecutive ids, in a well-formed
// chunked body.
func TestTakenOverStreamSlowReaderGetsEveryEventInOrder(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e, _ := newLineEnv(t, b, store.Quotas{})
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		id := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r"})["id"].(string)
		e.do("POST", "/v1/rooms/"+id+"/join", bob, nil)

		conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.(*net.TCPConn).SetReadBuffer(16384)
		// a bound on the whole exchange: the embedded store took over
		// 30 s for 84 of the patches on a loaded CI (2026-12-05)
		conn.SetDeadline(time.Now().Add(2 * time.Minute))
		path := "/v1/rooms/" + id + "/events?token=" + e.streamToken(bob, "/v1/rooms/"+id)
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n\r\n", path)
		rd := bufio.NewReader(conn)
		res, err := http.ReadResponse(rd, nil)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%v %v", res, err)
		}
		const patches = 100
		// The client starts reading once the patches are written, or
		// after 3 s of them (a loaded machine): before the stream's
		// write timeout (10 s) ends a client that reads nothing.
		written := make(chan struct{})
		read := make(chan error, 1)
		go func() {
			select {
			case <-written:
			case <-time.After(3 * time.Second):
			}
			read <- readStates(bufio.NewReader(res.Body), patches) // net/http's strict chunked reader
		}()
		// 56 KB an event: 5.6 MB in all, more than a loopback socket's
		// largest send buffer (4 MB) and the client's receive buffer
		pad := strings.Repeat("x", 7900)
		for i := range patches {
			set := map[string]any{"n": i}
			for k := range 7 {
				set["pad"+strconv.Itoa(k)] = pad[:len(pad)-i] // a change every time
			}
			want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, set), 200, "")
		}
		close(written)
		if err := <-read; err != nil {
			t.Fatal(err)
		}
	})
}

// readStates reads n state events from body, checking that their ids'
// versions are consecutive.
func readStates(body *bufio.Reader, n int) error {
	var last int64
	for got := 0; got < n; {
		line, err := body.ReadString('\n')
		if err != nil {
			return fmt.Errorf("after %d state events: %w", got, err)
		}
		v, ok := strings.CutPrefix(line, "id: ")
		if !ok {
			continue
		}
		version, _, _ := strings.Cut(strings.TrimSpace(v), "-")
		var ver int64
		fmt.Sscan(version, &ver)
		if last != 0 && ver != last+1 {
			return fmt.Errorf("event id %q after version %d", v, last)
		}
		last = ver
		if typ, _ := body.ReadString('\n'); typ == "event: state\n" {
			got++
		}
	}
	return nil
}

// A room with more taken-over streams than one goroutine writes an event
// to (the room's worker takes the first 128, a goroutine each further 128):
// every stream gets every event, once, in order.
func TestTakenOverStreamsOfABigRoomGetEveryEvent(t *testing.T) {
	const n = 300
	e, _ := newLineEnv(t, redistest.Backends(t)[0], store.Quotas{})
	owner, _ := e.guest("owner")
	id := e.create(owner, map[string]any{"name": "r", "mode": "m", "region": "r", "maxPlayers": 100})["id"].(string)
	var paths []string // 4 streams a player: within the streams a user may hold
	for i := range n / 4 {
		tok, _ := e.guest(fmt.Sprintf("p%d", i))
		want(t, e.do("POST", "/v1/rooms/"+id+"/join", tok, nil), 200, "")
		paths = append(paths, "/v1/rooms/"+id+"/events?token="+e.streamToken(tok, "/v1/rooms/"+id))
	}
	streams := make([]*rawStream, n)
	for i := range streams {
		s, status := e.openRaw(paths[i%len(paths)])
		if status != 200 {
			t.Fatalf("open %d: %d", i, status)
		}
		streams[i] = s
	}
	const patches = 3
	for i := range patches {
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", owner, map[string]any{"n": i}), 200, "")
	}
	for k, s := range streams {
		s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for i := 0; i < patches; {
			line, err := s.rd.ReadString('\n')
			if err != nil {
				t.Fatalf("stream %d, after %d state events: %v", k, i, err)
			}
			if !strings.HasPrefix(line, `data: {"type":"state"`) {
				continue
			}
			if !strings.Contains(line, fmt.Sprintf(`"set":{"n":%d}`, i)) {
				t.Fatalf("stream %d: state event %d is %s", k, i, line)
			}
			i++
		}
	}
}

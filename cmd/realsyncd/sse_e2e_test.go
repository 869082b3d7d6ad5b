package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
)

// sseEvent is one event as a client received it.
type sseEvent struct {
	id, typ string
	version int64
	data    map[string]any
}

// follower reads a room's event stream as EventSource does: after a drop it
// reconnects, to the next instance, with Last-Event-ID, and it records every
// event it receives. It stops after room_closed or its own player_left.
type follower struct {
	t      *testing.T
	urls   []string
	path   string
	token  string
	query  bool // send a stream token as token, as EventSource does
	player float64

	mu      sync.Mutex
	events  []sseEvent
	resumes int // resumed events: a reconnection replayed what it missed
	lastID  string
	conns   int
	retries []int       // per connection that ended, the last retry hint it sent (0: none)
	endedAt []time.Time // per connection that ended, when
	drop    context.CancelFunc
	updated chan struct{}
	stop    context.CancelFunc
	ended   chan struct{}
}

// followers is the client of the followers' requests (stream tokens and
// streams), not http.DefaultClient: many followers opening at once make a
// transport dial connections that no request ends up using (a request
// handed a connection freed meanwhile, or cancelled, leaves the dial it
// started to the idle pool). realsyncd closes such a connection once it
// has carried no request for 10 s of its accept (ReadHeaderTimeout,
// headerDeadline); a request sent on it just then gets EOF, which Go's
// transport does not send again for a PATCH or POST (not idempotent): so
// call and patch must not be handed those connections.
var followers = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

func follow(t *testing.T, urls []string, room, token string, query bool) *follower {
	return followFrom(t, urls, room, token, query, "")
}

// followFrom starts with Last-Event-ID lastID.
func followFrom(t *testing.T, urls []string, room, token string, query bool, lastID string) *follower {
	ctx, stop := context.WithCancel(context.Background())
	f := &follower{t: t, urls: urls, path: "/v1/rooms/" + room + "/events", token: token, query: query,
		lastID: lastID, updated: make(chan struct{}, 1), stop: stop, ended: make(chan struct{})}
	go f.run(ctx)
	t.Cleanup(func() { stop(); <-f.ended })
	return f
}

func (f *follower) run(ctx context.Context) {
	defer close(f.ended)
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if f.connect(ctx, f.urls[attempt%len(f.urls)]) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// connect reads one connection; true when the stream ended for good.
func (f *follower) connect(ctx context.Context, base string) bool {
	cctx, drop := context.WithCancel(ctx)
	defer drop()
	f.mu.Lock()
	lastID := f.lastID
	f.drop = drop
	f.conns++ // an attempt, counted whether or not it gets a stream token
	f.mu.Unlock()
	url := base + f.path
	if f.query { // as EventSource: a fresh stream token for each connection
		st, ok := streamToken(cctx, base, strings.TrimSuffix(f.path, "/events")+"/stream-token", f.token)
		if !ok {
			return false
		}
		url += "?token=" + st
	}
	req, _ := http.NewRequestWithContext(cctx, "GET", url, nil)
	if !f.query {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := followers.Do(req)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return false
	}
	return f.read(bufio.NewReader(res.Body))
}

func (f *follower) read(rd *bufio.Reader) bool {
	var e sseEvent
	retry := 0
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			f.mu.Lock()
			f.retries, f.endedAt = append(f.retries, retry), append(f.endedAt, time.Now())
			f.mu.Unlock()
			return false
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && e.typ != "":
			if f.record(e) {
				return true
			}
			e = sseEvent{}
		case strings.HasPrefix(line, "retry: "):
			retry, _ = strconv.Atoi(line[7:])
		case strings.HasPrefix(line, "id: "):
			e.id = line[4:]
			v, _, _ := strings.Cut(e.id, "-")
			e.version, _ = strconv.ParseInt(v, 10, 64)
		case strings.HasPrefix(line, "event: "):
			e.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &e.data); err != nil {
				f.t.Errorf("data is not JSON: %q", line)
			}
		}
	}
}

// record keeps e (a resumed event only counted); true when the stream
// ends with it. As EventSource, an event without an id leaves the last id.
func (f *follower) record(e sseEvent) bool {
	f.mu.Lock()
	if e.typ == "resumed" {
		f.resumes++
	} else {
		f.events = append(f.events, e)
	}
	if e.id != "" {
		f.lastID = e.id
	}
	f.mu.Unlock()
	select {
	case f.updated <- struct{}{}:
	default:
	}
	return e.typ == "room_closed" || (e.typ == "player_left" && f.player != 0 && e.data["playerId"] == f.player)
}

// dropConn cuts the current connection; the follower resumes.
func (f *follower) dropConn() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.drop != nil {
		f.drop()
	}
}

func (f *follower) all() []sseEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sseEvent(nil), f.events...)
}

// waitVersion waits until an event of version v or later arrived.
func (f *follower) waitVersion(v int64, within time.Duration) []sseEvent {
	f.t.Helper()
	deadline := time.After(within)
	for {
		es := f.all()
		if len(es) > 0 && es[len(es)-1].version >= v {
			return es
		}
		select {
		case <-f.updated:
		case <-deadline:
			f.t.Fatalf("%s: version %d never arrived; %d events, last %+v", f.path, v, len(es), lastEvent(es))
		}
	}
}

func lastEvent(es []sseEvent) sseEvent {
	if len(es) == 0 {
		return sseEvent{}
	}
	return es[len(es)-1]
}

// inOrder checks a snapshot first, then versions without gap or repeat.
func inOrder(t *testing.T, who string, es []sseEvent) {
	t.Helper()
	if len(es) == 0 || es[0].typ != "snapshot" {
		t.Fatalf("%s: first event %+v, want a snapshot", who, lastEvent(es[:min(1, len(es))]))
	}
	for i := 1; i < len(es); i++ {
		if es[i].version != es[i-1].version+1 || es[i].typ == "snapshot" {
			t.Fatalf("%s: event %d is %s v%d after v%d", who, i, es[i].typ, es[i].version, es[i-1].version)
		}
		if es[i].data["version"] != float64(es[i].version) {
			t.Fatalf("%s: id %s and data version %v differ", who, es[i].id, es[i].data["version"])
		}
	}
}

// roomVersion reads the room's current version through in.
func roomVersion(t *testing.T, in *instance, id, token string) int64 {
	t.Helper()
	status, room := call(t, "GET", in.url+"/v1/rooms/"+id, token, nil)
	if status != 200 {
		t.Fatalf("get room: %d %v", status, room)
	}
	return int64(room["version"].(float64))
}

func patch(t *testing.T, in *instance, id, token string, body any) bool {
	status, _ := call(t, "PATCH", in.url+"/v1/rooms/"+id+"/state", token, body)
	return status == 200
}

// party creates a room through in with an owner and n more players.
func party(t *testing.T, in *instance, n int) (id string, tokens []string) {
	t.Helper()
	owner := guest(t, in, "owner")
	status, body := call(t, "POST", in.url+"/v1/rooms", owner, map[string]any{"name": "r", "mode": "m", "region": "r",
		"maxPlayers": 100, "statePolicy": "open"})
	if status != 201 {
		t.Fatalf("create: %d %v", status, body)
	}
	id = body["room"].(map[string]any)["id"].(string)
	tokens = []string{owner}
	for i := range n {
		tok := guest(t, in, fmt.Sprintf("p%d", i))
		if status, body := call(t, "POST", in.url+"/v1/rooms/"+id+"/join", tok, nil); status != 200 {
			t.Fatalf("join: %d %v", status, body)
		}
		tokens = append(tokens, tok)
	}
	return id, tokens
}

func noTokenLogged(t *testing.T, tokens []string, ins ...*instance) {
	t.Helper()
	for _, in := range ins {
		logs := in.logText()
		for _, tok := range tokens {
			if strings.Contains(logs, tok) || strings.Contains(logs, tok[strings.LastIndex(tok, ".")+1:]) {
				t.Fatal("a token appears in the logs")
			}
		}
	}
}

func backendEnv(t *testing.T, backend string) []string {
	env := []string{"REALSYNC_KEY_PREFIX=" + redistest.Prefix(t), "REALSYNC_JWT_SECRET=e2e-secret"}
	if backend == "cluster" {
		return append(env, "REALSYNC_REDIS_CLUSTER_ADDRS="+strings.Join(redistest.ClusterAddrs(t), ","))
	}
	return append(env, "REALSYNC_REDIS_URL="+redistest.StandaloneURL(t))
}

// Streams on one instance, writes through the other: every event reaches
// every stream once and in order, also across a dropped connection resumed
// on the other instance; a kicked player's stream ends; a resume from
// before what the log holds gets a snapshot.
func TestEventStreamsAcrossInstances(t *testing.T) {
	t.Parallel()
	bin := raceBinary(t)
	for _, backend := range []string{"standalone", "cluster"} {
		t.Run(backend, func(t *testing.T) {
			env := append(backendEnv(t, backend), loadTestLimits)
			a, b := start(t, bin, env...), start(t, bin, env...)
			id, toks := party(t, a, 3)
			owner := toks[0]
			fs := []*follower{
				follow(t, []string{a.url, b.url}, id, toks[1], false),
				follow(t, []string{a.url, b.url}, id, toks[2], true),
				follow(t, []string{b.url, a.url}, id, toks[3], true),
			}
			fs[2].player = 4
			for _, f := range fs {
				f.waitVersion(4, 10*time.Second)
			}
			for i := range 120 {
				if !patch(t, []*instance{a, b}[i%2], id, owner, map[string]any{"n": i}) {
					t.Fatal("patch failed")
				}
				if i == 60 {
					fs[0].dropConn()
				}
			}
			final := roomVersion(t, b, id, owner)
			for i, f := range fs {
				inOrder(t, fmt.Sprint("stream ", i), f.waitVersion(final, 20*time.Second))
			}
			if fs[0].conns < 2 {
				t.Error("the dropped stream did not reconnect")
			}

			if status, _ := call(t, "DELETE", b.url+"/v1/rooms/"+id+"/players/4", owner, nil); status != 204 {
				t.Fatalf("kick: %d", status)
			}
			select {
			case <-fs[2].ended:
			case <-time.After(10 * time.Second):
				t.Fatal("the kicked player's stream did not end")
			}
			if e := lastEvent(fs[2].all()); e.typ != "player_left" || e.data["reason"] != "kicked" {
				t.Errorf("kicked stream ends with %+v", e)
			}

			for i := range 1100 {
				patch(t, b, id, owner, map[string]any{"n": i})
			}
			oldID := fs[0].all()[1].id
			old := followFrom(t, []string{a.url}, id, owner, false, oldID)
			if e := old.waitVersion(1, 10*time.Second)[0]; e.typ != "snapshot" {
				t.Errorf("resume from %s, older than the log: first event %s", oldID, e.typ)
			}
			noTokenLogged(t, toks, a, b)
		})
	}
}

// Redis restarts (AOF on, so rooms survive) while streams are open and a
// writer keeps writing through the other instance: every event written
// reaches every stream exactly once, in order.
func TestEventStreamsSurviveRedisRestart(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	srv, err := redistest.StartServer("--appendonly", "yes", "--appendfsync", "always")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	env := []string{"REALSYNC_REDIS_URL=redis://" + srv.Addr, "REALSYNC_JWT_SECRET=e2e-secret"}
	a, b := start(t, bin, env...), start(t, bin, env...)
	id, toks := party(t, a, 2)
	var fs []*follower
	for i, tok := range toks {
		fs = append(fs, follow(t, []string{a.url, b.url}[i%2:], id, tok, false))
	}
	for _, f := range fs {
		f.waitVersion(6, 10*time.Second)
	}
	var ok, failed int
	restarted := make(chan error, 1)
	for i := 0; ok < 150; i++ {
		if i == 50 {
			srv.Kill()
			go func() { time.Sleep(3 * time.Second); restarted <- srv.Start() }()
		}
		if patch(t, b, id, toks[0], map[string]any{"n": i}) {
			ok++
		} else {
			failed++
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if failed == 0 {
		t.Fatal("no write failed: Redis did not go away")
	}
	final := roomVersion(t, b, id, toks[0])
	for i, f := range fs {
		inOrder(t, fmt.Sprint("stream ", i), f.waitVersion(final, 60*time.Second))
	}
	noTokenLogged(t, toks, a, b)
}

// A client that stops reading (a small receive buffer, never read) is cut
// off, while a reading client of the same room receives every event.
func TestSlowReaderIsCutOff(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	a := start(t, bin, append(backendEnv(t, "standalone"), loadTestLimits)...)
	id, toks := party(t, a, 1)
	fast := follow(t, []string{a.url}, id, toks[0], false)
	fast.waitVersion(3, 10*time.Second)

	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(a.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/rooms/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", id, toks[1])
	head := make([]byte, 12)
	if _, err := conn.Read(head); err != nil || string(head) != "HTTP/1.1 200" {
		t.Fatalf("slow stream: %q %v", head, err)
	}
	big := strings.Repeat("x", 8000)
	for i := range 1500 {
		if !patch(t, a, id, toks[0], map[string]any{"big": big + strconv.Itoa(i)}) {
			t.Fatal("patch failed")
		}
	}
	// The cut shows as the slow player's presence ending (it had no other
	// stream); the reading stream got every event meanwhile.
	deadline := time.Now().Add(60 * time.Second)
	for !disconnected(fast.all(), 2) {
		if time.Now().After(deadline) {
			t.Fatalf("the slow stream was not cut; logs:\n%s", a.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	final := roomVersion(t, a, id, toks[0])
	inOrder(t, "reading stream", fast.waitVersion(final, 60*time.Second))
	a.awaitLogThat(t, "the cut of the slow stream", streamCut(2))
}

func disconnected(es []sseEvent, pid float64) bool {
	for _, e := range es {
		if e.typ == "player_disconnected" && e.data["playerId"] == pid {
			return true
		}
	}
	return false
}

// 500 streams on one room, over two instances, all receive every event.
func TestFiveHundredStreams(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	env := append(backendEnv(t, "standalone"), loadTestLimits)
	a, b := start(t, bin, env...), start(t, bin, env...)
	id, toks := party(t, a, 99)
	var fs []*follower
	for i := range 500 {
		fs = append(fs, follow(t, []string{[]string{a.url, b.url}[i%2]}, id, toks[i%100], i%3 == 0))
	}
	var connected int64 // the room's version once every player connected
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		status, room := call(t, "GET", a.url+"/v1/rooms/"+id, toks[0], nil)
		if status != 200 && status != 503 {
			t.Fatalf("GET room while 500 streams open: %d %v", status, room)
		}
		n := 0
		players, _ := room["players"].([]any) // none on a 503 (OVERLOADED, documented): read again, as a client would
		if status == 503 {
			t.Logf("GET room while 500 streams open: 503 %v", room["code"])
		}
		for _, p := range players {
			if p.(map[string]any)["connected"] == true {
				n++
			}
		}
		if n == 100 {
			connected = int64(room["version"].(float64))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 100 players connected", n)
		}
	}
	for i := range 20 {
		patch(t, []*instance{a, b}[i%2], id, toks[0], map[string]any{"n": i})
	}
	final := roomVersion(t, a, id, toks[0])
	if final != connected+20 {
		t.Fatalf("version %d, want %d", final, connected+20)
	}
	for i, f := range fs {
		es := f.waitVersion(final, 60*time.Second)
		inOrder(t, fmt.Sprint("stream ", i), es)
	}
}

// The players of an instance that dies (SIGKILL) are announced
// disconnected when their presence lapses, and removed after the grace.
func TestKilledInstancePlayersAreRemoved(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	env := append(backendEnv(t, "standalone"), "REALSYNC_PRESENCE_TTL=1s", "REALSYNC_DISCONNECT_GRACE=1s")
	a, c := start(t, bin, env...), start(t, bin, env...)
	id, toks := party(t, a, 1)
	watcher := follow(t, []string{a.url}, id, toks[0], false)
	follow(t, []string{c.url}, id, toks[1], true)
	watcher.waitVersion(4, 10*time.Second) // both connected
	c.kill()
	es := watcher.waitVersion(6, 30*time.Second)
	got := []string{es[len(es)-2].typ, es[len(es)-1].typ}
	if got[0] != "player_disconnected" || got[1] != "player_left" || es[len(es)-1].data["reason"] != "disconnected" || es[len(es)-1].data["playerId"] != 2.0 {
		t.Errorf("after the kill: %v %+v", got, es[len(es)-1].data)
	}
	_, room := call(t, "GET", a.url+"/v1/rooms/"+id, toks[0], nil)
	if room["playerCount"] != 1.0 {
		t.Errorf("room after removal: %v", room)
	}
}

func grep(text, word string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// SIGTERM ends every open stream with a short retry hint (0.5–2 s), so its
// client reconnects to another instance and resumes with Last-Event-ID, no
// event missed; the stream's presence is released at once (the TTL here is
// a minute), so other members would see the player disconnected after the
// debounce, had it not come back meanwhile; the process exits cleanly.
func TestShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	// a 6 s presence debounce, twice the default: the move below must
	// come back within it, a stalled machine's slow reconnection too
	env := append(backendEnv(t, "standalone"), "REALSYNC_PRESENCE_TTL=60s", "REALSYNC_PRESENCE_DEBOUNCE=6s")
	a, b := start(t, bin, env...), start(t, bin, env...)
	id, toks := party(t, a, 1)
	f := follow(t, []string{a.url, b.url}, id, toks[1], false)
	f.waitVersion(3, 10*time.Second)
	a.stop(t) // a stream left open would hold the shutdown until its timeout: exit 1
	patch(t, b, id, toks[0], map[string]any{"after": "shutdown"})
	final := roomVersion(t, b, id, toks[0])
	es := f.waitVersion(final, 20*time.Second)
	inOrder(t, "moved stream", es) // one snapshot, then a replay from Last-Event-ID
	if f.conns < 2 {
		t.Error("the stream did not move to the other instance")
	}
	// a reconnection's resumed event follows its replay (a reconnection
	// after the patch replays it first): waited for, not raced
	wait.Within(t, 10*time.Second, "the reconnection's resumed event", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.resumes >= f.conns-1
	})
	f.mu.Lock()
	hint, resumes, conns := f.retries[0], f.resumes, f.conns
	f.mu.Unlock()
	if resumes != conns-1 {
		t.Errorf("%d connections, %d resumed events: want one per reconnection (each replayed)", conns, resumes)
	}
	if hint < 500 || hint >= 2000 {
		t.Errorf("the stream ended with retry %d ms, want 500..1999", hint)
	}
	var types []string
	for _, e := range es[1:] { // after the snapshot (v3, player 2 connected)
		types = append(types, fmt.Sprint(e.typ, " ", e.data["playerId"]))
	}
	// The stream is back on b within the retry hint (0.5–2 s), inside the
	// presence debounce (REALSYNC_PRESENCE_DEBOUNCE, 6 s here): the move shows
	// no player_disconnected / player_connected (before the debounce it
	// showed both).
	if got := strings.Join(types, ", "); got != "state <nil>" {
		t.Errorf("after the shutdown: %s", got)
	}
}

// SIGTERM ends the instance's streams in a random order over
// REALSYNC_SSE_SHUTDOWN_SPREAD (here its default: a third of a 9 s
// REALSYNC_SHUTDOWN_TIMEOUT, 3 s), not at once, at least 100 a second (so
// 100 streams over 1 s): plain HTTP/1.1 room streams, taken over by the
// hub. None ends before its share of the spread was due, the last not
// before the spread is over, the first well before it; each with the
// short retry hint; the instance takes no new connection and leaves the
// instance list meanwhile, so each client resumes on the other instance,
// missing nothing; and the instance exits cleanly.
func TestShutdownSpreadsStreamEnds(t *testing.T) {
	t.Parallel()
	const n, spread = 100, time.Second // min(3 s, n / 100 a second)
	bin := buildBinary(t)
	env := append(backendEnv(t, "standalone"), "REALSYNC_PRESENCE_TTL=60s", "REALSYNC_SHUTDOWN_TIMEOUT=9s", "REALSYNC_ADMIN_TOKEN="+e2eAdminToken, "REALSYNC_RATE_LIMITS=off",
		"REALSYNC_SSE_SHUTDOWN_SPREAD=") // unset: launchCmd's 0 undone
	a, b := start(t, bin, env...), start(t, bin, env...)
	id, toks := party(t, a, n-1)
	var fs []*follower
	for _, tok := range toks {
		f := follow(t, []string{a.url, b.url}, id, tok, false)
		fs = append(fs, f)
	}
	for _, f := range fs {
		f.waitVersion(int64(n+1), 10*time.Second) // created, n-1 joins, every player connected
	}
	term := time.Now()
	stopped := make(chan struct{})
	go func() {
		a.stop(t) // a stream left open would hold the shutdown to its timeout: exit 1
		close(stopped)
	}()
	// once a stream ended, the instance still serves the others but takes
	// no new connection: the client's next try is the other instance
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	wait.Within(t, 10*time.Second, "a stream ended by the shutdown", func() bool {
		for _, f := range fs {
			f.mu.Lock()
			ended := len(f.endedAt) > 0
			f.mu.Unlock()
			if ended {
				return true
			}
		}
		return false
	})
	if res, err := fresh.Get(a.url + "/healthz"); err == nil {
		res.Body.Close()
		t.Errorf("a new connection to the instance shutting down was served (%d)", res.StatusCode)
	}
	waitInstances(t, b, 10*time.Second, "the instance shutting down gone from the list", func(l map[string]map[string]any) bool { return len(l) == 1 })
	select {
	case <-stopped:
		t.Error("the instance left the instance list only as it exited, not at the spread's start")
	default:
	}
	<-stopped
	patch(t, b, id, toks[0], map[string]any{"after": "shutdown"})
	final := roomVersion(t, b, id, toks[0])
	var ends []time.Duration
	for i, f := range fs {
		inOrder(t, fmt.Sprintf("follower %d", i), f.waitVersion(final, 20*time.Second))
		f.mu.Lock()
		if len(f.endedAt) == 0 || f.conns < 2 {
			t.Errorf("follower %d: %d connections, %d ended: its stream did not move", i, f.conns, len(f.endedAt))
		} else {
			ends = append(ends, f.endedAt[0].Sub(term))
			if hint := f.retries[0]; hint < 500 || hint >= 2000 {
				t.Errorf("follower %d: the stream ended with retry %d ms, want 500..1999", i, hint)
			}
		}
		f.mu.Unlock()
	}
	if len(ends) != n {
		return
	}
	first, last := slices.Min(ends), slices.Max(ends)
	t.Logf("the %d streams ended from %s to %s after SIGTERM (spread %s)", n, first.Round(time.Millisecond), last.Round(time.Millisecond), spread)
	if first < spread/n {
		t.Errorf("a stream ended %s after SIGTERM, before the spread's first share was due (%s)", first, spread/n)
	}
	if last < spread {
		t.Errorf("the last stream ended %s after SIGTERM, before the spread (%s) was over", last, spread)
	}
	if last-first < spread/2 {
		t.Errorf("the streams ended within %s of each other, want them spread over %s", last-first, spread)
	}
	if logs := a.logText(); !strings.Contains(logs, "spread=3s") || !strings.Contains(logs, "ending the streams over the shutdown's spread\" streams=100 spread=1s") {
		t.Errorf("the shutdown's log does not name the spread:\n%s", grep(logs, "shutdown"))
	}
}

// streamToken fetches a stream token from base's route with identity
// token; false when the instance does not give one.
func streamToken(ctx context.Context, base, route, token string) (string, bool) {
	req, _ := http.NewRequestWithContext(ctx, "POST", base+route, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := followers.Do(req)
	if err != nil {
		return "", false
	}
	defer res.Body.Close()
	var body struct {
		Token string `json:"token"`
	}
	if res.StatusCode != 201 || json.NewDecoder(res.Body).Decode(&body) != nil {
		return "", false
	}
	return body.Token, true
}

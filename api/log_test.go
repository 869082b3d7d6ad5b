package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// logLines parses every log line as JSON, failing on any that is not.
func (e *env) logLines() []map[string]any {
	e.t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			e.t.Fatalf("log line is no JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// accessLines returns the access log lines by request id.
func (e *env) accessLines() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, l := range e.logLines() {
		if l["msg"] == "request" {
			id, _ := l["request_id"].(string)
			if out[id] != nil {
				e.t.Fatalf("two access lines for request %q", id)
			}
			out[id] = l
		}
	}
	return out
}

// Every request, event streams included (when they end), gets one access
// line with its route pattern, path without the query, status, duration,
// user and the X-Request-Id it was answered with; no token appears in any
// log line, whether it came as a bearer header or a stream token as ?token=.
func TestAccessLog(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	alice, aliceID := e.guest("alice")
	bob, _ := e.guest("bob")
	id := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r"})["id"].(string)
	var seen []string // every X-Request-Id answered
	track := func(h interface{ Get(string) string }) string {
		t.Helper()
		rid := h.Get("X-Request-Id")
		if rid == "" {
			t.Fatal("an answer without X-Request-Id")
		}
		seen = append(seen, rid)
		return rid
	}
	mine := e.do("GET", "/v1/me/rooms", alice, nil, "X-Request-Id", "trace-1.A_b")
	if track(mine.header) != "trace-1.A_b" {
		t.Errorf("a sane X-Request-Id came back as %q", mine.header.Get("X-Request-Id"))
	}
	var probe string
	for _, bad := range []string{strings.Repeat("a", 129), "a/b", "a b", "tok\u00e9n"} {
		r := e.do("GET", "/healthz", "", nil, "X-Request-Id", bad)
		if probe = track(r.header); probe == bad || len(probe) > 128 || strings.ContainsAny(probe, "/ ") {
			t.Errorf("X-Request-Id %q came back as %q, want a new one", bad, probe)
		}
	}
	want(t, e.do("GET", "/v1/rooms?access_token="+bob, "", nil), 401, "UNAUTHENTICATED") // only streams take it
	want(t, e.do("GET", "/v1/me/rooms", alice+"x", nil), 401, "UNAUTHENTICATED")
	want(t, e.do("POST", "/v1/rooms/"+id+"/join", bob, nil), 200, "")
	roomToken, lobbyToken := e.streamToken(bob, "/v1/rooms/"+id), e.streamToken(alice, "/v1/lobby/events")
	room := e.open("/v1/rooms/" + id + "/events?token=" + roomToken + "&lastEventId=1")
	room.next()
	track(room.res.Header)
	lobby := e.open("/v1/lobby/events?token=" + lobbyToken)
	lobby.next()
	track(lobby.res.Header)
	room.close()
	lobby.close()
	deadline := time.Now().Add(10 * time.Second)
	for len(e.accessLines()) < 15 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // the streams' lines come when they end
	}

	lines := e.accessLines()
	if len(lines) != 15 { // 2 guests, create, 5 GETs with ids, 2 refused, join, 2 stream tokens, 2 streams
		t.Errorf("%d access lines for 15 requests", len(lines))
	}
	for _, rid := range seen {
		if lines[rid] == nil {
			t.Errorf("no access line for request %q", rid)
		}
	}
	l := lines["trace-1.A_b"]
	if l["route"] != "/v1/me/rooms" || l["method"] != "GET" || l["path"] != "/v1/me/rooms" || l["status"] != 200.0 ||
		l["user"] != aliceID || l["level"] != "INFO" || l["stream"] != false {
		t.Errorf("access line %v", l)
	}
	if p := lines[probe]; p["route"] != "/healthz" || p["level"] != "DEBUG" {
		t.Errorf("a probe's access line %v, want one at debug", p)
	}
	if d, ok := l["duration_ms"].(float64); !ok || d < 0 {
		t.Errorf("duration_ms %v", l["duration_ms"])
	}
	s := lines[room.res.Header.Get("X-Request-Id")]
	if s["route"] != "/v1/rooms/{roomId}/events" || s["path"] != "/v1/rooms/"+id+"/events" || s["stream"] != true || s["status"] != 200.0 {
		t.Errorf("event stream's access line %v", s)
	}
	logs := e.logs.String()
	for _, tok := range []string{alice, bob, roomToken, lobbyToken} {
		if strings.Contains(logs, tok) || strings.Contains(logs, tok[strings.LastIndex(tok, ".")+1:]) {
			t.Fatal("a token appears in the logs")
		}
	}
	for _, l := range e.logLines() {
		if p, _ := l["path"].(string); strings.ContainsAny(p, "?&=") {
			t.Errorf("a logged path holds a query: %q", p)
		}
	}
}

// A log line carries at most the first 256 bytes of a request's path (and
// of its method), then "…", with path_len (method_len) the whole length:
// a stranger's requests that no limit counts (a path outside /v1, 404; a
// body over the route's cap, 413 before authentication) and refused ones
// (401) wrote their whole path, up to the request line's 64 KiB, one byte
// of log for each byte sent. A path of 256 bytes is logged whole.
func TestLoggedPathsAreCut(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	long := "/v1/rooms/" + strings.Repeat("a", 60000)
	want(t, e.do("GET", long, "bad-token", nil, "X-Request-Id", "bad-token"), 401, "UNAUTHENTICATED")
	if r := e.do("GET", "/xy"+strings.Repeat("é", 10000), "", nil, "X-Request-Id", "outside"); r.status != 404 {
		t.Fatalf("a path outside /v1: %d, want 404", r.status)
	}
	e.do(strings.Repeat("M", 1000), long, "", nil, "X-Request-Id", "method")
	exact := "/x" + strings.Repeat("b", 254)
	e.do("GET", exact, "", nil, "X-Request-Id", "exact")
	// Content-Length over the route's cap: 413 before the token is looked
	// at and before any body is read
	c, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %s/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bad\r\nX-Request-Id: big\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n", long)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 413 {
		t.Fatalf("a body over the cap: %d, want 413", res.StatusCode)
	}

	lines := e.accessLines()
	for id, whole := range map[string]string{"bad-token": long, "outside": "/xy" + strings.Repeat("é", 10000), "method": long, "big": long + "/messages"} {
		l := lines[id]
		p, _ := l["path"].(string)
		if l == nil || len(p) > 256+len("…") || !utf8.ValidString(p) || !strings.HasSuffix(p, "…") || !strings.HasPrefix(whole, strings.TrimSuffix(p, "…")) ||
			l["path_len"] != float64(len(whole)) {
			t.Errorf("request %s: access line path %q (%d bytes), path_len %v; want the first 256 bytes or fewer (whole characters), then …, and %d",
				id, p, len(p), l["path_len"], len(whole))
		}
	}
	if m, _ := lines["method"]["method"].(string); m != strings.Repeat("M", 256)+"…" || lines["method"]["method_len"] != 1000.0 {
		t.Errorf("a 1000-byte method logged as %q, method_len %v", m, lines["method"]["method_len"])
	}
	if l := lines["exact"]; l["path"] != exact || l["path_len"] != nil {
		t.Errorf("a path of 256 bytes logged as %v, path_len %v: want it whole, no path_len", l["path"], l["path_len"])
	}
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if len(l) > 2000 {
			t.Errorf("a log line of %d bytes: %.300s…", len(l), l)
		}
	}
}

// A request refused by a rate limit (429) gets its access line at debug,
// the other refusals at info: a flood held by a limit (an HTTP/2 client
// opening and resetting 20 000 streams in 1.4 s) writes no line each at
// info; the metrics count it.
func TestRateLimitedAccessLinesAtDebug(t *testing.T) {
	e := limitedEnv(t, redistestEmbedded, "auth=2/h")
	for i, status := range []int{401, 401, 429} {
		if r := e.do("GET", "/v1/rooms", "bad-token", nil, "X-Request-Id", fmt.Sprint("r", i)); r.status != status {
			t.Fatalf("request %d: %d, want %d", i, r.status, status)
		}
	}
	lines := e.accessLines()
	for i, level := range []string{"INFO", "INFO", "DEBUG"} {
		if l := lines[fmt.Sprint("r", i)]; l["level"] != level {
			t.Errorf("request %d's access line %v, want it at %s", i, l, level)
		}
	}
}

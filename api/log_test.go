package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
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

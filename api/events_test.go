package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sseFrame is one event as EventSource would parse it.
type sseFrame struct {
	id, event string
	data      map[string]any
}

// stream is an open event stream read line by line.
type stream struct {
	t      *testing.T
	res    *http.Response
	rd     *bufio.Reader
	cancel context.CancelFunc
	retry  string
}

// open opens GET path with the extra request headers, failing unless 200.
func (e *env) open(path string, hdr ...string) *stream {
	e.t.Helper()
	s, res := e.tryOpen(path, hdr...)
	if res.StatusCode != 200 {
		e.t.Fatalf("open %s: %d", path, res.StatusCode)
	}
	return s
}

func (e *env) tryOpen(path string, hdr ...string) (*stream, *http.Response) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	s := &stream{t: e.t, res: res, rd: bufio.NewReader(res.Body), cancel: cancel}
	e.t.Cleanup(s.close)
	return s, res
}

func (s *stream) close() { s.cancel(); s.res.Body.Close() }

// next reads the next event, skipping comments and retry lines.
func (s *stream) next() sseFrame {
	s.t.Helper()
	timer := time.AfterFunc(10*time.Second, s.close)
	defer timer.Stop()
	f, err := s.read()
	if err != nil {
		s.t.Fatalf("stream ended: %v", err)
	}
	return f
}

// read reads the next event, skipping comments and retry lines; an error
// when the stream ends first or an event's data is not one line of JSON.
func (s *stream) read() (sseFrame, error) {
	var f sseFrame
	for {
		line, err := s.rd.ReadString('\n')
		if err != nil {
			return f, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && f.event != "":
			return f, nil
		case strings.HasPrefix(line, "retry: "):
			s.retry = line[7:]
		case strings.HasPrefix(line, "id: "):
			f.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			f.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &f.data); err != nil {
				return f, fmt.Errorf("data is not one line of JSON: %q", line)
			}
		}
	}
}

func (f sseFrame) version() int64 {
	v, _, _ := strings.Cut(f.id, "-")
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

func TestEventStreamOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		id := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r"})["id"].(string)
		e.do("POST", "/v1/rooms/"+id+"/join", bob, nil)

		s := e.open("/v1/rooms/" + id + "/events?token=" + e.streamToken(alice, "/v1/rooms/"+id))
		if ct := s.res.Header.Get("Content-Type"); ct != "text/event-stream" || s.res.Header.Get("Cache-Control") != "no-cache" || s.res.Header.Get("X-Accel-Buffering") != "no" {
			t.Errorf("headers %v", s.res.Header)
		}
		snap := s.next()
		if snap.event != "snapshot" || s.retry == "" || snap.version() != 3 {
			t.Fatalf("first event %+v (retry %q)", snap, s.retry)
		}
		room := snap.data["room"].(map[string]any)
		players := room["players"].([]any)
		if room["id"] != id || len(players) != 2 || players[0].(map[string]any)["connected"] != true || snap.data["stateVersion"] != 0.0 {
			t.Errorf("snapshot %v", snap.data)
		}
		e.do("PATCH", "/v1/rooms/"+id+"/state", alice, map[string]any{"hp": 3})
		st := s.next()
		if st.event != "state" || st.version() != 4 || st.data["by"] != 1.0 || st.data["roomId"] != id || st.data["ts"] == "" {
			t.Errorf("state event %+v", st)
		}
		r := e.do("POST", "/v1/rooms/"+id+"/messages", bob, map[string]any{"type": "chat", "data": map[string]any{"text": "gg"}})
		want(t, r, 202, "")
		m := s.next()
		msg, _ := m.data["message"].(map[string]any)
		if m.event != "message" || int64(r.body["version"].(float64)) != m.version() || msg["from"] != 2.0 || msg["type"] != "chat" {
			t.Errorf("message event %+v", m)
		}

		// Resume: the header wins over the query parameter.
		s.close()
		resumed := e.open("/v1/rooms/"+id+"/events?lastEventId=1&token="+e.streamToken(alice, "/v1/rooms/"+id), "Last-Event-ID", st.id)
		if f := resumed.next(); f.version() != st.version()+1 {
			t.Errorf("resumed after %s with %+v", st.id, f)
		}
		if strings.Contains(e.logs.String(), alice) {
			t.Error("a token appears in the logs")
		}
	})
}

func TestEventStreamRefusals(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		eve, _ := e.guest("eve")
		pub := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r"})["id"].(string)
		priv := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r", "visibility": "private"})["id"].(string)
		cases := []struct {
			name   string
			path   string
			token  string
			status int
			code   string
		}{
			{"no token", "/v1/rooms/" + pub + "/events", "", 401, "UNAUTHENTICATED"},
			{"bad query token", "/v1/rooms/" + pub + "/events?token=x.y.z", "", 401, "UNAUTHENTICATED"},
			{"identity token as access_token", "/v1/rooms/" + pub + "/events?access_token=" + alice, "", 401, "STREAM_TOKEN_REQUIRED"},
			{"identity token as token", "/v1/rooms/" + pub + "/events?token=" + alice, "", 401, "STREAM_TOKEN_REQUIRED"},
			{"access_token beside a header", "/v1/rooms/" + pub + "/events?access_token=" + alice, alice, 401, "STREAM_TOKEN_REQUIRED"},
			{"non-member", "/v1/rooms/" + pub + "/events", eve, 403, "NOT_A_MEMBER"},
			{"private room", "/v1/rooms/" + priv + "/events", eve, 404, "ROOM_NOT_FOUND"},
			{"unknown room", "/v1/rooms/00nothing0000000/events", eve, 404, "ROOM_NOT_FOUND"},
			{"bad room id", "/v1/rooms/a.b/events", eve, 404, "ROOM_NOT_FOUND"},
			{"query token off the stream routes", "/v1/rooms/" + pub + "?access_token=" + alice, "", 401, "UNAUTHENTICATED"},
			{"stream token off the stream routes", "/v1/rooms/" + pub + "?token=" + e.streamToken(alice, "/v1/rooms/"+pub), "", 401, "UNAUTHENTICATED"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				want(t, e.do("GET", c.path, c.token, nil), c.status, c.code)
			})
		}
	})
}

func TestMessagesOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		eve, _ := e.guest("eve")
		id := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r"})["id"].(string)
		e.do("POST", "/v1/rooms/"+id+"/join", bob, nil)
		path := "/v1/rooms/" + id + "/messages"
		bad := []struct {
			name  string
			body  any
			field string
		}{
			{"no type", map[string]any{"data": 1}, "type"},
			{"long type", map[string]any{"type": strings.Repeat("x", 33), "data": 1}, "type"},
			{"control in type", map[string]any{"type": "a\tb", "data": 1}, "type"},
			{"no data", map[string]any{"type": "chat"}, "data"},
			{"data over 4 KiB", map[string]any{"type": "chat", "data": strings.Repeat("x", 4100)}, "data"},
			{"empty to", map[string]any{"type": "chat", "data": 1, "to": []int{}}, "to"},
			{"repeated to", map[string]any{"type": "chat", "data": 1, "to": []int{2, 2}}, "to"},
			{"to a non-member", map[string]any{"type": "chat", "data": 1, "to": []int{7}}, "to"},
			{"unknown field", map[string]any{"type": "chat", "data": 1, "from": 3}, "from"},
		}
		for _, c := range bad {
			t.Run(c.name, func(t *testing.T) {
				r := e.do("POST", path, alice, c.body)
				want(t, r, 422, "VALIDATION_FAILED")
				if !strings.Contains(r.raw, `"field":"`+c.field) {
					t.Errorf("errors do not name %s: %s", c.field, r.raw)
				}
			})
		}
		want(t, e.do("POST", path, eve, map[string]any{"type": "chat", "data": 1}), 403, "NOT_A_MEMBER")
		want(t, e.do("POST", path, alice, "{"), 400, "MALFORMED_REQUEST")

		want(t, e.do("POST", path, alice, map[string]any{"type": "chat", "data": "hi all"}), 202, "")
		want(t, e.do("POST", path, bob, map[string]any{"type": "dm", "data": "to alice", "to": []int{1}}), 202, "")
		want(t, e.do("POST", path, alice, map[string]any{"type": "note", "data": "self", "to": []int{1}}), 202, "")
		list := func(token, query string) []any {
			r := e.do("GET", path+query, token, nil)
			want(t, r, 200, "")
			return r.body["messages"].([]any)
		}
		if ms := list(alice, ""); len(ms) != 3 || ms[0].(map[string]any)["type"] != "note" {
			t.Errorf("alice sees %v", ms)
		}
		if ms := list(bob, ""); len(ms) != 2 {
			t.Errorf("bob sees %d messages, want 2 (his own dm and the broadcast)", len(ms))
		}
		ms := list(alice, "?limit=1")
		if len(ms) != 1 {
			t.Fatalf("limit=1: %v", ms)
		}
		before := strconv.Itoa(int(ms[0].(map[string]any)["version"].(float64)))
		if older := list(alice, "?before="+before); len(older) != 2 {
			t.Errorf("before=%s: %v", before, older)
		}
		for _, q := range []string{"?limit=0", "?limit=101", "?limit=x", "?before=0", "?before=-3"} {
			want(t, e.do("GET", path+q, alice, nil), 422, "VALIDATION_FAILED")
		}
		want(t, e.do("GET", path, eve, nil), 403, "NOT_A_MEMBER")
	})
}

// What users send goes out as they sent it: <, > and & in a room's name,
// its state and a message are written as they are by the room's GET, the
// state's, the messages' and the stream's snapshot, not as six bytes each
// (\u003c: an abuse tester's 64 KiB of '<' in a state went out as 384 KiB
// in every GET and snapshot).
func TestHTMLCharactersGoAsSent(t *testing.T) {
	const sent = "<b>&amp;</b>"
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		id := e.create(alice, map[string]any{"name": sent, "mode": "m", "region": "r"})["id"].(string)
		// as a client sends them, not as encoding/json writes a request
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"k":"`+sent+`"}`), 200, "")
		want(t, e.do("POST", "/v1/rooms/"+id+"/messages", alice, `{"type":"chat","data":"`+sent+`"}`), 202, "")
		s := e.open("/v1/rooms/" + id + "/events?token=" + e.streamToken(alice, "/v1/rooms/"+id))
		var snapshot string
		for snapshot == "" {
			line, err := s.rd.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended before its snapshot: %v", err)
			}
			if strings.HasPrefix(line, "data: ") {
				snapshot = line
			}
		}
		// live events, built by the scripts from what the store wrote: a
		// room_updated with the attributes and the name, a player_joined
		// with a player's name
		bob, _ := e.guest(sent)
		want(t, e.do("PATCH", "/v1/rooms/"+id, alice, `{"name":"`+sent+`!","attributes":{"a":"`+sent+`"}}`), 200, "")
		want(t, e.do("POST", "/v1/rooms/"+id+"/join", bob, nil), 200, "")
		var updated, joined string
		for updated == "" || joined == "" {
			line, err := s.rd.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended before room_updated and player_joined: %v", err)
			}
			switch {
			case strings.Contains(line, `"type":"room_updated"`):
				updated = line
			case strings.Contains(line, `"type":"player_joined"`):
				joined = line
			}
		}
		state := e.do("GET", "/v1/rooms/"+id+"/state", alice, nil)
		if state.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("headers %v, want X-Content-Type-Options: nosniff", state.header)
		}
		for what, body := range map[string]string{
			"GET room":      e.do("GET", "/v1/rooms/"+id, alice, nil).raw,
			"GET state":     state.raw,
			"GET messages":  e.do("GET", "/v1/rooms/"+id+"/messages", alice, nil).raw,
			"snapshot":      snapshot,
			"room_updated":  updated,
			"player_joined": joined,
		} {
			if !strings.Contains(body, sent) || strings.Contains(body, `\u00`) {
				t.Errorf("%s: %s, want %q as sent", what, body, sent)
			}
		}
	})
}

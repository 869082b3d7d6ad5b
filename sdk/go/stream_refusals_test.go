package realsync_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rs "github.com/realsync/realsync/sdk/go"
)

// answer is one connection's answer from a stand-in server.
type answer func(w http.ResponseWriter, r *http.Request)

func problem(status int, code string, hdr ...string) answer {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		io.WriteString(w, `{"type":"about:blank","title":"t","status":`+strconv.Itoa(status)+`,"detail":"d","code":"`+code+`"}`)
	}
}

// events answers with an event stream of body, then ends it (or, hold,
// keeps it open silently until the client goes).
func events(body string, hold bool) answer {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
		w.(http.Flusher).Flush()
		if hold {
			<-r.Context().Done()
		}
	}
}

const snapshotFrame = "retry: 3000\n\nid: 5-abc\nevent: snapshot\ndata: {\"type\":\"snapshot\",\"roomId\":\"r1\",\"version\":5,\"ts\":\"2026-11-21T20:11:06.123Z\",\"room\":{\"id\":\"r1\"},\"state\":{},\"stateVersion\":0}\n\n"

// Transient refusals (5xx, 429 with Retry-After, a store-unavailable
// stream, a silent connection) are retried with backoff; the request
// carries the token in its header and the last id; a 404 of the
// (private) room, once the stream was open, ends it left.
func TestStreamRetriesTransientRefusals(t *testing.T) {
	answers := []answer{
		problem(500, "INTERNAL"),
		problem(429, "STREAM_OPENS_LIMITED", "Retry-After", "1"),
		events("retry: 200\n: store unavailable, retry later\n\n", false), // 503 as a stream: come back in 200 ms
		events(snapshotFrame, true),                                       // then silent: the idle timeout replaces it
		events("retry: 200\n: store unavailable, retry later\n\n", false), // after a drop: not a resume yet
		events(": ping\n\nid: 6-abc\nevent: state\ndata: {\"type\":\"state\",\"roomId\":\"r1\",\"version\":6,\"by\":0,\"set\":{\"n\":1},\"del\":[],\"stateVersion\":1}\n\n", false),
		problem(404, "ROOM_NOT_FOUND"),
	}
	var mu sync.Mutex
	var seen []string // per request: its Last-Event-ID
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n := len(seen)
		seen = append(seen, r.Header.Get("Last-Event-ID"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer tok" || r.URL.RawQuery != "" || r.URL.Path != "/v1/rooms/r1/events" ||
			r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("request %d: %s %v", n, r.URL, r.Header)
		}
		if n < len(answers) {
			answers[n](w, r)
			return
		}
		t.Errorf("request %d after the end", n)
	})
	// the backoff's own delays stay short; its Max leaves room for the server's asks
	c := rs.New(srv.URL, rs.WithToken("tok"), rs.WithBackoff(rs.Backoff{Base: 5 * time.Millisecond, Max: 2 * time.Second, Reset: time.Hour}))
	// the idle timeout also bounds each answer's headers: 1 s leaves a
	// loaded machine room for them, and is the silent connection's end
	st := c.Stream(ctx(t), "r1", rs.IdleTimeout(time.Second))
	defer st.Close()
	var items []rs.Event
	for ev := range st.Events() {
		items = append(items, ev)
	}
	want := "connecting reconnecting connecting reconnecting connecting open reconnecting connecting open snapshot " +
		"reconnecting connecting open reconnecting connecting open resumed(snapshot=false) state reconnecting connecting closed(left)"
	if k := kinds(items); k != want {
		t.Fatalf("items:\n%s\nwant:\n%s", k, want)
	}
	// Attempts count from 1 since the stream was last open, as in every
	// SDK; the backoff does not start over with them (Reset is an hour here).
	var rec []*rs.Reconnecting
	var attempts []string
	for _, ev := range items {
		switch e := ev.(type) {
		case *rs.Reconnecting:
			rec = append(rec, e)
			attempts = append(attempts, "r"+strconv.Itoa(e.Attempt))
		case *rs.Connecting:
			attempts = append(attempts, "c"+strconv.Itoa(e.Attempt))
		}
	}
	if got, want := strings.Join(attempts, " "), "c1 r2 c2 r3 c3 r1 c1 r1 c1 r1 c1 r1 c1"; got != want {
		t.Fatalf("attempts %s, want %s", got, want)
	}
	if rs.StatusOf(rec[0].Err) != 500 || !rs.IsCode(rec[1].Err, "STREAM_OPENS_LIMITED") || rec[1].Delay < time.Second ||
		rec[2].Delay < 200*time.Millisecond || !strings.Contains(rec[3].Err.Error(), "no data") || rec[3].Delay >= time.Second ||
		rec[4].Delay < 200*time.Millisecond {
		t.Fatalf("reconnections: %+v %+v %+v %+v", rec[0], rec[1], rec[2], rec[3])
	}
	last := items[len(items)-1].(*rs.Closed)
	if !rs.IsCode(last.Err, "ROOM_NOT_FOUND") {
		t.Fatalf("closed: %+v", last)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(seen, ","); got != ",,,,5-abc,5-abc,6-abc" {
		t.Fatalf("Last-Event-ID per request: %s", got)
	}
	if st.LastEventID() != "6-abc" {
		t.Fatalf("last id %s", st.LastEventID())
	}
}

// An answer that is no event stream, or a 4xx other than 408 and 429,
// is permanent.
func TestStreamPermanentRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer answer
		status int
	}{
		{"410", problem(410, "ROOM_NOT_FOUND"), 410},
		{"422", problem(422, "VALIDATION_FAILED"), 422},
		{"not an event stream", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>") }, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(t, http.HandlerFunc(tc.answer))
			st := rs.New(srv.URL, fastBackoff).Stream(ctx(t), "r1")
			err := st.Ready()
			if rs.StatusOf(err) != tc.status {
				t.Fatalf("got %v", err)
			}
			if ev, err2 := st.Next(); kinds([]rs.Event{ev}) != "connecting" || err2 != nil {
				t.Fatalf("first item %v %v", ev, err2)
			}
			if ev, err2 := st.Next(); !errors.Is(err2, err) || ev.(*rs.Closed).Reason != rs.ClosedError {
				t.Fatalf("second item %v %v", ev, err2)
			}
			if tc.status == 200 && !strings.Contains(err.Error(), `"text/html; charset=utf-8", not an event stream`) {
				t.Fatalf("error %q does not name the content type", err)
			}
		})
	}
}

// Connecting.Attempt and Reconnecting.Attempt count from 1 again after
// every connection that opened, even one dropped at once (the backoff
// still grows over such drops).
func TestStreamAttemptsRestartOnOpen(t *testing.T) {
	answers := []answer{
		problem(503, "STORE_UNAVAILABLE"),
		events(snapshotFrame, false), // opens, then ends at once
		events("", false),
		events("", false),
		problem(404, "ROOM_NOT_FOUND"),
	}
	var mu sync.Mutex
	n := 0
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		answers[min(i, len(answers)-1)](w, r)
	})
	st := rs.New(srv.URL, fastBackoff).Stream(ctx(t), "r1")
	var got []string
	for ev := range st.Events() {
		switch ev := ev.(type) {
		case *rs.Connecting:
			got = append(got, "connecting"+strconv.Itoa(ev.Attempt))
		case *rs.Reconnecting:
			got = append(got, "reconnecting"+strconv.Itoa(ev.Attempt))
		default:
			got = append(got, ev.EventType())
		}
	}
	want := "connecting1 reconnecting2 connecting2 open snapshot reconnecting1 connecting1 open reconnecting1 connecting1 open " +
		"reconnecting1 connecting1 closed"
	if k := strings.Join(got, " "); k != want {
		t.Fatalf("items:\n%s\nwant:\n%s", k, want)
	}
}

// A retry: a connection ended with, no event after it (a shutdown's last
// line), is the least delay of the next attempt and of the refused ones
// after it, until a connection brings an event; a stream's first retry:,
// superseded by its events, is not; a Retry-After or retry: counts up to
// Backoff.Max however long it asks.
func TestStreamWaitsTheRetryItEndedWith(t *testing.T) {
	stateFrame := func(v int) string {
		return fmt.Sprintf("id: %d-abc\nevent: state\ndata: {\"type\":\"state\",\"roomId\":\"r1\",\"version\":%d,\"by\":0,\"set\":{\"n\":%d},\"del\":[],\"stateVersion\":%d}\n\n", v, v, v, v)
	}
	answers := []answer{
		events(snapshotFrame+stateFrame(6)+"retry: 700\n\n", false), // a shutdown: events, then the retry:
		problem(500, "INTERNAL"),                                    // refused: the retry: still counts
		events(": ping\n\n", false),                                 // a heartbeat is no event: still counts
		events(stateFrame(7), false),                                // an event: the backoff's pace again
		events("retry: 99999999\n: store unavailable, retry later\n\n", false),
		problem(429, "STREAM_OPENS_LIMITED", "Retry-After", "3600"),
		problem(404, "ROOM_NOT_FOUND"),
	}
	var n atomic.Int32
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if i := int(n.Add(1)) - 1; i < len(answers) {
			answers[i](w, r)
			return
		}
		t.Errorf("request after the end")
	})
	max := time.Second
	c := rs.New(srv.URL, rs.WithToken("tok"), rs.WithBackoff(rs.Backoff{Base: 5 * time.Millisecond, Max: max, Reset: time.Hour}))
	st := c.Stream(ctx(t), "r1")
	defer st.Close()
	var rec []time.Duration
	for ev := range st.Events() {
		if r, ok := ev.(*rs.Reconnecting); ok {
			rec = append(rec, r.Delay)
		}
	}
	// the backoff alone stays below 5 ms·2^5 = 160 ms over these 6 attempts
	want := []func(time.Duration) bool{
		func(d time.Duration) bool { return d >= 700*time.Millisecond && d < max },
		func(d time.Duration) bool { return d >= 700*time.Millisecond && d < max },
		func(d time.Duration) bool { return d >= 700*time.Millisecond && d < max },
		func(d time.Duration) bool { return d < 160*time.Millisecond },
		func(d time.Duration) bool { return d == max },
		func(d time.Duration) bool { return d == max },
	}
	if len(rec) != len(want) {
		t.Fatalf("%d reconnections (%v), want %d", len(rec), rec, len(want))
	}
	for i, ok := range want {
		if !ok(rec[i]) {
			t.Errorf("reconnection %d waited %s (all: %v)", i+1, rec[i], rec)
		}
	}
}

// A stream that was open and whose reconnection is refused because the
// player was removed while away (403 NOT_A_MEMBER; a private room's 404)
// ends left, the room gone (a public room's or an API key's 404) ends
// room_closed, each with the refusal in Closed.Err and no error paired;
// any other refusal, or one on the first connection, ends with the error.
func TestStreamRemovedWhileAway(t *testing.T) {
	snap := func(vis string) string {
		return "id: 5-abc\nevent: snapshot\ndata: {\"type\":\"snapshot\",\"roomId\":\"r1\",\"version\":5,\"ts\":\"2026-11-21T20:11:06.123Z\",\"room\":{\"id\":\"r1\",\"visibility\":\"" + vis + "\"},\"state\":{},\"stateVersion\":0}\n\n"
	}
	madePrivate := "id: 6-abc\nevent: room_updated\ndata: {\"type\":\"room_updated\",\"roomId\":\"r1\",\"version\":6,\"ts\":\"2026-11-21T20:11:07.123Z\",\"changes\":{\"visibility\":\"private\"}}\n\n"
	for _, tc := range []struct {
		name    string
		answers []answer
		key     bool
		reason  string
		code    string
		paired  bool // an error paired with the Closed item
	}{
		{"private room, 403 NOT_A_MEMBER", []answer{events(snap("private"), false), problem(403, "NOT_A_MEMBER")}, false, rs.ClosedLeft, "NOT_A_MEMBER", false},
		{"public room, 403 NOT_A_MEMBER", []answer{events(snap("public"), false), problem(403, "NOT_A_MEMBER")}, false, rs.ClosedLeft, "NOT_A_MEMBER", false},
		{"private room, 404", []answer{events(snap("private"), false), problem(404, "ROOM_NOT_FOUND")}, false, rs.ClosedLeft, "ROOM_NOT_FOUND", false},
		{"public room, 404: gone", []answer{events(snap("public"), false), problem(404, "ROOM_NOT_FOUND")}, false, rs.ClosedRoomClosed, "ROOM_NOT_FOUND", false},
		{"public, made private, 404", []answer{events(snap("public")+madePrivate, false), problem(404, "ROOM_NOT_FOUND")}, false, rs.ClosedLeft, "ROOM_NOT_FOUND", false},
		{"an API key's stream, 404: gone", []answer{events(snap("private"), false), problem(404, "ROOM_NOT_FOUND")}, true, rs.ClosedRoomClosed, "ROOM_NOT_FOUND", false},
		{"403 BANNED after open", []answer{events(snap("public"), false), problem(403, "BANNED")}, false, rs.ClosedError, "BANNED", true},
		{"403 NOT_A_MEMBER on the first connection", []answer{problem(403, "NOT_A_MEMBER")}, false, rs.ClosedError, "NOT_A_MEMBER", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if i := int(n.Add(1)) - 1; i < len(tc.answers) {
					tc.answers[i](w, r)
					return
				}
				t.Errorf("request after the end")
			})
			cred := rs.WithToken("tok")
			if tc.key {
				cred = rs.WithAPIKey("key")
			}
			st := rs.New(srv.URL, cred, fastBackoff).Stream(ctx(t), "r1")
			defer st.Close()
			var last *rs.Closed
			var lastErr error
			for ev, err := range st.Events() {
				if c, ok := ev.(*rs.Closed); ok {
					last, lastErr = c, err
				}
			}
			if last == nil || last.Reason != tc.reason || !rs.IsCode(last.Err, tc.code) || (lastErr != nil) != tc.paired {
				t.Fatalf("closed %+v paired with %v, want %s with %s (error paired: %v)", last, lastErr, tc.reason, tc.code, tc.paired)
			}
		})
	}
}

// A server that takes the request and never answers (a hung proxy, a
// half-open connection) is given up after the idle timeout, as a silent
// stream is, and the stream connects again.
func TestStreamGivesUpAnUnansweredOpening(t *testing.T) {
	var n atomic.Int32
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			<-r.Context().Done() // no headers, ever
			return
		}
		problem(404, "ROOM_NOT_FOUND")(w, r)
	})
	st := rs.New(srv.URL, rs.WithToken("tok"), fastBackoff).Stream(ctx(t), "r1", rs.IdleTimeout(300*time.Millisecond))
	defer st.Close()
	var items []rs.Event
	for ev := range st.Events() {
		items = append(items, ev)
	}
	if k, want := kinds(items), "connecting reconnecting connecting closed(error)"; k != want {
		t.Fatalf("items: %s, want %s", k, want)
	}
	if err := items[1].(*rs.Reconnecting).Err; !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Fatalf("reconnecting: %v", err)
	}
	if n.Load() != 2 {
		t.Fatalf("%d requests, want 2", n.Load())
	}
}

// IdleTimeout(0) turns the watchdog off, as 0 does in the TypeScript and
// C# SDKs: a stream whose server is slow to answer and then quiet is
// kept (it cancelled every opening at once before).
func TestStreamWithoutIdleTimeout(t *testing.T) {
	var n atomic.Int32
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 1 {
			problem(404, "ROOM_NOT_FOUND")(w, r)
			return
		}
		time.Sleep(50 * time.Millisecond) // the answer takes a while
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, snapshotFrame)
		w.(http.Flusher).Flush()
		time.Sleep(50 * time.Millisecond) // then nothing, not even a heartbeat
		io.WriteString(w, "id: 6-abc\nevent: room_closed\ndata: {\"type\":\"room_closed\",\"roomId\":\"r1\",\"version\":6,\"reason\":\"deleted\"}\n\n")
	})
	st := rs.New(srv.URL, rs.WithToken("tok"), fastBackoff).Stream(ctx(t), "r1", rs.IdleTimeout(0))
	defer st.Close()
	var items []rs.Event
	for ev := range st.Events() {
		items = append(items, ev)
	}
	if k, want := kinds(items), "connecting open snapshot room_closed closed(room_closed)"; k != want {
		t.Fatalf("items: %s, want %s", k, want)
	}
}

package main

import (
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// server runs the API in process on the embedded store.
func server(t *testing.T) string { return serverWith(t, nil) }

// serverWith is server with the API's handler wrapped by wrap (none when nil).
func serverWith(t *testing.T, wrap func(http.Handler) http.Handler) string {
	st, err := store.Open(context.Background(), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	hub := sse.NewHub(sse.Config{Source: st, Lobby: st.Listing(), Feed: st.Feed, RoomJSON: api.RoomJSON})
	h := api.NewHandler(api.Config{Rooms: rooms.NewService(st), Lobby: lobby.NewService(st.Listing()),
		Events: hub, Auth: &api.Auth{Secret: []byte("s"), GuestEnabled: true}, Ready: st.Ping, Spec: realsync.OpenAPI})
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); hub.Close(); st.Close() })
	return srv.URL
}

// Refused stream openings are counted by code: a 429's Retry-After is
// waited, then that stream opens and gets every patch; after a 403 that
// stream ends and is expected nothing; nothing counts as a reconnect.
func TestSSERunCountsRefusedStreams(t *testing.T) {
	var retried atomic.Int64 // when the 429's stream came back, in ns since the refusal
	var refusedAt atomic.Int64
	url := answeringOpenings(t, func(n int32, w http.ResponseWriter) bool {
		switch n {
		case 1:
			refusedAt.Store(time.Now().UnixNano())
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"status":429,"code":"STREAM_OPENS_LIMITED"}`)
			return true
		case 2:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"status":403,"code":"NOT_A_MEMBER"}`)
			return true
		case 7:
			retried.Store(time.Now().UnixNano() - refusedAt.Load())
		}
		return false
	})
	c := Config{URLs: []string{url}, Rooms: 1, Streams: 6, Rate: 40, Duration: time.Second}
	r, err := runSSE(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"STREAM_OPENS_LIMITED": 1, "NOT_A_MEMBER": 1}; !maps.Equal(r.StreamRefusals, want) {
		t.Errorf("refusals %v, want %v", r.StreamRefusals, want)
	}
	if r.Patches == 0 || r.Expected != r.Patches*5 || r.Delivered != r.Expected || r.StreamDrops != 0 {
		t.Errorf("report %+v", r)
	}
	if d := time.Duration(retried.Load()); d < time.Second {
		t.Errorf("the refused stream came back %s after its 429, before its Retry-After", d)
	}
	if r.OpenedInS < 1 {
		t.Errorf("every stream open in %.2f s, before the refused one's Retry-After", r.OpenedInS)
	}
}

// Reconnects are counted by why the stream ended: one stream's first
// response ends after its first event (the server ended it), another's is
// cut after its headers (its connection closed mid-body); both come before
// the first write, reconnect and get every patch.
func TestSSERunCountsReconnectsByReason(t *testing.T) {
	url := answeringOpenings(t, func(n int32, w http.ResponseWriter) bool {
		switch n {
		case 1:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: 0-x\nevent: snapshot\ndata: {}\n\n")
			return true
		case 2:
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection closes mid-body
		}
		return false
	})
	c := Config{URLs: []string{url}, Rooms: 1, Streams: 4, Rate: 40, Duration: time.Second}
	r, err := runSSE(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"server ended the stream": 1, "unexpected EOF": 1}
	if !maps.Equal(r.StreamDropReasons, want) || r.StreamDrops != 2 || r.StreamDropsOpening != 2 {
		t.Errorf("reconnects %d (%d before the first write), by reason %v; want 2 (2), %v", r.StreamDrops, r.StreamDropsOpening, r.StreamDropReasons, want)
	}
	if r.Patches == 0 || r.Expected != r.Patches*4 || r.Delivered != r.Expected {
		t.Errorf("report %+v", r)
	}
}

// A short run against an in-process server on the embedded store: every
// stream gets every patch of its room, and the report adds up.
func TestSSERunDeliversEverything(t *testing.T) {
	c := Config{URLs: []string{server(t)}, Rooms: 2, Streams: 6, Rate: 40, Duration: time.Second}
	r, err := runSSE(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Patches == 0 || r.PatchErrors != 0 || r.Expected != r.Patches*3 || r.Delivered != r.Expected {
		t.Fatalf("report %+v", r)
	}
	if r.LatencyMaxms < r.LatencyP99ms || r.LatencyP99ms < r.LatencyP50ms {
		t.Errorf("percentiles out of order: %+v", r)
	}
}

// A run's setup sends a request answered 503 again after its Retry-After,
// as the contract lets a client, where a busy machine's slow store used
// to end a CI smoke run (2026-12-06): the first guest, room create and
// join are each refused once, and the run is set up and delivers
// everything. A 4xx is not sent again.
func TestSetupSendsA503Again(t *testing.T) {
	var refused sync.Map
	url := serverWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			kind := r.Method + " " + r.URL.Path
			if strings.HasSuffix(kind, "/join") {
				kind = "join"
			}
			setup := kind == "POST /v1/auth/guest" || kind == "POST /v1/rooms" || kind == "join"
			if _, done := refused.LoadOrStore(kind, true); setup && !done {
				w.Header().Set("Retry-After", "1")
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"code":"STORE_UNAVAILABLE","detail":"The store cannot be reached; retry later."}`)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	c := Config{URLs: []string{url}, Rooms: 1, Streams: 3, Rate: 20, Duration: time.Second}
	r, err := runSSE(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"POST /v1/auth/guest", "POST /v1/rooms", "join"} {
		if _, ok := refused.Load(kind); !ok {
			t.Errorf("%s was never refused: the test did not exercise its retry", kind)
		}
	}
	if r.Patches == 0 || r.PatchErrors != 0 || r.Expected != r.Patches*3 || r.Delivered != r.Expected {
		t.Fatalf("report %+v", r)
	}
	var tries atomic.Int64
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tries.Add(1)
		w.WriteHeader(http.StatusConflict)
	}))
	defer bad.Close()
	var he *httpError
	if err := setupCall(context.Background(), "POST", bad.URL, "", nil, nil); !errors.As(err, &he) || he.status != 409 || tries.Load() != 1 {
		t.Fatalf("a 409: %v after %d tries, want it returned after 1", err, tries.Load())
	}
}

// A short fanout run against the minimal server, its events handed over
// in process and through Redis Pub/Sub, over HTTP/1.1 (a connection a
// stream) and h2c (-h2c on both sides: one connection): every stream gets
// every frame of its room.
func TestFanoutRunDeliversEverything(t *testing.T) {
	for _, tc := range []struct {
		name          string
		viaRedis, h2c bool
	}{{"direct", false, false}, {"redis", true, false}, {"redis-h2c", true, true}} {
		viaRedis := tc.viaRedis
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			var rdb *redis.Client
			if viaRedis {
				s, err := redistest.StartServer()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Stop)
				rdb = redis.NewClient(&redis.Options{Addr: s.Addr})
				t.Cleanup(func() { rdb.Close() })
			}
			h, err := minimalHandler(ctx, rdb)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewUnstartedServer(h)
			srv.Config.Protocols = minimalProtocols(tc.h2c)
			var conns atomic.Int64
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			if tc.h2c {
				was := client
				client = h2cClient()
				t.Cleanup(func() { client = was })
			}
			r, err := runFanout(context.Background(), Config{URLs: []string{srv.URL}, Rooms: 2, Streams: 6, Rate: 40, Duration: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if r.Patches == 0 || r.PatchErrors != 0 || r.Expected != r.Patches*3 || r.Delivered != r.Expected {
				t.Fatalf("report %+v", r)
			}
			// six streams and the publishes: one connection over h2c, one a
			// stream at least over HTTP/1.1
			if n := conns.Load(); tc.h2c && n != 1 || !tc.h2c && n < 6 {
				t.Errorf("%d connections over %s", n, tc.name)
			}
			if viaRedis {
				n, err := rdb.Do(ctx, "INFO", "stats").Text()
				if err != nil || !strings.Contains(n, "pubsub_patterns:1") {
					t.Errorf("the events did not go through the pattern subscription: %v %q", err, n)
				}
			}
		})
	}
}

// The server's CPU per event is read from the first write to the last
// delivery, before the streams begin to close; the streams' closing is
// read apart, after it, until the server is quiet. A server whose CPU time
// cannot be read once the streams closed (gone) gives no closing figure.
func TestStreamsRunLeavesTheClosingOutOfTheWindow(t *testing.T) {
	h, err := minimalHandler(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, gone := range []bool{false, true} {
		var closed atomic.Bool
		var seen []bool // whether the streams had begun to close, at each read
		c := Config{URLs: []string{srv.URL}, Rooms: 2, Streams: 6, Rate: 40, Duration: time.Second, RSSPid: os.Getpid(),
			closing: func() { closed.Store(true) },
			cpuOf: func(int) time.Duration {
				seen = append(seen, closed.Load())
				if gone && closed.Load() {
					return 0 // unreadable
				}
				// a second a read (the idle floor's two, the window's two,
				// the closing's first two), then 125 ms a read: quiet
				// against the floor (a second in 2 s) at 6.5 s, never
				// against nothing
				if n := time.Duration(len(seen)); n > 6 {
					return 6*time.Second + (n-6)*125*time.Millisecond
				}
				return time.Duration(len(seen)) * time.Second
			}}
		r, err := runFanout(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) < 5 || slices.Contains(seen[:4], true) || !seen[len(seen)-1] {
			t.Fatalf("gone %v: the streams had begun to close at the CPU reads: %v; want not at the idle floor's and the window's, then so", gone, seen)
		}
		if r.ServerIdleCPUms != 500 {
			t.Errorf("gone %v: idle floor %v ms a second, want 500", gone, r.ServerIdleCPUms)
		}
		if r.ServerCPUSeconds != 1 || r.ServerCPUPerEvent != 1e6/float64(r.Delivered) {
			t.Errorf("gone %v: CPU in the window %v s (%v µs an event of %d); want 1 s", gone, r.ServerCPUSeconds, r.ServerCPUPerEvent, r.Delivered)
		}
		switch {
		case gone && (r.ServerCloseCPUSeconds != 0 || r.ServerCloseCPUPerStream != 0):
			t.Errorf("a server gone: closing %v s (%v µs a stream), want none", r.ServerCloseCPUSeconds, r.ServerCloseCPUPerStream)
		case !gone && (r.ServerCloseCPUSeconds != 2.5 || r.ServerCloseCPUPerStream != 2.5e6/6 || r.ServerCloseNotQuiet):
			t.Errorf("closing %v s (%v µs a stream, not quiet %v); want 2.5 s, quiet", r.ServerCloseCPUSeconds, r.ServerCloseCPUPerStream, r.ServerCloseNotQuiet)
		}
	}
}

// quietCPU calls a server quiet against its idle floor: a steady 40 ms of
// CPU a second is quiet for a floor of 100 ms in 2 s and not for none.
func TestQuietCPUIsQuietAgainstTheIdleFloor(t *testing.T) {
	for _, tc := range []struct {
		idle  time.Duration
		quiet bool
	}{{100 * time.Millisecond, true}, {0, false}} {
		var reads time.Duration
		end, quiet := quietCPU(1, func(int) time.Duration { reads += 20 * time.Millisecond; return reads }, tc.idle, 3*time.Second)
		if quiet != tc.quiet || end != reads {
			t.Errorf("idle %v: quiet %v at %v (last read %v), want quiet %v at the last read", tc.idle, quiet, end, reads, tc.quiet)
		}
	}
}

// A short ops run with streams open: every kind of the mix is measured,
// nothing fails, and the streams get every patch of their rooms. The run
// goes on until each kind was answered 3 times (-min-count): on a busy
// machine 1 s of 4 clients drawing from 7 kinds left one out.
func TestOpsRunMeasuresEveryKind(t *testing.T) {
	mix, err := ParseMix("create=1,join=1,patch=1,list=1,quickjoin=1,get=1,healthz=1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := runOps(context.Background(), Config{URLs: []string{server(t)}, Clients: 4, Rooms: 2, Streams: 6, Duration: time.Second,
		MinCount: 3}, mix)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"create", "delete", "join", "leave", "patch", "list", "quickjoin", "get", "healthz"} {
		s := r.Ops[op]
		if s == nil || s.Count == 0 || len(s.ErrorCodes) > 0 || s.P50ms > s.P99ms || s.P99ms > s.Maxms {
			t.Errorf("%s: %+v", op, s)
		}
	}
	if st := r.Streams; st == nil || st.Streams != 6 || st.Expected == 0 || st.Delivered != st.Expected || st.StreamDrops != 0 {
		t.Errorf("streams: %+v", st)
	}
	if _, err := ParseMix("join=1,fly=2"); err == nil {
		t.Error("an unknown operation was accepted")
	}
}

// A closed ops run with a minimum count goes on past its duration until
// every kind of the mix was answered that many times, errors included,
// each step with its undo: against a server whose answers take 20 ms, a
// run of 1 ms of 2 clients measures at least 10 of each. A kind that is
// never answered ends the run with ctx, with an error that says the
// counts; a mix with join and a single pool room (joins go to another's)
// and an open loop refuse a minimum count.
func TestOpsRunGoesOnToTheMinimumCount(t *testing.T) {
	url := serverWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(20 * time.Millisecond)
			h.ServeHTTP(w, r)
		})
	})
	mix, err := ParseMix("join=1,get=1,healthz=1,list=0")
	if err != nil {
		t.Fatal(err)
	}
	c := Config{URLs: []string{url}, Clients: 2, Rooms: 2, Duration: time.Millisecond, MinCount: 10}
	r, err := runOps(context.Background(), c, mix)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"join", "leave", "get", "healthz"} {
		if s := r.Ops[op]; s == nil || s.Count < 10 || len(s.ErrorCodes) > 0 {
			t.Errorf("%s: %+v", op, s)
		}
	}
	if r.Ops["list"] != nil {
		t.Errorf("list, weighed 0, ran: %+v", r.Ops["list"])
	}
	if j, l := r.Ops["join"], r.Ops["leave"]; j != nil && l != nil && j.Count != l.Count {
		t.Errorf("joins %d, leaves %d: a step was cut before its undo", j.Count, l.Count)
	}

	// anchor: the API has no POST /anchor, answered 404 each time, and
	// counted: the run reaches its count all the same
	anchor, _ := ParseMix("get=1,anchor=1")
	r, err = runOps(context.Background(), c, anchor)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Ops["anchor"]; s == nil || s.ErrorCodes["NOT_FOUND"] < 10 {
		t.Errorf("anchor: %+v", s)
	}

	// a server that never answers one kind: the run's ctx ends it (here
	// cancelled by that kind's first request)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hang := serverWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" {
				cancel()
				<-r.Context().Done()
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	c.URLs = []string{hang}
	if _, err := runOps(ctx, c, mix); err == nil || !strings.Contains(err.Error(), "healthz 0") {
		t.Errorf("a kind never answered: %v", err)
	}

	c.URLs, c.Rooms = []string{url}, 1
	if _, err := runOps(context.Background(), c, mix); err == nil {
		t.Error("a minimum count of joins with one pool room (never joined: a client's own) was taken")
	}
	c.Rooms, c.ArrivalRate, c.MaxOutstanding = 2, 10, 10
	if _, err := runOps(context.Background(), c, mix); err == nil {
		t.Error("an open loop took a minimum count")
	}
}

// answeringOpenings is serverWith whose n-th event stream opening (from 1)
// answer may answer itself (true), else the server answers it.
func answeringOpenings(t *testing.T, answer func(n int32, w http.ResponseWriter) bool) string {
	var opens atomic.Int32
	return serverWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/events") && answer(opens.Add(1), w) {
				return
			}
			h.ServeHTTP(w, r)
		})
	})
}

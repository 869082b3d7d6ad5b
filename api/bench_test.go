package api_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/metrics"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// BenchmarkHTTP sends the hot requests through the real router, middlewares,
// authentication, decoding, metrics (as realsyncd wires them) and store to a
// standalone Redis, with 64 goroutines; only the network between client and
// server is left out (httptest.ResponseRecorder), so the figures are the
// server's own cost. Access lines are not written (the log level is warn).
// Concurrent Redis calls are batched per node as realsyncd's default
// (REALSYNC_REDIS_BATCH_WINDOW=0); REALSYNC_BENCH_BATCH=off sends each alone.
// Run:
//
//	go test ./api -run '^$' -bench HTTP -benchtime 3s
func BenchmarkHTTP(b *testing.B) {
	m := metrics.New(prometheus.NewRegistry(), "bench")
	batch := &store.Batching{}
	if os.Getenv("REALSYNC_BENCH_BATCH") == "off" {
		batch = nil
	}
	st := storetest.Open(b, store.Config{RedisURL: redistest.StandaloneURL(b), Prefix: redistest.Prefix(b), Shards: 16, Metrics: m, Batch: batch})
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	hub := sse.NewHub(sse.Config{Source: st, Lobby: st.Listing(), Feed: st.Feed, RoomJSON: api.RoomJSON, Log: log, Metrics: m})
	defer hub.Close()
	auth := &api.Auth{Secret: []byte("bench-secret"), GuestEnabled: true}
	cfg := api.Config{Rooms: rooms.NewService(st), Lobby: lobby.NewService(st.Listing()), Events: hub,
		Auth: auth, Ready: st.Ping, Spec: realsync.OpenAPI, Log: log, Metrics: m}
	h := api.NewHandler(cfg)
	// cached is h with the browsing cache on (REALSYNC_BROWSE_CACHE_TTL=1s).
	cfg.BrowseCache = api.NewBrowseCache(time.Second, m)
	cached := api.NewHandler(cfg)

	var seq atomic.Int64
	token := func() string {
		g, err := auth.Issue(fmt.Sprint("p", seq.Add(1)))
		if err != nil {
			b.Fatal(err)
		}
		return g.Token
	}
	// serveOn runs one request on handler and checks its status.
	serveOn := func(handler http.Handler, method, path, tok, body string, want int) error {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req := httptest.NewRequest(method, path, rd)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != want {
			return fmt.Errorf("%s %s: %d, want %d: %s", method, path, rec.Code, want, rec.Body)
		}
		return nil
	}
	// serve runs one request on h and checks its status.
	serve := func(method, path, tok, body string, want int) error {
		return serveOn(h, method, path, tok, body, want)
	}
	// room creates a public room of 100 seats with an open state policy.
	room := func(mode string) (id, owner string) {
		owner = token()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/v1/rooms", strings.NewReader(
			`{"name":"bench","mode":"`+mode+`","region":"eu","maxPlayers":100,"statePolicy":"open"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+owner)
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		id = rec.Header().Get("Location")
		return id[strings.LastIndexByte(id, '/')+1:], owner
	}
	// parallel runs op on 64 goroutines, each with a token of its own, and
	// reports the process's CPU time per op (cpu-µs/op: user+system from
	// getrusage, the client side of Redis included, Redis itself not),
	// which depends less than ns/op on what else the machine runs.
	parallel := func(b *testing.B, op func(tok string, i int) error) {
		b.SetParallelism(32) // 64 goroutines on 2 cores
		b.ReportAllocs()
		cpu0 := processCPU(b)
		defer func() { b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op") }()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			tok := token()
			for pb.Next() {
				if err := op(tok, int(seq.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}

	b.Run("GET healthz", func(b *testing.B) {
		parallel(b, func(string, int) error { return serve("GET", "/healthz", "", "", 200) })
	})
	b.Run("POST join+leave", func(b *testing.B) {
		var ids []string
		for range 4 {
			id, _ := room("join")
			ids = append(ids, id)
		}
		parallel(b, func(tok string, i int) error {
			path := "/v1/rooms/" + ids[i%4]
			if err := serve("POST", path+"/join", tok, "", 200); err != nil {
				return err
			}
			return serve("POST", path+"/leave", tok, "", 204)
		})
	})
	b.Run("PATCH state", func(b *testing.B) {
		id, owner := room("patch")
		parallel(b, func(_ string, i int) error {
			return serve("PATCH", "/v1/rooms/"+id+"/state", owner, `{"k`+strconv.Itoa(i%16)+`":`+strconv.Itoa(i)+`}`, 200)
		})
	})
	b.Run("GET room", func(b *testing.B) {
		id, owner := room("get")
		parallel(b, func(string, int) error { return serve("GET", "/v1/rooms/"+id, owner, "", 200) })
	})
	b.Run("GET rooms joinable fill", func(b *testing.B) {
		for range 40 {
			room("list")
		}
		parallel(b, func(tok string, _ int) error {
			return serve("GET", "/v1/rooms?mode=list&region=eu&joinable=true&sort=fill", tok, "", 200)
		})
	})
	b.Run("GET rooms joinable fill, cached", func(b *testing.B) {
		for range 40 {
			room("cached")
		}
		parallel(b, func(tok string, _ int) error {
			return serveOn(cached, "GET", "/v1/rooms?mode=cached&region=eu&joinable=true&sort=fill", tok, "", 200)
		})
	})
	b.Run("POST quick-join+leave", func(b *testing.B) {
		for range 4 {
			room("quick")
		}
		parallel(b, func(tok string, _ int) error {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", "/v1/matchmaking/quick-join", strings.NewReader(`{"mode":"quick","regions":["eu"]}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok)
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				return fmt.Errorf("quick-join: %d %s", rec.Code, rec.Body)
			}
			id := rec.Body.String()
			id = id[strings.Index(id, `"id":"`)+6:]
			return serve("POST", "/v1/rooms/"+id[:strings.IndexByte(id, '"')]+"/leave", tok, "", 204)
		})
	})
	b.Run("POST create+DELETE", func(b *testing.B) {
		parallel(b, func(tok string, _ int) error {
			id, owner := room("create")
			return serve("DELETE", "/v1/rooms/"+id, owner, "", 204)
		})
	})
}

// processCPU is the CPU time this process used so far (user + system).
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

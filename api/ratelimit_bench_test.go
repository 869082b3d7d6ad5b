package api_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/internal/metrics"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/ratelimit"
)

// BenchmarkHTTPRateLimit is GET /v1/rooms/{id} through the whole handler on
// a standalone Redis, with the limits off, on, and on with leases as
// realsyncd runs them by default (REALSYNC_RATE_LIMIT_LEASE 1s) (limits
// so high nothing is refused, so only their cost shows), 64 goroutines,
// one user:
//
//	go test ./api -run '^$' -bench HTTPRateLimit -benchtime 3s
func BenchmarkHTTPRateLimit(b *testing.B) {
	prefix := redistest.Prefix(b)
	st := storetest.Open(b, store.Config{RedisURL: redistest.StandaloneURL(b), Prefix: prefix, Shards: 16})
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m := metrics.New(prometheus.NewRegistry(), "bench")
	hub := sse.NewHub(sse.Config{Source: st, Lobby: st.Listing(), Feed: st.Feed, RoomJSON: api.RoomJSON, Log: log, Metrics: m})
	defer hub.Close()
	auth := &api.Auth{Secret: []byte("bench-secret"), GuestEnabled: true}
	high, err := limits.Parse("read=1000000/s,read.ip=1000000/s")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		lim  api.RateLimiter
	}{
		{"off", nil},
		{"on", ratelimit.New(ratelimit.Config{Client: st.Client(), Prefix: prefix})},
		{"leased", ratelimit.New(ratelimit.Config{Client: st.Client(), Prefix: prefix, LeaseTTL: time.Second})},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := api.NewHandler(api.Config{Rooms: rooms.NewService(st), Lobby: lobby.NewService(st.Listing()), Events: hub,
				Auth: auth, Ready: st.Ping, Spec: realsync.OpenAPI, Log: log, Metrics: m, RateLimiter: tc.lim, RateLimits: high})
			owner, _ := auth.Issue("owner")
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", "/v1/rooms", strings.NewReader(`{"name":"b","mode":"m","region":"eu","maxPlayers":4}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+owner.Token)
			h.ServeHTTP(rec, req)
			loc := rec.Header().Get("Location")
			path := "/v1/rooms/" + loc[strings.LastIndexByte(loc, '/')+1:]
			b.SetParallelism(32)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					rec := httptest.NewRecorder()
					req := httptest.NewRequest("GET", path, nil)
					req.Header.Set("Authorization", "Bearer "+owner.Token)
					h.ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Errorf("%d %s", rec.Code, rec.Body)
						return
					}
				}
			})
		})
	}
}

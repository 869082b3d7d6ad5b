package api_test

import (
	"context"
	"log/slog"
	"net"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
	idemstore "github.com/realsync/realsync/store/idempotency"
)

// Every 503 the API answers says when to come back: a Retry-After of 1 to
// 3 s (jittered) from the one error table, whichever way it came about:
// Redis refusing connections, Redis accepting and never answering (the
// store's read timeout; the request timeout ends the request then), the instance not connected yet (the
// routes and /readyz), a request a shutdown cut before it began. 503
// OVERLOADED's is TestOverloadedInstanceRefusesFast's.
func TestEvery503SaysWhenToRetry(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, reads, never answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	drained := new(api.Detached)
	if err := drained.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		redis    string // where the store points
		ready    bool   // connected (Config.Available, Config.Ready)
		detached *api.Detached
		method   string
		path     string
		hdr      []string
	}{
		{"StoreRefuses", "redis://127.0.0.1:1", true, nil, "GET", "/v1/rooms", nil},
		{"StoreSilent", "redis://" + silent.Addr().String(), true, nil, "GET", "/v1/rooms", nil},
		{"NotConnected", "redis://127.0.0.1:1", false, nil, "GET", "/v1/rooms", nil},
		{"NotReady", "redis://127.0.0.1:1", false, nil, "GET", "/readyz", nil},
		{"NotReadyHead", "redis://127.0.0.1:1", false, nil, "HEAD", "/readyz", nil},
		{"ShutdownCut", "redis://127.0.0.1:1", true, drained, "POST", "/v1/rooms", []string{"Idempotency-Key", "k1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := store.New(store.Config{RedisURL: c.redis, Shards: 4})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			auth := &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true}
			h := api.NewHandler(api.Config{Rooms: rooms.NewService(st), Lobby: lobby.NewService(st.Listing()), Auth: auth,
				Ready:     func(ctx context.Context) error { return st.Ping(ctx) },
				Available: func() bool { return c.ready }, Spec: realsync.OpenAPI, Log: slog.New(slog.DiscardHandler),
				RequestTimeout: 300 * time.Millisecond, Idempotency: idemstore.New(st.Base()), Detached: c.detached})
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			e := &env{t: t, url: srv.URL}
			tok, _ := e.guest("alice")
			var body any
			if c.method == "POST" {
				body = arena
			}
			r := e.do(c.method, c.path, tok, body, c.hdr...)
			if r.status != 503 {
				t.Fatalf("%d %s, want 503", r.status, r.raw)
			}
			if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 3 {
				t.Fatalf("503 %s with Retry-After %q, want 1 to 3 (s)", r.raw, r.header.Get("Retry-After"))
			}
		})
	}
}

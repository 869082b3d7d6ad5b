package api_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// Before the instance connected to the store, every route that needs it is
// refused without reaching it (here nothing listens where the store
// points): 503 STORE_UNAVAILABLE, event streams a 200 with a retry line;
// health, the spec and guest tokens are served, and 401 still comes first.
func TestRoutesWaitForTheStore(t *testing.T) {
	st, err := store.New(store.Config{RedisURL: "redis://127.0.0.1:1", Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.DiscardHandler)
	hub := sse.NewHub(sse.Config{Source: st, Lobby: st.Listing(), Feed: st.Feed, RoomJSON: api.RoomJSON, Log: log})
	h := api.NewHandler(api.Config{Rooms: rooms.NewService(st), Lobby: lobby.NewService(st.Listing()), Events: hub,
		Auth:      &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true},
		Ready:     func(context.Context) error { return errors.New("connecting") },
		Available: func() bool { return false }, Spec: realsync.OpenAPI, Log: log})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { hub.Close(); srv.Close() })
	e := &env{t: t, url: srv.URL}
	tok, _ := e.guest("alice")

	tests := []struct {
		name, method, path, token string
		status                    int
		code                      string
		stream                    bool // a 200 event stream that only says when to retry
	}{
		{"Healthz", "GET", "/healthz", "", 200, "", false},
		{"Readyz", "GET", "/readyz", "", 503, "STORE_UNAVAILABLE", false},
		{"Spec", "GET", "/openapi.yaml", "", 200, "", false},
		{"List", "GET", "/v1/rooms", tok, 503, "STORE_UNAVAILABLE", false},
		{"Create", "POST", "/v1/rooms", tok, 503, "STORE_UNAVAILABLE", false},
		{"MyRooms", "GET", "/v1/me/rooms", tok, 503, "STORE_UNAVAILABLE", false},
		{"Unauthenticated", "GET", "/v1/rooms", "", 401, "UNAUTHENTICATED", false},
		{"RoomEvents", "GET", "/v1/rooms/00abcdefghijklmn/events", tok, 200, "", true},
		{"LobbyEvents", "GET", "/v1/lobby/events", tok, 200, "", true},
		// the router reaches GET /v1/rooms/{roomId}: no stream
		{"EncodedEvents", "GET", "/v1/rooms/00abcdefghijklmn%2Fevents", tok, 503, "STORE_UNAVAILABLE", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			var body any
			if tc.method == "POST" {
				body = arena
			}
			r := e.do(tc.method, tc.path, tc.token, body)
			want(t, r, tc.status, tc.code)
			// 1 s: a restart's clients come back at once, and the store
			// most often connects within it
			if tc.stream && (r.header.Get("Content-Type") != "text/event-stream" || !strings.HasPrefix(r.raw, "retry: 1000\n")) {
				t.Errorf("stream answer %q %q, want an event stream with a retry line of 1 s", r.header.Get("Content-Type"), r.raw)
			}
		})
	}
}

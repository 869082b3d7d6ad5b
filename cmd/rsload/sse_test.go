package main

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// A short run against an in-process server on the embedded store: every
// stream gets every patch of its room, and the report adds up.
func TestSSERunDeliversEverything(t *testing.T) {
	st, err := store.Open(context.Background(), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hub := sse.NewHub(sse.Config{Source: st, Lobby: st, Feed: st.Feed, RoomJSON: api.RoomJSON})
	srv := httptest.NewServer(api.NewHandler(api.Config{Rooms: rooms.NewService(st), Lobby: lobby.NewService(st),
		Events: hub, Auth: &api.Auth{Secret: []byte("s"), GuestEnabled: true}, Ready: st.Ping, Spec: realsync.OpenAPI}))
	defer srv.Close()
	defer hub.Close()

	c := Config{URLs: []string{srv.URL}, Rooms: 2, Streams: 6, Rate: 40, Duration: time.Second}
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

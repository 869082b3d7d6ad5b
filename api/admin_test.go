package api_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/fleet"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/internal/testlog"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

const adminToken = "admin-token-of-at-least-32-characters-0123"

// adminEnv is an API on backend b whose admin token is token ("" none).
func adminEnv(t *testing.T, b redistest.Backend, token string) *env {
	t.Helper()
	st := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
		Prefix: redistest.Prefix(t), Shards: 4})
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := api.NewHandler(api.Config{Rooms: rooms.NewService(st), Lobby: lobby.NewService(st.Listing()),
		Auth:  &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true},
		Ready: st.Ping, Spec: realsync.OpenAPI, Log: log, AdminToken: token, Instances: st.Fleet().Instances})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, store: st, logs: logs}
}

// Admin routes take the admin token and nothing else: 401 without it, with
// a wrong one or beside another credential (WWW-Authenticate: Bearer), 403 ADMIN_REQUIRED for a
// valid player token, 404 everywhere when no admin token is configured.
func TestAdminAuth(t *testing.T) {
	b := redistest.Backends(t)[0]
	on, off := adminEnv(t, b, adminToken), adminEnv(t, b, "")
	player, _ := on.guest("alice")
	offPlayer, _ := off.guest("alice")
	tests := []struct {
		name   string
		e      *env
		path   string // default /v1/admin/instances
		token  string // bearer token; "" none
		hdr    []string
		status int
		code   string
	}{
		{name: "NoToken", e: on, status: 401, code: "UNAUTHENTICATED"},
		{name: "PlayerToken", e: on, token: player, status: 403, code: "ADMIN_REQUIRED"},
		{name: "WrongAdminToken", e: on, token: adminToken + "x", status: 401, code: "UNAUTHENTICATED"},
		{name: "AdminTokenPrefix", e: on, token: adminToken[:31], status: 401, code: "UNAUTHENTICATED"},
		{name: "NotBearer", e: on, hdr: []string{"Authorization", "Basic " + adminToken}, status: 401, code: "UNAUTHENTICATED"},
		{name: "AdminTokenAsQuery", e: on, path: "/v1/admin/instances?access_token=" + adminToken, status: 401, code: "UNAUTHENTICATED"},
		{name: "AdminToken", e: on, token: adminToken, status: 200},
		{name: "LowercaseScheme", e: on, hdr: []string{"Authorization", "bearer " + adminToken}, status: 200},
		// one credential per request, as on every route
		{name: "AdminTokenBesidePlayerToken", e: on, hdr: []string{"Authorization", "Bearer " + adminToken, "Authorization", "Bearer " + player}, status: 401, code: "UNAUTHENTICATED"},
		{name: "AdminTokenBesideAPIKey", e: on, token: adminToken, hdr: []string{"X-API-Key", "rsk_any"}, status: 401, code: "UNAUTHENTICATED"},
		{name: "AdminTokenOnPlayerRoute", e: on, path: "/v1/me/rooms", token: adminToken, status: 401, code: "UNAUTHENTICATED"},
		{name: "UnknownAdminRouteNoToken", e: on, path: "/v1/admin/nope", status: 401, code: "UNAUTHENTICATED"},
		{name: "UnknownAdminRoute", e: on, path: "/v1/admin/nope", token: adminToken, status: 404, code: "NOT_FOUND"},
		{name: "DisabledNoToken", e: off, status: 404, code: "NOT_FOUND"},
		{name: "DisabledPlayerToken", e: off, token: offPlayer, status: 404, code: "NOT_FOUND"},
		{name: "DisabledAnyToken", e: off, token: adminToken, status: 404, code: "NOT_FOUND"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.e.t = t
			path := tc.path
			if path == "" {
				path = "/v1/admin/instances"
			}
			r := tc.e.do("GET", path, tc.token, nil, tc.hdr...)
			want(t, r, tc.status, tc.code)
			if got := r.header.Get("WWW-Authenticate"); (tc.status == 401) != strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate %q with %d", got, tc.status)
			}
		})
	}
	for _, e := range []*env{on, off} {
		if strings.Contains(e.logs.String(), adminToken[:31]) {
			t.Fatal("the admin token appears in the logs")
		}
	}
}

// The admin token lists the live instances as registered, oldest start
// first, on every backend.
func TestListInstances(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := adminEnv(t, b, adminToken)
		r := e.do("GET", "/v1/admin/instances", adminToken, nil)
		want(t, r, 200, "")
		if got := r.body["instances"].([]any); len(got) != 0 {
			t.Fatalf("instances before any registered: %v", got)
		}
		started := time.Date(2026, 11, 1, 12, 0, 0, 123_000_000, time.UTC)
		for i, id := range []string{"second", "first"} {
			in := fleet.Instance{ID: id, Addr: id + ":8080", Version: "v9", Streams: 10 + i,
				StartedAt: started.Add(time.Duration(1-i) * time.Minute)}
			if _, err := e.store.Fleet().HeartbeatInstance(context.Background(), in); err != nil {
				t.Fatal(err)
			}
		}
		r = e.do("GET", "/v1/admin/instances", adminToken, nil)
		want(t, r, 200, "")
		got := r.body["instances"].([]any)
		if len(got) != 2 {
			t.Fatalf("instances: %s", r.raw)
		}
		first := got[0].(map[string]any)
		if first["id"] != "first" || first["addr"] != "first:8080" || first["version"] != "v9" ||
			first["streams"] != 11.0 || first["startedAt"] != "2026-11-01T12:00:00.123Z" {
			t.Fatalf("first instance: %v", first)
		}
		hb, err := time.Parse(time.RFC3339, first["heartbeatAt"].(string))
		if err != nil || time.Since(hb) > 5*time.Second || time.Since(hb) < -5*time.Second {
			t.Fatalf("heartbeatAt %v (%v)", first["heartbeatAt"], err)
		}
		if got[1].(map[string]any)["id"] != "second" {
			t.Fatalf("order: %s", r.raw)
		}
	})
}

// With Redis gone the listing is 503 STORE_UNAVAILABLE, after the admin
// check.
func TestListInstancesStoreDown(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	e := adminEnv(t, redistest.Backend{Name: "own", URL: "redis://" + srv.Addr}, adminToken)
	srv.Kill()
	want(t, e.do("GET", "/v1/admin/instances", "", nil), 401, "UNAUTHENTICATED")
	want(t, e.do("GET", "/v1/admin/instances", adminToken, nil), 503, "STORE_UNAVAILABLE")
}

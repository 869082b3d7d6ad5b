package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/metrics"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/internal/testlog"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	idemstore "github.com/realsync/realsync/store/idempotency"
	"github.com/realsync/realsync/store/streamtokens"
	"github.com/realsync/realsync/store/tickets"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// env is a running API over one backend, with its metrics served at
// /metrics and its logs as JSON lines.
type env struct {
	t     *testing.T
	url   string
	store *store.Store
	logs  *testlog.Buffer
	// prefix is the store's key prefix
	prefix string
}

// newEnv starts the API on backend b; mut, when given, changes its
// configuration (rate limits, say).
func newEnv(t *testing.T, b redistest.Backend, guest bool, mut ...func(c *api.Config, st *store.Store, prefix string)) *env {
	t.Helper()
	return newEnvAuth(t, b, &api.Auth{Secret: []byte("test-secret"), GuestEnabled: guest}, mut...)
}

// newEnvAuth is newEnv with the given authentication.
func newEnvAuth(t *testing.T, b redistest.Backend, auth *api.Auth, mut ...func(c *api.Config, st *store.Store, prefix string)) *env {
	t.Helper()
	return newEnvStore(t, b, store.Quotas{}, auth, mut...)
}

// newEnvStore is newEnvAuth on a store with the quotas q.
func newEnvStore(t *testing.T, b redistest.Backend, q store.Quotas, auth *api.Auth, mut ...func(c *api.Config, st *store.Store, prefix string)) *env {
	t.Helper()
	return newEnvWrapped(t, b, q, auth, nil, mut...)
}

// newEnvWrapped is newEnvStore serving the API's handler through wrap
// (nil: as it is).
func newEnvWrapped(t *testing.T, b redistest.Backend, q store.Quotas, auth *api.Auth, wrap func(http.Handler) http.Handler, mut ...func(c *api.Config, st *store.Store, prefix string)) *env {
	t.Helper()
	return newEnvOn(t, b, func(c *store.Config) { c.Quotas = q }, auth, wrap, mut...)
}

// newEnvOn is newEnvWrapped on a store whose configuration storeMut changed.
func newEnvOn(t *testing.T, b redistest.Backend, storeMut func(*store.Config), auth *api.Auth, wrap func(http.Handler) http.Handler, mut ...func(c *api.Config, st *store.Store, prefix string)) *env {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "test")
	prefix := redistest.Prefix(t)
	sc := store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: prefix, Shards: 4, Metrics: m}
	storeMut(&sc)
	st := storetest.Open(t, sc)
	reg.MustRegister(metrics.NewShardStats(st.Listing().Stats, statsTTL, 0))
	logs := &testlog.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hangups := newHangups(t) // closed after the server and the hub
	hub := sse.NewHub(sse.Config{Source: st, Lobby: st.Listing(), Users: st.Sessions(), Feed: st.Feed, RoomJSON: api.RoomJSON, Log: log, Metrics: m})
	rs := rooms.New(rooms.Config{Store: st, Notices: players.Notices{Inbox: st.Sessions()}})
	cfg := api.Config{Rooms: rs, Lobby: lobby.NewService(st.Listing()), Events: hub, Players: players.NewService(st.Sessions()), Parties: players.NewParties(st.Sessions()),
		Direct: players.NewDirect(st.Sessions(), rs),
		Auth:   auth,
		Ready:  st.Ping, Spec: realsync.OpenAPI, Log: log, Idempotency: idemstore.New(st.Base()),
		Tickets: mustTickets(t, matchmaking.Config{Queue: tickets.New(st.Base(), st.UserLogs(), st.Renewals()), Quotas: st}),
		Metrics: m, MetricsHandler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		Hangups: hangups, StreamTokens: streamtokens.New(st.Base())}
	for _, f := range mut {
		f(&cfg, st, prefix)
	}
	h := api.NewHandler(cfg)
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.MaxHeaderBytes = api.MaxHeaderBytes // as realsyncd's
	srv.Start()
	t.Cleanup(func() { hub.Close(); srv.Close() })
	return &env{t: t, url: srv.URL, store: st, logs: logs, prefix: prefix}
}

// newHangups is a server's Hangups (api.Config.Hangups), as realsyncd's:
// closed when the test ends, after what the test registers later to
// clean up (its server and hub among them).
func newHangups(t testing.TB) *api.Hangups {
	t.Helper()
	h, err := api.NewHangups()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// mustTickets is the tickets service of cfg.
func mustTickets(tb testing.TB, cfg matchmaking.Config) *matchmaking.Service {
	tb.Helper()
	svc, err := matchmaking.NewService(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return svc
}

func eachBackend(t *testing.T, f func(t *testing.T, e *env)) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, newEnv(t, b, true)) })
	}
}

// resp is a decoded answer.
type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r resp) code() string { s, _ := r.body["code"].(string); return s }

// do sends a request; body may be a string (sent as is) or a value
// (JSON-encoded). ctype "" means application/json when there is a body.
func (e *env) do(method, path, token string, body any, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	set := map[string]bool{}
	for i := 0; i+1 < len(hdr); i += 2 {
		if set[hdr[i]] { // a header given twice is sent twice
			req.Header.Add(hdr[i], hdr[i+1])
			continue
		}
		set[hdr[i]] = true
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if bad := specMismatch(req, res.StatusCode, res.Header, raw); bad != "" {
		e.t.Errorf("%s %s answered %d %s, not as openapi.yaml lists: %s", method, path, res.StatusCode, raw, bad)
	}
	out := resp{status: res.StatusCode, header: res.Header, raw: string(raw)}
	json.Unmarshal(raw, &out.body)
	return out
}

func (e *env) guest(name string) (token, userID string) {
	e.t.Helper()
	r := e.do("POST", "/v1/auth/guest", "", map[string]any{"name": name})
	if r.status != 201 {
		e.t.Fatalf("guest: %d %s", r.status, r.raw)
	}
	return r.body["token"].(string), r.body["userId"].(string)
}

// streamToken fetches a stream token for path's stream (a room's events,
// or the lobby's) with identity token token.
func (e *env) streamToken(token, path string) string {
	e.t.Helper()
	route := "/v1/lobby/stream-token"
	if id, ok := strings.CutPrefix(path, "/v1/rooms/"); ok {
		id, _, _ = strings.Cut(id, "/")
		route = "/v1/rooms/" + id + "/stream-token"
	}
	r := e.do("POST", route, token, nil)
	if r.status != 201 {
		e.t.Fatalf("stream token: %d %s", r.status, r.raw)
	}
	return r.body["token"].(string)
}

func (e *env) create(token string, body map[string]any) map[string]any {
	e.t.Helper()
	r := e.do("POST", "/v1/rooms", token, body)
	if r.status != 201 {
		e.t.Fatalf("create: %d %s", r.status, r.raw)
	}
	return r.body["room"].(map[string]any)
}

func want(t *testing.T, r resp, status int, code string) {
	t.Helper()
	if r.status != status || r.code() != code {
		t.Fatalf("got %d %s, want %d %s: %s", r.status, r.code(), status, code, r.raw)
	}
	if status >= 400 && !strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("error content type %q", r.header.Get("Content-Type"))
	}
}

var arena = map[string]any{"name": "Arena", "mode": "battle", "region": "eu", "maxPlayers": 2}

var redistestEmbedded = redistest.Backend{Name: "embedded"}

package realsync_test

import (
	"cmp"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/metrics"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	rs "github.com/realsync/realsync/sdk/go"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	idemstore "github.com/realsync/realsync/store/idempotency"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// jwtSecret signs the server's tokens in these tests.
const jwtSecret = "sdk-go-test-secret"

// server is a RealSync API in process (httptest) on a real backend, with
// guest tokens on and three API keys.
type server struct {
	url string
	srv *httptest.Server
	// streams are the connections serving an event stream now.
	mu      sync.Mutex
	streams map[net.Conn]bool
	// refreshes counts the requests to POST /v1/auth/refresh.
	refreshes atomic.Int32
	keys      struct {
		all    string // rooms:read, rooms:write, rooms:admin
		reader string // rooms:read
	}
}

// serverOpts changes a server's store or hub settings.
type serverOpts struct {
	heartbeat   time.Duration    // the hub's; 15 s when 0
	clock       func() time.Time // the server's clock for tokens; time.Now when nil
	logMaxBytes int              // the store's room log cap; default when 0
	secret      string           // the secret that signs its tokens; jwtSecret when ""
}

// newServer starts the API on backend b; the test's cleanup stops it.
func newServer(t *testing.T, b redistest.Backend, o serverOpts) *server {
	t.Helper()
	s, stop, err := startServer(b, redistest.Prefix(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return s
}

// startServer starts the API on backend b with key prefix prefix; stop
// stops it. For tests (newServer) and examples (which have no T).
func startServer(b redistest.Backend, prefix string, o serverOpts) (s *server, stop func(), err error) {
	var stops []func()
	// not stop itself: a failure's return sets stop to nil before the
	// deferred call reads it
	cleanup := func() {
		for _, f := range slices.Backward(stops) {
			f()
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	s = &server{streams: map[net.Conn]bool{}}
	var lines []string
	for _, k := range []struct {
		out    *string
		id     string
		scopes rooms.Scope
	}{{&s.keys.all, "gs-1", rooms.ScopeRead | rooms.ScopeWrite | rooms.ScopeAdmin}, {&s.keys.reader, "reader", rooms.ScopeRead}} {
		key, rec, err := api.NewAPIKey(k.id, k.scopes)
		if err != nil {
			return nil, nil, err
		}
		*k.out = key
		lines = append(lines, rec.Line())
	}
	dir, err := os.MkdirTemp("", "sdk-go-keys-")
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "keys")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		return nil, nil, err
	}
	keys, err := api.LoadAPIKeys(path, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	m := metrics.New(prometheus.NewRegistry(), "test")
	st, err := store.Open(context.Background(), store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
		Prefix: prefix, Shards: 4, Metrics: m, LogMaxBytes: o.logMaxBytes})
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, func() { st.Close() })
	log := slog.New(slog.DiscardHandler)
	hub := sse.NewHub(sse.Config{Source: st, Lobby: st.Listing(), Feed: st.Feed, RoomJSON: api.RoomJSON, Log: log,
		Metrics: m, Heartbeat: o.heartbeat})
	h := api.NewHandler(api.Config{Rooms: rooms.NewService(st), Lobby: lobby.NewService(st.Listing()), Events: hub,
		Auth: &api.Auth{Secret: []byte(cmp.Or(o.secret, jwtSecret)), GuestEnabled: true, Now: o.clock}, APIKeys: keys,
		Ready: st.Ping, Spec: realsync.OpenAPI, Log: log, Metrics: m, Idempotency: idemstore.New(st.Base())})
	s.srv = httptest.NewUnstartedServer(s.trackStreams(h))
	s.srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	s.srv.Start()
	s.url = s.srv.URL
	stops = append(stops, func() { hub.Close(); s.srv.Close() })
	return s, cleanup, nil
}

// connKey holds a request's connection in its context.
type connKey struct{}

// trackStreams notes the connections of the event streams h serves, and
// counts token refreshes.
func (s *server) trackStreams(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/auth/refresh" {
			s.refreshes.Add(1)
		}
		if !strings.HasSuffix(r.URL.Path, "/events") {
			h.ServeHTTP(w, r)
			return
		}
		c := r.Context().Value(connKey{}).(net.Conn)
		s.mu.Lock()
		s.streams[c] = true
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.streams, c)
			s.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

// dropStreams closes the TCP connections of the open event streams (and
// only those: the REST calls of the test go on), as a network failure
// would.
func (s *server) dropStreams(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.streams) == 0 {
		t.Fatal("no event stream to drop")
	}
	for c := range s.streams {
		c.Close()
	}
}

// eachBackend runs f on a server over standalone Redis, Cluster and the
// embedded store.
func eachBackend(t *testing.T, o serverOpts, f func(t *testing.T, s *server)) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, newServer(t, b, o)) })
	}
}

// guest returns a client authenticated as a new guest.
func (s *server) guest(t *testing.T, name string) *rs.Client {
	t.Helper()
	c := rs.New(s.url)
	if _, err := c.Guest(ctx(t), name); err != nil {
		t.Fatal(err)
	}
	return c
}

// hostRoom signs in a guest "host" who creates a room named name: the
// host's client and the room's id.
func (s *server) hostRoom(t *testing.T, name string) (*rs.Client, string) {
	t.Helper()
	host := s.guest(t, "host")
	room, err := host.CreateRoom(ctx(t), arena(name))
	if err != nil {
		t.Fatal(err)
	}
	return host, room.Room.Id
}

// ctx is a context bounded for one test: nothing in these tests waits
// longer than this for an outcome.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// arena is a room to create.
func arena(name string) rs.CreateRoomRequest {
	return rs.CreateRoomRequest{Name: name, Mode: "battle", Region: "eu", MaxPlayers: ptr(4),
		Attributes: &rs.Attributes{"map": "dust2", "rank": 1500}}
}

func ptr[T any](v T) *T { return &v }

// redistestEmbedded is the embedded store, for tests whose subject is not
// the backend.
var redistestEmbedded = redistest.Backend{Name: "embedded"}

// newFake starts an HTTP server answering with h (a stand-in server for
// answers a real one gives only under faults).
func newFake(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// exampleServer starts a server on the embedded store for an Example (it
// has no T: a failure to start panics); stop stops it.
func exampleServer() (url, apiKey string, stop func()) {
	s, stop, err := startServer(redistestEmbedded, "example", serverOpts{})
	if err != nil {
		panic(err)
	}
	return s.url, s.keys.all, stop
}

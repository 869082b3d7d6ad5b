package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/store"
)

// browseEnv is a server whose browsing reads go through a BrowseCache of
// ttl on a clock the test moves.
func browseEnv(t *testing.T, b redistest.Backend, ttl time.Duration) (*env, *api.TestClock) {
	t.Helper()
	var clock *api.TestClock
	e := newEnv(t, b, true, func(c *api.Config, _ *store.Store, _ string) {
		c.BrowseCache, clock = api.NewBrowseCacheAt(ttl, c.Metrics)
	})
	return e, clock
}

// listIDs is the ids of the rooms of a list page.
func listIDs(t *testing.T, r resp) []string {
	t.Helper()
	want(t, r, 200, "")
	var ids []string
	for _, room := range r.body["rooms"].([]any) {
		ids = append(ids, room.(map[string]any)["id"].(string))
	}
	slices.Sort(ids)
	return ids
}

// A list page and the lobby's counts are answered from the cache until
// they are ttl old, whatever changed meanwhile; one query however its
// parameters are ordered, or with parameters the list does not read, is
// one answer; another query is read apart; a bad query is refused each
// time, never kept; the metrics count what was read and what was not.
func TestBrowseCacheKeepsAnswersForTheTTL(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e, clock := browseEnv(t, b, time.Second)
		tok, _ := e.guest("ann")
		room := func(name string) string {
			return e.create(tok, map[string]any{"name": name, "mode": "duel", "region": "eu", "maxPlayers": 4})["id"].(string)
		}
		a := room("a")
		players := func() float64 { return e.do("GET", "/v1/lobby/stats", tok, nil).body["players"].(float64) }
		if ids := listIDs(t, e.do("GET", "/v1/rooms?mode=duel&limit=10", tok, nil)); !slices.Equal(ids, []string{a}) {
			t.Fatalf("first page %v, want [%s]", ids, a)
		}
		if p := players(); p != 1 {
			t.Fatalf("players %v, want 1", p)
		}
		bb := room("b")
		for _, q := range []string{"mode=duel&limit=10", "limit=10&mode=duel", "limit=10&mode=duel&utm=x"} {
			if ids := listIDs(t, e.do("GET", "/v1/rooms?"+q, tok, nil)); !slices.Equal(ids, []string{a}) {
				t.Fatalf("%s within the TTL: %v, want the kept [%s]", q, ids, a)
			}
		}
		if p := players(); p != 1 {
			t.Fatalf("players within the TTL %v, want the kept 1", p)
		}
		both := []string{a, bb}
		slices.Sort(both)
		if ids := listIDs(t, e.do("GET", "/v1/rooms?mode=duel&limit=5", tok, nil)); !slices.Equal(ids, both) {
			t.Fatalf("another query: %v, want %v", ids, both)
		}
		for range 2 {
			want(t, e.do("GET", "/v1/rooms?mode=duel&attr.x.gte=abc", tok, nil), 422, "VALIDATION_FAILED")
		}
		clock.Add(time.Second)
		if ids := listIDs(t, e.do("GET", "/v1/rooms?limit=10&mode=duel", tok, nil)); !slices.Equal(ids, both) {
			t.Fatalf("after the TTL: %v, want %v", ids, both)
		}
		if p := players(); p != 2 {
			t.Fatalf("players after the TTL %v, want 2", p)
		}
		m := e.scrape()
		for _, c := range []struct {
			route, result string
			want          float64
		}{
			// reads: the first page, the other query, the two refused, the page after the TTL
			{"/v1/rooms", "miss", 5}, {"/v1/rooms", "hit", 3},
			{"/v1/lobby/stats", "miss", 2}, {"/v1/lobby/stats", "hit", 1},
		} {
			if got := m.value("realsync_browse_cache_requests_total", "route", c.route, "result", c.result); got != c.want {
				t.Errorf("%s %s: %v, want %v", c.route, c.result, got, c.want)
			}
		}
	})
}

// Many requests for one answer that is not kept read it once: the others
// wait for that read and get its answer.
func TestBrowseCacheReadsOnceForManyAtOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e, _ := browseEnv(t, b, time.Second)
		tok, _ := e.guest("ann")
		for i := range 30 {
			e.create(tok, map[string]any{"name": fmt.Sprint("r", i), "mode": "duel", "region": "eu", "maxPlayers": 4})
		}
		const n = 32
		bodies := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r := e.do("GET", "/v1/rooms?mode=duel&limit=20", tok, nil)
				if r.status != 200 {
					t.Errorf("request %d: %d %s", i, r.status, r.raw)
				}
				bodies[i] = r.raw
			})
		}
		wg.Wait()
		for i := range n {
			if bodies[i] != bodies[0] {
				t.Fatalf("answer %d differs from the first:\n%s\n%s", i, bodies[i], bodies[0])
			}
		}
		m := e.scrape()
		if miss, hit := m.value("realsync_browse_cache_requests_total", "route", "/v1/rooms", "result", "miss"),
			m.value("realsync_browse_cache_requests_total", "route", "/v1/rooms", "result", "hit"); miss != 1 || hit != n-1 {
			t.Errorf("%d requests: %v read, %v not, want 1 and %d", n, miss, hit, n-1)
		}
	})
}

// A cached answer is the answer: the same bytes and headers the same
// server without the cache sends for the same rooms.
func TestBrowseCacheAnswersAsWithout(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		var plain *httptest.Server
		cached := newEnv(t, b, true, func(c *api.Config, _ *store.Store, _ string) {
			plain = httptest.NewServer(api.NewHandler(*c))
			t.Cleanup(plain.Close)
			c.BrowseCache, _ = api.NewBrowseCacheAt(time.Second, c.Metrics)
		})
		tok, _ := cached.guest("ann")
		for i := range 3 {
			cached.create(tok, map[string]any{"name": fmt.Sprint("r", i), "mode": "duel", "region": "eu", "maxPlayers": 4, "attributes": map[string]any{"lvl": i}})
		}
		without := &env{t: t, url: plain.URL}
		for _, path := range []string{"/v1/rooms?mode=duel&limit=2", "/v1/rooms?attr.lvl.gte=1", "/v1/lobby/stats"} {
			want := without.do("GET", path, tok, nil)
			for range 2 { // read, then kept
				got := cached.do("GET", path, tok, nil)
				if got.status != want.status || got.raw != want.raw || got.header.Get("Content-Type") != want.header.Get("Content-Type") ||
					got.header.Get("Content-Length") != want.header.Get("Content-Length") {
					t.Fatalf("%s: cached %d %v %q, without %d %v %q", path, got.status, got.header, got.raw, want.status, want.header, want.raw)
				}
			}
		}
	})
}

// heldIndex is a store's listing whose List, while hold is set, waits
// for its context to end, as a read from a Redis that does not answer
// does (or for 10 s, the test's bound), and then fails with the
// context's error. Each held List's context is sent on held; arrived
// gets a value when a list request reaches the API (heldEnv).
type heldIndex struct {
	lobby.Index
	hold    atomic.Bool
	held    chan context.Context
	arrived chan struct{}
}

func (h *heldIndex) List(ctx context.Context, q lobby.Query) (lobby.Result, error) {
	if h.hold.Load() {
		h.held <- ctx
		select {
		case <-ctx.Done():
			return lobby.Result{}, ctx.Err()
		case <-time.After(10 * time.Second):
		}
	}
	return h.Index.List(ctx, q)
}

// try is do for another goroutine than the test's: a request that gets
// no answer is status 0, its error as raw.
func (e *env) try(method, path, token string) resp {
	req, _ := http.NewRequest(method, e.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return resp{raw: err.Error()}
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := resp{status: res.StatusCode, header: res.Header, raw: string(raw)}
	json.Unmarshal(raw, &out.body)
	return out
}

// heldEnv is browseEnv on a heldIndex, its requests bounded by timeout.
func heldEnv(t *testing.T, b redistest.Backend, timeout time.Duration) (*env, *heldIndex) {
	t.Helper()
	idx := &heldIndex{held: make(chan context.Context, 8), arrived: make(chan struct{}, 8)}
	arrive := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/rooms" && r.Method == "GET" {
				select {
				case idx.arrived <- struct{}{}:
				default:
				}
			}
			h.ServeHTTP(w, r)
		})
	}
	e := newEnvWrapped(t, b, store.Quotas{}, &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true}, arrive, func(c *api.Config, st *store.Store, _ string) {
		idx.Index = st.Listing()
		c.Lobby = lobby.NewService(idx)
		c.RequestTimeout = timeout
		c.BrowseCache, _ = api.NewBrowseCacheAt(time.Second, c.Metrics)
	})
	return e, idx
}

// A read shared through the cache is bounded by the request timeout of
// the request that runs it, as a read of its own is: requests waiting on
// a Redis that does not answer are answered 503 at their timeout, and
// the failure is not kept.
func TestBrowseCacheReadEndsAtTheRequestTimeout(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		const timeout = 500 * time.Millisecond
		e, idx := heldEnv(t, b, timeout)
		tok, _ := e.guest("ann")
		id := e.create(tok, map[string]any{"name": "a", "mode": "duel", "region": "eu", "maxPlayers": 4})["id"].(string)
		idx.hold.Store(true)
		answers := make(chan resp, 2)
		go func() { answers <- e.try("GET", "/v1/rooms?mode=duel", tok) }()
		ctx := <-idx.held
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > timeout {
			t.Errorf("the shared read's context has no deadline within the request timeout %s (deadline %v)", timeout, d)
		}
		go func() { answers <- e.try("GET", "/v1/rooms?mode=duel", tok) }() // waits for that read, or reads itself
		for range 2 {
			r := <-answers
			want(t, r, 503, "STORE_UNAVAILABLE")
		}
		idx.hold.Store(false)
		for range len(idx.held) { // a second request that came after the first read failed held a read of its own
			<-idx.held
		}
		if ids := listIDs(t, e.do("GET", "/v1/rooms?mode=duel", tok, nil)); !slices.Equal(ids, []string{id}) {
			t.Fatalf("after the failed read: %v, want [%s]", ids, id)
		}
	})
}

// A request that runs a shared read and whose client leaves ends its
// read; the requests that were waiting for that read read again and are
// answered.
func TestBrowseCacheReaderLeavingFailsNoOther(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e, idx := heldEnv(t, b, 0)
		tok, _ := e.guest("ann")
		id := e.create(tok, map[string]any{"name": "a", "mode": "duel", "region": "eu", "maxPlayers": 4})["id"].(string)
		idx.hold.Store(true)
		ctx, leave := context.WithCancel(context.Background())
		defer leave()
		left := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/rooms?mode=duel", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			res, err := http.DefaultClient.Do(req)
			if err == nil {
				res.Body.Close()
			}
			left <- err
		}()
		<-idx.arrived
		<-idx.held
		idx.hold.Store(false) // the reads from here on are answered
		answer := make(chan resp, 1)
		go func() { answer <- e.try("GET", "/v1/rooms?mode=duel", tok) }()
		<-idx.arrived // in the API, about to wait for the held read (or, later, to read on its own)
		leave()
		if err := <-left; !errors.Is(err, context.Canceled) {
			t.Errorf("the leaving client: %v, want its cancellation", err)
		}
		if ids := listIDs(t, <-answer); !slices.Equal(ids, []string{id}) {
			t.Fatalf("the request that stayed: %v, want [%s]", ids, id)
		}
	})
}

// panicIndex is a store's listing whose Stats panics while panics is set.
type panicIndex struct {
	lobby.Index
	panics atomic.Bool
}

func (p *panicIndex) Stats(ctx context.Context) (lobby.Stats, error) {
	if p.panics.Load() {
		panic("a bug in the stats read")
	}
	return p.Index.Stats(ctx)
}

// A read that panics is answered 500 INTERNAL and logged as a panic, as
// without the cache, and leaves nothing behind: the next request reads
// again (otter finishes a load that panicked; a load left registered
// would hold every later request for its key).
func TestBrowseCacheReadThatPanics(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		idx := &panicIndex{}
		e := newEnv(t, b, true, func(c *api.Config, st *store.Store, _ string) {
			idx.Index = st.Listing()
			c.Lobby = lobby.NewService(idx)
			c.BrowseCache, _ = api.NewBrowseCacheAt(time.Second, c.Metrics)
		})
		tok, _ := e.guest("ann")
		idx.panics.Store(true)
		want(t, e.do("GET", "/v1/lobby/stats", tok, nil), 500, "INTERNAL")
		if !strings.Contains(e.logs.String(), `"msg":"panic"`) {
			t.Errorf("no panic logged: %s", e.logs.String())
		}
		idx.panics.Store(false)
		if r := e.do("GET", "/v1/lobby/stats", tok, nil); r.status != 200 || r.body["players"] == nil {
			t.Fatalf("after the panic: %d %s", r.status, r.raw)
		}
	})
}

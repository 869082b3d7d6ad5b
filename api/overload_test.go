package api_test

import (
	"context"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/store"
)

// quickJoinLock is the key of user uid's quick-join lock in an env's
// store (4 shards): held by hand, it keeps the user's quick-join waiting,
// and so in flight.
func quickJoinLock(prefix, uid string) string {
	h := fnv.New32a()
	h.Write([]byte(uid))
	return store.ShardTags(prefix, 4, store.SchemaVersion)[h.Sum32()%4] + ":qjlock:" + uid
}

// An instance with REALSYNC_MAX_IN_FLIGHT requests in flight refuses the
// next, after REALSYNC_IN_FLIGHT_WAIT, 503 OVERLOADED with a Retry-After
// of 1 to 3 s, counted under the route "overloaded"; probes, /metrics,
// event streams and the admin routes still pass; a request that waits
// gets the place a finished one leaves.
func TestOverloadedInstanceRefusesFast(t *testing.T) {
	ctx := context.Background()
	var st *store.Store
	e := newEnv(t, redistestEmbedded, true, func(c *api.Config, s *store.Store, _ string) {
		c.Admission = api.Admission{Max: 2, Wait: 5 * time.Second} // the waiting request below gets its place within it, on a busy machine too
		st = s
	})
	carol, _ := e.guest("carol")
	id := e.create(carol, arena)["id"].(string)
	var tokens, locks []string
	for _, name := range []string{"ann", "bob"} {
		tok, uid := e.guest(name)
		tokens = append(tokens, tok)
		lock := quickJoinLock(e.prefix, uid)
		if err := st.Client().Set(ctx, lock, "held", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		locks = append(locks, lock)
	}
	// two quick-joins wait for their users' locks: both places taken
	done := make(chan int, 2)
	for _, tok := range tokens {
		go func() {
			req, _ := http.NewRequest("POST", e.url+"/v1/matchmaking/quick-join", strings.NewReader(`{"mode":"battle","regions":["us-west"]}`))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- 0
				return
			}
			res.Body.Close()
			done <- res.StatusCode
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(e.do("GET", "/metrics", "", nil).raw, "realsync_http_in_flight 2\n") {
		if time.Now().After(deadline) {
			t.Fatal("the two quick-joins never were in flight together")
		}
		time.Sleep(10 * time.Millisecond)
	}

	r := e.do("GET", "/v1/rooms", carol, nil)
	want(t, r, 503, "OVERLOADED")
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 3 {
		t.Errorf("Retry-After %q, want 1 to 3", r.header.Get("Retry-After"))
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q", ct)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if r := e.do("GET", path, "", nil); r.status != 200 {
			t.Errorf("%s while overloaded: %d %s", path, r.status, r.raw)
		}
	}
	stream, err := http.NewRequest("GET", e.url+"/v1/rooms/"+id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	stream.Header.Set("Authorization", "Bearer "+carol)
	sctx, cancel := context.WithCancel(ctx)
	res, err := http.DefaultClient.Do(stream.WithContext(sctx))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("a stream while overloaded: %v %v", res, err)
	}
	cancel()
	res.Body.Close()
	if m := e.do("GET", "/metrics", "", nil).raw; !strings.Contains(m, `realsync_http_requests_total{method="GET",route="overloaded",status="503"} 1`) {
		t.Errorf("the refusal is not counted under route overloaded:\n%s", grepLines(m, "realsync_http_requests_total"))
	}

	// a request that waits gets the place the first quick-join leaves
	waited := make(chan resp, 1)
	go func() {
		req, _ := http.NewRequest("GET", e.url+"/v1/rooms/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+carol)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			waited <- resp{}
			return
		}
		res.Body.Close()
		waited <- resp{status: res.StatusCode}
	}()
	time.Sleep(100 * time.Millisecond) // it waits (a bound of 5 s)
	if err := st.Client().Del(ctx, locks[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if s := <-done; s == 0 || s >= 500 { // NO_MATCH: the mode has no room there
		t.Errorf("the first quick-join: %d", s)
	}
	if r := <-waited; r.status != 200 {
		t.Errorf("a request waiting for a place: %d, want 200", r.status)
	}
	if err := st.Client().Del(ctx, locks[1]).Err(); err != nil {
		t.Fatal(err)
	}
	if s := <-done; s == 0 || s >= 500 {
		t.Errorf("the second quick-join: %d", s)
	}
	if m := e.do("GET", "/metrics", "", nil).raw; !strings.Contains(m, "realsync_http_in_flight 0\n") {
		t.Errorf("in flight after all ended:\n%s", grepLines(m, "realsync_http_in_flight"))
	}
}

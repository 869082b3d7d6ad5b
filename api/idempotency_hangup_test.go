package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/ratelimit"
)

// hangupEnv is an API whose Redis is reached through proxies, keeping
// each request's own context by its X-Request-Id, so that a test knows
// when the server saw a client hang up.
type hangupEnv struct {
	*env
	proxies []*redistest.Proxy
	mu      sync.Mutex
	ctxs    map[string]context.Context
}

// proxiedBackend is a backend whose nodes are reached through proxies.
type proxiedBackend struct {
	b       redistest.Backend
	proxies []*redistest.Proxy
}

// proxiedBackends are a standalone Redis and a Cluster of 3, each node
// reached through a proxy of its own: no embedded store (no wire to
// hold a reply on).
func proxiedBackends(t *testing.T) []proxiedBackend {
	standalone := redistest.StartProxy(t, strings.TrimPrefix(redistest.StandaloneURL(t), "redis://"))
	addrs, cluster := redistest.StartProxiedCluster(t, 3)
	return []proxiedBackend{
		{redistest.Backend{Name: "standalone", URL: "redis://" + standalone.Addr}, []*redistest.Proxy{standalone}},
		{redistest.Backend{Name: "cluster", ClusterAddrs: addrs}, cluster},
	}
}

// heldReadTimeout is the store's reply timeout in a hangupEnv: longer than
// any hold (each test waits at most 10 s for what it holds for). With the
// store's 2 s, a reply held while a loaded machine runs the hang-up (the
// client's half-close, the server seeing it) past 2 s failed the request
// (503, its outcome unknown: a script is sent once) instead of letting it
// end with its answer.
const heldReadTimeout = 30 * time.Second

// newHangupEnv starts the API on b (reached through proxies), with mut,
// its store's reply timeout heldReadTimeout.
func newHangupEnv(t *testing.T, b redistest.Backend, proxies []*redistest.Proxy, mut ...func(c *api.Config, st *store.Store, prefix string)) *hangupEnv {
	return newHangupEnvOn(t, b, proxies, func(c *store.Config) { c.ReadTimeout = heldReadTimeout }, mut...)
}

// newHangupEnvOn is newHangupEnv on a store whose configuration storeMut
// changed.
func newHangupEnvOn(t *testing.T, b redistest.Backend, proxies []*redistest.Proxy, storeMut func(*store.Config), mut ...func(c *api.Config, st *store.Store, prefix string)) *hangupEnv {
	h := &hangupEnv{proxies: proxies, ctxs: map[string]context.Context{}}
	h.env = newEnvOn(t, b, storeMut, &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true},
		func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if id := r.Header.Get("X-Request-Id"); id != "" {
					h.mu.Lock()
					h.ctxs[id] = r.Context()
					h.mu.Unlock()
				}
				next.ServeHTTP(w, r)
			})
		}, mut...)
	return h
}

// hangUpHeld sends a request as token, with request id id and the
// headers hdr, whose client hangs up once Redis ran the request that
// carries marker: that request's reply is held by the proxies until the
// server saw the hang-up (net/http cancelled the request's context), then
// let through, as a slow reply that comes after the client left. It
// returns the request's status as recorded in its access line, once
// written.
func (h *hangupEnv) hangUpHeld(marker, id, token, method, path, body string, hdr ...string) float64 {
	h.t.Helper()
	return h.hangUp(marker, false, id, token, method, path, body, hdr...)
}

// hangUp is hangUpHeld; with pastAnswer the reply is held until the
// request was answered and recorded (its access line written), as a
// Redis that does not answer within the request timeout.
func (h *hangupEnv) hangUp(marker string, pastAnswer bool, id, token, method, path, body string, hdr ...string) float64 {
	t := h.t
	t.Helper()
	held, releaseAll := h.hold(marker)
	defer releaseAll()
	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	req, _ := http.NewRequestWithContext(ctx, method, h.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Request-Id", id)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	answered := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		answered <- err
	}()
	select {
	case <-held:
		h.holdNoMore()
	case err := <-answered:
		t.Fatalf("%s answered (%v) before Redis ran the request that carries %q", id, err, marker)
	case <-time.After(10 * time.Second):
		t.Fatalf("no request carrying %q reached Redis within 10 s", marker)
	}
	hangUp()
	if err := <-answered; err == nil {
		t.Fatalf("%s answered while its reply was held", id)
	}
	h.sawHangUp(id)
	if pastAnswer {
		return h.accessStatus(id)
	}
	releaseAll()
	return h.accessStatus(id)
}

// hold arms every proxy to hold the reply to the next request that
// carries marker (HoldReplyTo): held is closed once one of them holds it
// (Redis ran the request); release lets the replies through.
func (h *hangupEnv) hold(marker string) (held <-chan struct{}, release func()) {
	ch := make(chan struct{})
	var once sync.Once
	var releases []func()
	for _, p := range h.proxies {
		got, release := p.HoldReplyTo(marker)
		releases = append(releases, release)
		go func() {
			select {
			case <-got:
				once.Do(func() { close(ch) })
			case <-h.t.Context().Done():
			}
		}()
	}
	return ch, func() {
		for _, r := range releases {
			r()
		}
	}
}

// holdNoMore disarms the proxies that hold nothing (hold's others).
func (h *hangupEnv) holdNoMore() {
	for _, p := range h.proxies {
		p.HoldReplyTo("")
	}
}

// quickJoiner returns the token of a new guest, alice, once another
// guest's quick-join has made the scripts known to the nodes (no NOSCRIPT
// round trip for a hold to catch).
func (h *hangupEnv) quickJoiner() string {
	h.t.Helper()
	alice, _ := h.guest("alice")
	bob, _ := h.guest("bob")
	want(h.t, h.do("POST", "/v1/matchmaking/quick-join", bob, map[string]any{"mode": "warm", "regions": []string{"eu"},
		"create": map[string]any{"name": "Warm", "maxPlayers": 2}}), 201, "")
	return alice
}

// sawHangUp waits (up to 10 s) until the server saw request id's client
// hang up: net/http cancelled the request's own context.
func (h *hangupEnv) sawHangUp(id string) {
	h.t.Helper()
	h.mu.Lock()
	server := h.ctxs[id]
	h.mu.Unlock()
	select {
	case <-server.Done():
	case <-time.After(10 * time.Second):
		h.t.Fatal("the server did not see the client hang up within 10 s")
	}
}

// accessStatus waits (up to 10 s) for request id's access line and
// returns its status.
func (h *hangupEnv) accessStatus(id string) float64 {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if line := h.accessLines()[id]; line != nil {
			status, _ := line["status"].(float64)
			return status
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatalf("no access line for %s within 10 s", id)
	return 0
}

// A client that hangs up after its quick-join with an Idempotency-Key ran
// in Redis (the room made, its answer not yet read) and sends it again
// with the key gets the first answer, replayed (201, created: true, the
// same room), and is in that one room: the request ran to its end for its
// key, recorded as 499 (nobody read its answer). It used to be cut by the
// hang-up at its next step (reading the room back), its key freed as after
// an error, and the retry ran again: 200, created: false (or, the room
// finished meanwhile, a second room).
func TestRetryAfterAHangupGetsTheFirstAnswer(t *testing.T) {
	for _, pb := range proxiedBackends(t) {
		t.Run(pb.b.Name, func(t *testing.T) {
			e := newHangupEnv(t, pb.b, pb.proxies)
			alice := e.quickJoiner()
			qj := `{"mode":"holdmode","regions":["eu"],"create":{"name":"Held","maxPlayers":2}}`
			// the mode's name is in the quick-join script's keys and
			// arguments only
			if status := e.hangUpHeld("holdmode", "qj-hangup", alice, "POST", "/v1/matchmaking/quick-join", qj,
				"Idempotency-Key", "qj-1"); status != 499 {
				t.Fatalf("the hung-up quick-join recorded as %v, want 499", status)
			}
			again := e.do("POST", "/v1/matchmaking/quick-join", alice, qj, "Idempotency-Key", "qj-1")
			if again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || again.body["created"] != true {
				t.Fatalf("sent again after the hang-up: %d %s (replayed %q); want the first answer, 201 created, replayed",
					again.status, again.raw, again.header.Get("Idempotent-Replayed"))
			}
			mine := e.do("GET", "/v1/me/rooms", alice, nil)
			rs, _ := mine.body["rooms"].([]any)
			if len(rs) != 1 || rs[0].(map[string]any)["id"] != again.body["room"].(map[string]any)["id"] {
				t.Fatalf("alice's rooms %s, want the one room of the answer %s", mine.raw, again.raw)
			}
		})
	}
}

// A room message with an Idempotency-Key whose client hung up runs to its
// end, and its own answer decides the room's count (handBackRoomCounts),
// not the 499 it is recorded as: a stranger's refused message takes
// nothing from the room's budget, and a member's message sent keeps its
// count (hanging up is no way past the room's rate).
func TestHungUpMessageCountsAsItsAnswer(t *testing.T) {
	set, err := limits.Parse("messages=4/h")
	if err != nil {
		t.Fatal(err)
	}
	for _, pb := range proxiedBackends(t) {
		t.Run(pb.b.Name, func(t *testing.T) {
			e := newHangupEnv(t, pb.b, pb.proxies, func(c *api.Config, st *store.Store, prefix string) {
				c.RateLimiter = ratelimit.New(ratelimit.Config{Client: st.Client(), Prefix: prefix,
					RoomTag: st.RoomTag})
				c.RateLimits = set
			})
			alice, _ := e.guest("alice")
			bob, _ := e.guest("bob")
			stranger, _ := e.guest("stranger")
			room := e.create(alice, arena)["id"].(string)
			want(t, e.do("POST", "/v1/rooms/"+room+"/join", bob, nil), 200, "")
			warm := e.create(bob, arena)["id"].(string) // the script known to the nodes
			want(t, e.do("POST", "/v1/rooms/"+warm+"/messages", bob, map[string]any{"type": "chat", "data": "warm"}), 202, "")
			path := "/v1/rooms/" + room + "/messages"
			if status := e.hangUpHeld("held-403", "msg-stranger", stranger, "POST", path, `{"type":"chat","data":"held-403"}`,
				"Idempotency-Key", "m-0"); status != 499 {
				t.Fatalf("the stranger's hung-up message recorded as %v, want 499", status)
			}
			sent := `{"type":"chat","data":"held-202"}`
			if status := e.hangUpHeld("held-202", "msg-alice", alice, "POST", path, sent, "Idempotency-Key", "m-1"); status != 499 {
				t.Fatalf("alice's hung-up message recorded as %v, want 499", status)
			}
			again := e.do("POST", path, alice, sent, "Idempotency-Key", "m-1")
			if again.status != 202 || again.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("sent again: %d %s, want 202 replayed", again.status, again.raw)
			}
			// alice's share, half the room's 4: the hung-up message and its replay
			want429(t, e.do("POST", path, alice, map[string]any{"type": "chat", "data": "third"}), "ROOM_RATE_LIMITED", "messages.room", 4, 3600, 1800)
			for range 2 { // the stranger's took nothing
				want(t, e.do("POST", path, bob, map[string]any{"type": "chat", "data": "bob"}), 202, "")
			}
			history := e.do("GET", path, alice, nil)
			var data []string
			for _, m := range history.body["messages"].([]any) {
				d, _ := json.Marshal(m.(map[string]any)["data"])
				data = append(data, string(d))
			}
			if strings.Join(data, " ") != `"bob" "bob" "held-202"` {
				t.Fatalf("the room's messages, newest first: %v", data)
			}
		})
	}
}

// A client that half-closes its connection after its request (shutdown
// SHUT_WR; net/http takes the end of its input for a hang-up and cancels
// the request's context) and still reads gets the answer of its
// quick-join with an Idempotency-Key, which ran to its end: 201, the room
// made, as a retry with the key gets it replayed. The request is recorded
// as 499 all the same (the server cannot tell it from a client that
// left). It got a bare "HTTP/1.1 499 status code 499" though the room was
// made and its answer recorded.
func TestHalfClosedClientReadsTheKeptAnswer(t *testing.T) {
	for _, pb := range proxiedBackends(t) {
		t.Run(pb.b.Name, func(t *testing.T) {
			e := newHangupEnv(t, pb.b, pb.proxies)
			alice := e.quickJoiner()
			qj := `{"mode":"halfmode","regions":["eu"],"create":{"name":"Half","maxPlayers":2}}`
			held, release := e.hold("halfmode")
			defer release()
			conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /v1/matchmaking/quick-join HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
				"Content-Type: application/json\r\nIdempotency-Key: half-1\r\nX-Request-Id: qj-half\r\nContent-Length: %d\r\n\r\n%s",
				alice, len(qj), qj)
			select {
			case <-held:
				e.holdNoMore()
			case <-time.After(10 * time.Second):
				t.Fatal("the quick-join did not reach Redis within 10 s")
			}
			// (a CI run once recorded it 201: were it answered already, the
			// hold caught another reply, and the half-close came too late)
			if line := e.accessLines()["qj-half"]; line != nil {
				t.Fatalf("the quick-join was answered before the half-close: %v", line)
			}
			if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			e.sawHangUp("qj-half")
			release()
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer after the half-close: %v", err)
			}
			raw, _ := io.ReadAll(res.Body)
			var first map[string]any
			json.Unmarshal(raw, &first)
			if res.StatusCode != 201 || first["created"] != true {
				t.Fatalf("answered %q %s after the half-close, want 201 created", res.Status, raw)
			}
			if status := e.accessStatus("qj-half"); status != 499 {
				t.Errorf("recorded as %v, want 499", status)
			}
			again := e.do("POST", "/v1/matchmaking/quick-join", alice, qj, "Idempotency-Key", "half-1")
			if again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || again.raw != string(raw) {
				t.Fatalf("sent again: %d %s (replayed %q); want the first answer %s, replayed",
					again.status, again.raw, again.header.Get("Idempotent-Replayed"), raw)
			}
		})
	}
}

// A request with an Idempotency-Key whose client hung up, and which then
// failed on the server's side (here its Redis reply held past the request
// timeout: 503), is recorded with that 5xx, not 499: a server failure
// counts as one in the metrics (RealSyncHigh5xxRatio) whether its client
// waited or not. Its key is freed, as after any error: the retry runs.
// It was recorded 499, the failure hidden among hang-ups.
func TestHungUpServerFailureIsRecordedAs5xx(t *testing.T) {
	for _, pb := range proxiedBackends(t) {
		t.Run(pb.b.Name, func(t *testing.T) {
			// the store's own reply timeout (2 s) fails the held call:
			// go-redis waits for a reply past the request's deadline
			e := newHangupEnvOn(t, pb.b, pb.proxies, func(*store.Config) {}, func(c *api.Config, _ *store.Store, _ string) {
				c.RequestTimeout = time.Second
			})
			alice := e.quickJoiner()
			qj := `{"mode":"failmode","regions":["eu"],"create":{"name":"Fail","maxPlayers":2}}`
			const route = "/v1/matchmaking/quick-join"
			if status := e.hangUp("failmode", true, "qj-fail", alice, "POST", route, qj, "Idempotency-Key", "fail-1"); status != 503 {
				t.Fatalf("the hung-up quick-join that timed out recorded as %v, want 503", status)
			}
			m := e.scrape()
			if v := m.value("realsync_http_requests_total", "route", route, "status", "503"); v != 1 {
				t.Errorf("%s requests with status 503: %v, want 1", route, v)
			}
			if v := m.value("realsync_http_requests_total", "route", route, "status", "499"); v != -1 {
				t.Errorf("%s requests with status 499: %v, want none", route, v)
			}
			// the key freed: the retry runs, and finds the room the first made
			again := e.do("POST", route, alice, qj, "Idempotency-Key", "fail-1")
			if again.status != 200 || again.header.Get("Idempotent-Replayed") != "" || again.body["created"] != false {
				t.Fatalf("sent again: %d %s (replayed %q); want it run again, 200 created: false",
					again.status, again.raw, again.header.Get("Idempotent-Replayed"))
			}
		})
	}
}

// hangUpReported is a request's context as net/http leaves it in the
// instant after it saw the client go away: cancelled (Err), while the
// contexts derived from it (the request timeout's) are not yet, their
// cancellation still to come from the goroutine that cancelled it. Frozen
// there: its Done stays the parent's, so nothing derived from it ends.
type hangUpReported struct{ context.Context }

func (hangUpReported) Err() error { return context.Canceled }

// A request with an Idempotency-Key is recorded 499 once net/http reported
// its client gone (its own context cancelled), even before the contexts
// derived from it are cancelled: its answer (201, the room made) is
// written all the same. The check was on a derived context: in that
// instant it was recorded 201 (TestHalfClosedClientReadsTheKeptAnswer,
// which waits for the request's own context and then lets the answer
// come, saw it once on a loaded machine).
func TestHangUpIsTheRequestsOwnContexts(t *testing.T) {
	e := newEnvWrapped(t, redistestEmbedded, store.Quotas{}, &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true},
		func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Idempotency-Key") != "" {
					r = r.WithContext(hangUpReported{r.Context()})
				}
				next.ServeHTTP(w, r)
			})
		})
	alice, _ := e.guest("alice")
	qj := `{"mode":"gone","regions":["eu"],"create":{"name":"Gone","maxPlayers":2}}`
	r := e.do("POST", "/v1/matchmaking/quick-join", alice, qj, "Idempotency-Key", "gone-1", "X-Request-Id", "qj-gone")
	if r.status != 201 || r.body["created"] != true {
		t.Fatalf("answered %d %s, want 201 created", r.status, r.raw)
	}
	if status := e.accessLines()["qj-gone"]["status"]; status != float64(499) {
		t.Fatalf("recorded as %v, want 499", status)
	}
}

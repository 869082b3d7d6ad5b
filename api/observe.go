package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync/internal/limits"
)

// Metrics observes HTTP requests; internal/metrics implements it with
// Prometheus. Request is called once per request, when it was answered (an
// event stream: when it ended), from the request's goroutine: it must be
// safe for concurrent use and cheap.
type Metrics interface {
	// Request records a request: route is the router's pattern
	// ("/v1/rooms/{roomId}/join", never the raw path) or "unmatched",
	// method as sent, status as answered, d the time to answer. streamed
	// says the answer was an event stream, and d its whole life.
	Request(route, method string, status int, d time.Duration, streamed bool)
	// RateLimited records a request refused by the limit name ("create",
	// "opens", "messages", …) in scope ("user", "ip", "room").
	RateLimited(name, scope string)
	// InFlight adds delta to the requests admission counts in flight
	// (overload.go).
	InFlight(delta int)
	// BrowseCache records a browsing read of route (GET /v1/rooms, GET
	// /v1/lobby/stats) taken through the BrowseCache: hit when it read
	// nothing itself (a kept answer, or another request's read it waited
	// for). A request that ended while it waited is not recorded.
	BrowseCache(route string, hit bool)
	// OpeningsWaiting adds delta to the stream requests waiting for a
	// place among the instance's openings (carry.go).
	OpeningsWaiting(delta int)
	// OpeningWaited records a stream request that had to wait d for a
	// place: outcome is "opened" (it got one), "gone" (its client went
	// away first) or "shutdown" (a shutdown cut it).
	OpeningWaited(outcome string, d time.Duration)
	// StreamTokenReused records a stream opening refused because its
	// stream token opened a stream already (streamuse.go); kind is the
	// stream's: "room", "lobby" or "me".
	StreamTokenReused(kind string)
}

type noMetrics struct{}

func (noMetrics) Request(string, string, int, time.Duration, bool) {}
func (noMetrics) RateLimited(string, string)                       {}
func (noMetrics) InFlight(int)                                     {}
func (noMetrics) BrowseCache(string, bool)                         {}
func (noMetrics) OpeningsWaiting(int)                              {}
func (noMetrics) OpeningWaited(string, time.Duration)              {}
func (noMetrics) StreamTokenReused(string)                         {}

// unmatchedRoute is the route of a request that matched no route: one
// label, whatever the path, so made-up paths cannot make up series.
const unmatchedRoute = "unmatched"

// quietRoutes are polled by machines (probes, scrapers) every few
// seconds: their access lines are debug, unless they failed.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// requestIDHeader carries a request's id, taken from the client when sane
// and echoed in the answer.
const requestIDHeader = "X-Request-Id"

// maxLoggedPath is how much of a request's path (and method) a log line
// carries: a path may be as long as the request line allows (64 KiB), and
// a stranger's requests that no limit counts (any path outside /v1 is a
// 404; a body over the route's cap a 413 before authentication) would each
// write it whole, as many bytes of log as the attacker sends.
const maxLoggedPath = 256

// cutAttr is key=v for the log, v cut to its first maxLoggedPath bytes
// (at a rune's start) and "…" when longer, with key_len=len(v) beside it
// (an empty group's members are inlined by slog's handlers).
func cutAttr(key, v string) slog.Attr {
	if len(v) <= maxLoggedPath {
		return slog.String(key, v)
	}
	n := maxLoggedPath
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return slog.Group("", slog.String(key, v[:n]+"…"), slog.Int(key+"_len", len(v)))
}

// pathAttr is the path of a request for a log line: path=…, cut with
// path_len past maxLoggedPath bytes (cutAttr).
func pathAttr(path string) slog.Attr { return cutAttr("path", path) }

// methodAttr is the method of a request for a log line, cut as a path is
// (a method is any token the request line holds).
func methodAttr(method string) slog.Attr { return cutAttr("method", method) }

// maxRequestID bounds a client's request id.
const maxRequestID = 128

// exchange is one request as the middlewares see it: its id, the
// authenticated user, and the answer's status. It wraps the response
// writer and sits in the request's context, one allocation for both.
type exchange struct {
	http.ResponseWriter
	id     string
	user   string // the authenticated user's id, once known
	status int
	wrote  bool
	// identity is the verified credential (asIdentity), once authenticated.
	identity      Identity
	authenticated bool
	line          *eventLine // the stream's connection, once the hub took it over
	shed          bool       // refused by admission (overload.go), before routing
	// unmatched: the router found no route (404, 405), so observe does
	// not walk it again for the route a refusal before routing was for
	unmatched bool
	// roomCounts are the room (and inbox) limits this request took a
	// count on: handed back when it is refused (handBackRoomCounts).
	roomCounts []limits.Check
	// recorded, when not 0, is the status the request is recorded with
	// (metrics, access log) instead of the one it answered: 499 for a
	// request with an Idempotency-Key whose client left before its
	// answer, which ran to its end all the same (answeredGone).
	recorded int
	// finish is run once the request was recorded: a detached run's end
	// (detach), which a shutdown waits for (Detached.Drain).
	finish []func()
	// client is the request's context as the API got it (clientContext).
	client context.Context
	// release gives the request's admission place back (admit), once its
	// answer is ready: its first WriteHeader or Write.
	release func()
}

func (x *exchange) WriteHeader(code int) {
	if !x.wrote && code >= 200 {
		x.status, x.wrote = code, true
		x.answered()
	}
	x.ResponseWriter.WriteHeader(code)
}

func (x *exchange) Write(b []byte) (int, error) {
	x.answered()
	return x.ResponseWriter.Write(b)
}

// answered gives the admission place back, once: what is left is writing
// the answer, which a client reading slowly may stretch to the write
// deadline (over HTTP/2, a flow-control window kept at 0).
func (x *exchange) answered() {
	if f := x.release; f != nil {
		x.release = nil
		f()
	}
}

// Unwrap lets http.ResponseController reach the real writer (flushes,
// deadlines).
func (x *exchange) Unwrap() http.ResponseWriter { return x.ResponseWriter }

type exchangeKey struct{}

func exchangeFrom(ctx context.Context) *exchange {
	x, _ := ctx.Value(exchangeKey{}).(*exchange)
	return x
}

// requestID returns the id of the request of ctx ("" outside a request).
func requestID(ctx context.Context) string {
	if x := exchangeFrom(ctx); x != nil {
		return x.id
	}
	return ""
}

// requestIDs makes up request ids: a random prefix per server and a
// counter, unique enough across instances and cheaper than random bytes
// per request.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	b := make([]byte, 6)
	rand.Read(b)
	return &requestIDs{prefix: hex.EncodeToString(b) + "-"}
}

// of returns the client's id when it is 1..128 characters of
// [A-Za-z0-9._-], else a new one.
func (g *requestIDs) of(client string) string {
	if saneRequestID(client) {
		return client
	}
	var buf [32]byte
	return string(strconv.AppendUint(append(buf[:0], g.prefix...), g.n.Add(1), 36))
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// unmatched marks r's exchange as routed to no route (unmatched).
func unmatched(r *http.Request) {
	if x := exchangeFrom(r.Context()); x != nil {
		x.unmatched = true
	}
}

// observe gives each request its id (X-Request-Id, echoed), then after the
// answer records it in the metrics and writes its access log line (info;
// debug for the quiet routes and for 429s): route pattern, method, path (never the
// query: it may carry access_token; cut past maxLoggedPath bytes, with
// path_len), status, duration, user id and request id. An event stream is logged and counted when it ends.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		x := &exchange{ResponseWriter: w, id: s.ids.of(r.Header.Get(requestIDHeader)), status: http.StatusOK, client: r.Context()}
		w.Header()[requestIDHeader] = []string{x.id}
		r = r.WithContext(context.WithValue(r.Context(), exchangeKey{}, x))
		defer func() {
			for _, f := range x.finish {
				f()
			}
		}()
		next.ServeHTTP(x, r)
		route := chi.RouteContext(r.Context()).RoutePattern()
		switch {
		case x.shed:
			route = shedRoute
		case route == "" && x.unmatched:
			route = unmatchedRoute
		case route == "":
			// refused before routing (authentication, a body over its
			// cap): counted and logged under the route it was for, by a
			// walk of the router; none: unmatched
			if route = routePattern(r); route == "" {
				route = unmatchedRoute
			}
		}
		streamed := x.status == http.StatusOK && w.Header().Get("Content-Type") == "text/event-stream"
		status := x.status
		if x.recorded != 0 {
			status = x.recorded
		}
		a := access{route: route, method: r.Method, path: r.URL.Path, status: status, streamed: streamed,
			user: x.user, id: x.id, start: start}
		if x.line != nil {
			// taken over by the hub (eventLine): counted and logged when
			// the stream ends, with only what the line needs kept
			x.line.onEnd(func() { s.record(context.Background(), a) })
			return
		}
		if c := carryingFrom(r.Context()); c != nil && c.rest != nil {
			c.after = func() { s.record(context.Background(), a) } // after the rest of the stream
			c.id = x.id
			return
		}
		s.record(r.Context(), a)
	})
}

// access is what a request's metrics and access log line say.
type access struct {
	route, method, path string
	status              int
	streamed            bool
	user, id            string
	start               time.Time
}

// record counts request a in the metrics and writes its access line.
func (s *Server) record(ctx context.Context, a access) {
	d := time.Since(a.start)
	s.metrics.Request(a.route, a.method, a.status, d, a.streamed)
	level := slog.LevelInfo
	if quietRoutes[a.route] && a.status < 500 || a.route == shedRoute || a.status == http.StatusTooManyRequests {
		// a shed request: counted, and one warning (admit); a rate-limited
		// one (429): counted (realsync_rate_limited_total too), and a
		// flood of them (20 000 HTTP/2 streams opened and reset in 1.4 s)
		// no flood of log lines
		level = slog.LevelDebug
	}
	if !s.log.Enabled(ctx, level) {
		return // no attributes built for a line not written
	}
	s.log.LogAttrs(ctx, level, "request", slog.String("route", a.route),
		methodAttr(a.method), pathAttr(a.path), slog.Int("status", a.status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000), slog.Bool("stream", a.streamed),
		slog.String("user", a.user), slog.String("request_id", a.id))
}

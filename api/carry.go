package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync/internal/growstack"
	"github.com/realsync/realsync/sse"
)

// A stream that stays with its request (HTTP/2, TLS, lobby and personal
// streams: every stream the hub does not take over) idles for its whole
// life in its handler's goroutine. Called the usual way, that goroutine
// holds every frame of the router and the middlewares under the handler,
// and a stack grown by the opening (authentication, Redis round trips, the
// snapshot's JSON) that the runtime shrinks only by halves, a garbage
// collection at a time: about 16 KiB a stream. carryStreams runs a
// stream request's router, middlewares and handler on a goroutine of
// their own instead; the handler's opening hands the rest of the stream
// back (streamClient.Carry, sse.Carrier), and the request's goroutine runs
// it on a stack that never held the opening, waiting (sse.Rest's Wait)
// right under carryStreams. The collector halves a stack when less than a
// quarter of it is in use (the runtime's 800-byte guard counted): an idle
// HTTP/2 stream's frames, net/http's included, are about 1.2 KiB, so its
// stack shrinks to 4 KiB; they were about 1.8 KiB while the stream's loop
// waited under its handler's closures, and the stack stayed at 8 KiB.
// Keep runRest's frame small. Nor does the rest keep the opening's heap:
// it runs on the request's context as carryStreams got it (carrying.base,
// streamContext), not on the one the router and the middlewares filled
// (the exchange, the route's context, the identity), and writes to
// net/http's writer, not through the exchange (streamClient.Carry).
//
// The openings carryStreams runs at once are bounded (maxStreamOpenings):
// a stream asked for past the bound waits on its request's goroutine,
// whose stack is small, for an opening to end. A storm of openings (an
// instance restarted, a network came back) otherwise runs every one of
// them at once, each with its goroutine, its snapshot and its share of
// the Redis replies: 10 000 h2c streams asked for at once peaked at
// 512–523 MiB resident and left about two goroutine records a stream (the
// runtime never frees one) and their garbage interleaved with what lives
// on; bounded at 256, 333–350 MiB, and 20.5–21.2 KiB a stream once the
// burst was released against 23.0–23.7, the openings taking 11.1–13.9 s
// against 9.6–12.1 (docs/PERFORMANCE-HISTORY.md, "Stream openings
// bounded"). An opening keeps its place while it computes, until its
// first write (streamClient.Send: a client that reads slowly must not
// hold a place while the write waits for it), it hands its rest over or
// its handler returns, whichever comes first, so a stream that ran its
// whole life in its handler would not keep one. Plain HTTP/1.1 room
// streams (takenOver) are bounded alike but not carried: they open on
// their connection's goroutine, and give their place back at the same
// points (Carry refuses their rest). Not bounded: a stream asked for with
// a body (which no EventSource sends), served as any request, since its
// body is read (limitBody) before anything else and a client can take its
// time sending it.

// carrying is a stream request's hand-over from its handler to
// carryStreams: the rest of the stream, and what must run after it (the
// request's access line, from observe).
type carrying struct {
	rest  sse.Rest
	after func()
	// base: the request's context as carryStreams got it, without the
	// router's and the middlewares' values; a carried stream runs on it
	// (streamContext)
	base context.Context
	// id: the request's id (observe's, set with after), for the rest's
	// log lines: carryStreams' request is the one before observe
	id string
	// broken: the handler's goroutine panicked; rest only ends the stream
	// (streamClient.Send fails)
	broken bool
	// place: the opening's place among carryStreams' openings, nil once
	// given back (leave; used by the handler's goroutine, and by the
	// request's only once the handler returned)
	place chan struct{}
	// opensOnly: a taken-over stream's opening (takenOver), bounded but
	// never carried
	opensOnly bool
}

// leave gives the opening's place back, once.
func (c *carrying) leave() {
	if c.place != nil {
		<-c.place
		c.place = nil
	}
}

type carryingKey struct{}

// carryingFrom returns the hand-over of ctx's request, nil outside a
// stream request.
func carryingFrom(ctx context.Context) *carrying {
	c, _ := ctx.Value(carryingKey{}).(*carrying)
	return c
}

// carryStreams serves a GET of an event stream on a goroutine of its own
// (a plain HTTP/1.1 room stream on its own: takenOver), once the openings
// under way leave it a place (a request whose client
// went away while it waited ends there, unanswered and unlogged; one cut
// by a shutdown meanwhile is served at once, and answered as such; those
// waiting, and how long each waited, are metrics), and
// then runs the rest of the stream the handler carried over, if any, on
// the request's goroutine; any other request as usual. The goroutines
// started for one request, the opening's and an HTTP/2 request's, are
// grown at their top (growstack.Grow); the request's goroutine a stream
// idles on is not, nor is HTTP/1.1's connection goroutine, which keeps
// the stack its first request grew. A panic that
// reaches it (past recoverPanics) is raised again on the request's
// goroutine, after the carried stream, if any, was ended. A panic of the
// carried rest is logged as a handler's is (recoverPanics), the stream's
// access line written, and the response aborted (http.ErrAbortHandler).
// It is still the router (chi.Walk lists its routes).
type carryStreams struct {
	chi.Router
	log *slog.Logger
	// openings holds a place for each opening under way, its router,
	// middlewares and handler (nil: no bound, in tests)
	openings chan struct{}
	metrics  Metrics // nil: none
}

// maxStreamOpenings bounds the stream openings an instance runs at once
// (carryStreams).
const maxStreamOpenings = 256

// newCarryStreams returns a carryStreams of r that runs at most
// maxStreamOpenings openings at once.
func newCarryStreams(r chi.Router, log *slog.Logger, m Metrics) carryStreams {
	return carryStreams{Router: r, log: log, openings: make(chan struct{}, maxStreamOpenings), metrics: m}
}

func (cs carryStreams) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !isStream(r) || r.ContentLength != 0 {
		if r.ProtoMajor >= 2 {
			// a goroutine of its own, started for it: grown at once
			// (HTTP/1.1's connection goroutine keeps its grown stack)
			growstack.Grow()
		}
		cs.Router.ServeHTTP(w, r)
		return
	}
	c := &carrying{place: cs.openings, opensOnly: takenOver(r), base: r.Context()}
	if c.place != nil && !cs.enter(r.Context(), c.place) {
		if !hungUp(r.Context()) { // a shutdown's cut: answered as one
			cs.Router.ServeHTTP(w, r)
		}
		return // else gone while it waited: nobody to answer
	}
	// the opening's request: the rest keeps r, which net/http keeps
	// anyway, not this copy
	opening := r.WithContext(context.WithValue(r.Context(), carryingKey{}, c))
	if c.opensOnly {
		defer c.leave()
		cs.Router.ServeHTTP(w, opening)
		return
	}
	done := make(chan any, 1)
	go func() {
		defer func() {
			c.leave()
			done <- recover() // nil unless it panicked
		}()
		growstack.Grow() // the opening goes deep at once, and ends
		cs.Router.ServeHTTP(w, opening)
	}()
	v := <-done
	if v != nil {
		c.broken = true
	}
	restPanicked := c.rest != nil && cs.runRest(r, c)
	if c.after != nil {
		c.after()
	}
	if v != nil {
		panic(v)
	}
	if restPanicked {
		panic(http.ErrAbortHandler)
	}
}

// enter takes a place in place, waiting for one while ctx lasts, and
// reports whether it took one. A wait is counted and timed.
func (cs carryStreams) enter(ctx context.Context, place chan struct{}) bool {
	select {
	case place <- struct{}{}:
		return true
	default:
	}
	m := cs.metrics
	if m == nil {
		m = noMetrics{}
	}
	m.OpeningsWaiting(1)
	defer m.OpeningsWaiting(-1)
	began := time.Now()
	select {
	case place <- struct{}{}:
		m.OpeningWaited("opened", time.Since(began))
		return true
	case <-ctx.Done():
		outcome := "shutdown"
		if hungUp(ctx) {
			outcome = "gone"
		}
		m.OpeningWaited(outcome, time.Since(began))
		return false
	}
}

// takenOver reports whether r is a room's stream over plain HTTP/1.1,
// which the hub takes over once it opened (streamClient.Detach): its
// request's goroutine ends with the opening, so carrying it would only
// cost each opening a goroutine and a stack more (measured: about 15 KiB
// a stream more resident 2 s after 10 000 streams opened at once).
func takenOver(r *http.Request) bool {
	return takeable(r) && strings.HasPrefix(r.URL.Path, "/v1/rooms/")
}

// runRest runs the rest c carried of r's stream to its end and reports
// whether a Step panicked (logged; the stream released itself). An idle
// stream waits here, in Wait, which does not panic (sse.Rest) and is
// not recovered: keep this frame small, with no defer.
func (cs carryStreams) runRest(r *http.Request, c *carrying) (panicked bool) {
	for {
		c.rest.Wait()
		goOn, panicked := cs.step(r, c)
		if !goOn {
			return panicked
		}
	}
}

// step runs c's rest's Step; a panic of it is logged and ends the stream.
func (cs carryStreams) step(r *http.Request, c *carrying) (goOn, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			cs.log.Error("panic", pathAttr(r.URL.Path), "panic", v, "request_id", c.id)
			goOn, panicked = false, true
		}
	}()
	return c.rest.Step(), false
}

package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/realsync/realsync/rooms"
)

// statusClientClosed is nginx's 499 "client closed request": the status a
// request is recorded with (metrics, access log) when its client hung up
// before it was answered. No client ever reads it; it is not a 5xx, so
// hang-ups do not count as server failures. A request with an
// Idempotency-Key runs on to its end when its client hangs up (detach,
// idempotent): it is recorded 499 too, unless it failed with a 5xx (a
// server failure all the same), its answer written as well (a client that
// only half-closed its connection reads it) and kept for the client's
// retry (or its key freed after an error; answeredGone).
const statusClientClosed = 499

// ErrShutdown is the cause of the server's base context's end when a
// shutdown cuts the requests still running (cmd/realsyncd): their
// answer is 503, not a client's hang-up.
var ErrShutdown = errors.New("the server is shutting down")

// contextEnded reports whether err is a context's end (cancelled, or past
// its deadline) rather than a failure: the store passes context.Canceled
// through as it is (redisx.Wrap), and a caller may hand on either.
func contextEnded(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// writeContextEnded answers a request that failed because a context ended
// (contextEnded). When it is the request's own, cancelled because its
// client went away (net/http cancels it on the connection's close or the
// stream's reset), there is nobody to answer: the request is recorded as
// 499 and logged at debug. Any other (the request timeout, whose context
// ends with DeadlineExceeded; the request's own cancelled by a shutdown,
// its cause ErrShutdown; an internal timeout) is the server giving up: 503
// STORE_UNAVAILABLE, retry later, as the contract says of the timeout.
func (s *Server) writeContextEnded(w http.ResponseWriter, r *http.Request, err error) {
	if hungUp(r.Context()) {
		s.log.Debug("client closed request", methodAttr(r.Method), pathAttr(r.URL.Path), "err", err, "request_id", requestID(r.Context()))
		w.WriteHeader(statusClientClosed)
		return
	}
	s.writeError(w, r, fmt.Errorf("%w: %v", rooms.ErrUnavailable, err))
}

// hungUp reports whether ctx, a request's, ended because its client went
// away: cancelled, and not by a shutdown's cut (ErrShutdown).
func hungUp(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled) && !errors.Is(context.Cause(ctx), ErrShutdown)
}

// clientContext is the context of ctx's request as the API got it (kept
// by observe; ctx itself outside observe), which net/http cancels when the
// client goes away. The contexts the middlewares derive from it (the
// request timeout's) are cancelled just after it, by the goroutine that
// cancelled it, so a check on one of them can miss a hang-up that
// net/http already reported, the request's own context cancelled: a
// request whose client hung up before its answer was recorded as answered.
func clientContext(ctx context.Context) context.Context {
	if x := exchangeFrom(ctx); x != nil && x.client != nil {
		return x.client
	}
	return ctx
}

// detach returns r on a context of its own that its client's hang-up does
// not end, and its release (call it once r is answered). It keeps r's
// values and r's deadline (the request timeout: DeadlineExceeded, 503; the
// request timeout from now when r has none), and still ends, with the
// cause ErrShutdown (503), when a shutdown cuts the requests still
// running: when r's own context is cut so, or when the server's base
// context (Config.Base) ends, which also reaches a request whose client
// had already left. So a request it serves finishes what it started, and
// its outcome is known, whether its client waits for it or not; a
// shutdown still ends it within its timeout.
//
// The run is counted in Config.Detached until r's exchange is recorded
// (observe; at release without one), so a shutdown can wait for it: over
// HTTP/2, http.Server.Shutdown does not wait for the handler of a stream
// its client reset. Once Detached.Drain was called, r's context is cut
// (ErrShutdown) from the start: its client left, or the server is past
// waiting for requests, and it must not begin what the store's close
// would cut short.
func (s *Server) detach(r *http.Request) (*http.Request, func()) {
	parent := r.Context()
	ctx, cut := context.WithCancelCause(context.WithoutCancel(parent))
	d, ok := parent.Deadline()
	if !ok {
		d = time.Now().Add(s.requestTimeout)
	}
	ctx, endDeadline := context.WithDeadline(ctx, d)
	if !s.detached.start() {
		cut(ErrShutdown)
		return r.WithContext(ctx), endDeadline
	}
	done := s.detached.done
	if x := exchangeFrom(parent); x != nil {
		x.finish = append(x.finish, done)
		done = func() {}
	}
	stop := context.AfterFunc(parent, func() {
		if cause := context.Cause(parent); errors.Is(cause, ErrShutdown) {
			cut(cause)
		}
	})
	stopBase := func() bool { return false }
	if s.base != nil {
		stopBase = context.AfterFunc(s.base, func() { cut(ErrShutdown) })
	}
	return r.WithContext(ctx), func() {
		stop()
		stopBase()
		endDeadline()
		cut(nil)
		done()
	}
}

// Detached counts the requests running detached from their client
// (detach: those with an Idempotency-Key), so that a shutdown waits for
// them before it closes the store (Drain). Its zero value is ready; a nil
// *Detached counts nothing. Safe for concurrent use.
type Detached struct {
	mu       sync.Mutex
	n        int
	idle     chan struct{} // closed when n drops back to 0; nil while 0
	draining bool
}

// start counts a run; false once Drain was called (nothing counted).
func (d *Detached) start() bool {
	if d == nil {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return false
	}
	if d.n == 0 {
		d.idle = make(chan struct{})
	}
	d.n++
	return true
}

// done ends a run that start counted.
func (d *Detached) done() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n--; d.n == 0 {
		close(d.idle)
		d.idle = nil
	}
}

// Drain waits until no request runs detached, or ctx ends: then it
// returns an error saying how many still run, wrapping ctx's error. From
// its first call on, no run begins: a request that would detach is cut at
// once (ErrShutdown, 503) before it claims its key. Call it once the HTTP
// server stopped taking requests (http.Server.Shutdown returned), so that
// none but the detached can begin; call it again after cutting the base
// context (Config.Base) to wait for the cut runs to free their keys.
func (d *Detached) Drain(ctx context.Context) error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	d.draining = true
	idle := d.idle
	d.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		d.mu.Lock()
		n := d.n
		d.mu.Unlock()
		if n == 0 {
			return nil
		}
		return fmt.Errorf("%d requests still running detached from their client: %w", n, ctx.Err())
	}
}

package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/realsync/realsync/rooms"
)

// statusClientClosed is nginx's 499 "client closed request": the status a
// request is recorded with (metrics, access log) when its client hung up
// before it was answered. No client ever reads it; it is not a 5xx, so
// hang-ups do not count as server failures.
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
	if errors.Is(r.Context().Err(), context.Canceled) && !errors.Is(context.Cause(r.Context()), ErrShutdown) {
		s.log.Debug("client closed request", "method", r.Method, "path", r.URL.Path, "err", err, "request_id", requestID(r.Context()))
		w.WriteHeader(statusClientClosed)
		return
	}
	s.writeError(w, r, fmt.Errorf("%w: %v", rooms.ErrUnavailable, err))
}

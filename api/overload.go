package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"
)

// Admission bounds the requests an instance works on at once
// (REALSYNC_MAX_IN_FLIGHT, REALSYNC_IN_FLIGHT_WAIT).
type Admission struct {
	// Max is the most /v1 requests in flight (0: no bound). Event
	// streams (their own caps bound them), the admin routes, the probes,
	// /metrics and the spec are not counted.
	Max int
	// Wait is how long a request past Max waits for a place before it is
	// refused (0: refused at once).
	Wait time.Duration
}

// DefaultInFlightWait is Admission.Wait as cmd/realsyncd sets it unless
// told otherwise (Max is 0 there unless told otherwise: no bound).
const DefaultInFlightWait = 500 * time.Millisecond

// errOverloaded is a request refused by admission: 503 OVERLOADED.
var errOverloaded = errors.New("the instance has as many requests in flight as REALSYNC_MAX_IN_FLIGHT allows")

// shedRoute is the route label of a request refused by admission (it is
// refused before routing): one label, as unmatchedRoute.
const shedRoute = "overloaded"

// admitter is Admission at work: a FIFO semaphore of Max places.
type admitter struct {
	sem  *semaphore.Weighted
	wait time.Duration
}

func newAdmitter(a Admission) *admitter {
	if a.Max <= 0 {
		return nil
	}
	return &admitter{sem: semaphore.NewWeighted(int64(a.Max)), wait: a.Wait}
}

// counted tells the requests admission bounds: the /v1 routes but event
// streams and the admin routes (an operator looks at an overloaded
// instance through them).
// A stream is told as the router tells it (isStream): an encoded
// "%2Fevents" is no stream.
func counted(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/v1/") && !strings.HasPrefix(r.URL.Path, "/v1/admin/") &&
		!(r.Method == http.MethodGet && isStream(r))
}

// admit lets a counted request through when it gets one of the places,
// waiting up to the admission's wait; else it answers 503 OVERLOADED with
// a Retry-After (retryAfters) before its credentials are checked or anything is done,
// so an overloaded instance answers the requests it cannot serve at once
// and spends its CPU on those whose clients still wait, the requests it
// works on bounded (those waiting are bounded by the arrival rate times
// the wait). It runs after limitBody has the
// whole body: a client sending its body slowly holds no place (else a few
// slow clients would hold them all), and holds it until its answer is
// ready, not written: a client reading slowly holds no place either (an
// abuse tester's HTTP/2 client that granted no flow-control window held
// each place 15 s, to the write deadline, and with one or two guests kept
// most other requests refused 503). A client that hangs up while it
// waits leaves its place to the next. The in-flight count goes to the
// metrics (realsync_http_in_flight).
func (s *Server) admit(next http.Handler) http.Handler {
	if s.admission == nil {
		return next
	}
	a := s.admission
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !counted(r) {
			next.ServeHTTP(w, r)
			return
		}
		if !a.sem.TryAcquire(1) {
			ctx, cancel := context.WithTimeout(r.Context(), a.wait)
			err := a.sem.Acquire(ctx, 1)
			cancel()
			if err != nil {
				if x := exchangeFrom(r.Context()); x != nil {
					x.shed = true // counted under route "overloaded", whatever the answer
				}
				if r.Context().Err() != nil {
					s.writeError(w, r, r.Context().Err()) // the client left (499), or a shutdown's cut (503)
					return
				}
				s.log.Warn("overloaded: requests refused 503 OVERLOADED (REALSYNC_MAX_IN_FLIGHT)")
				s.writeError(w, r, errOverloaded)
				return
			}
		}
		s.metrics.InFlight(1)
		release := func() {
			a.sem.Release(1)
			s.metrics.InFlight(-1)
		}
		if x := exchangeFrom(r.Context()); x != nil {
			x.release = release // at the answer's first byte (exchange.answered)
			defer x.answered()
		} else {
			defer release()
		}
		next.ServeHTTP(w, r)
	})
}

package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// headerDeadline closes every connection whose first request's headers
// have not all arrived within timeout of its accept: the TLS handshake,
// the HTTP/2 preface and the first stream's whole header block included.
//
// http.Server.ReadHeaderTimeout does this for HTTP/1.1 (each request's
// headers) but not for HTTP/2: net/http clears the connection's read
// deadline once the preface is read, and its HTTP/2 server reports the
// connection StateActive then StateIdle right after the preface, before
// any HEADERS frame, so neither the deadline nor a "still StateNew" check
// reaches a client that sends the preface and then nothing, or a header
// block it never ends (HEADERS without END_HEADERS, CONTINUATION now and
// then). Only IdleTimeout ended those, at 120 s, ~95 KB each (an
// auditor's 3 000 such h2c connections: +290 MB).
//
// A request is known to have arrived when the handler runs: over HTTP/2
// that is once its header block is complete. A connection whose first
// request came is left to ReadHeaderTimeout (HTTP/1.1) and IdleTimeout.
type headerDeadline struct {
	timeout time.Duration
	conns   sync.Map // net.Conn → *connDeadline, until the connection closes
}

// connDeadline is one connection's timer and what became of it: the
// first of its request and its timer decides, once (a check then a
// store let the timer close a connection whose first handler had just
// begun).
type connDeadline struct {
	timer *time.Timer
	state atomic.Int32 // pending, then served or expired
}

const (
	pending int32 = iota
	served        // a request came in time: the timer does nothing
	expired       // the timer came first: the connection is closed
)

// serve records a request's arrival; false when the timer came first.
func (cd *connDeadline) serve() bool {
	if cd.state.CompareAndSwap(pending, served) {
		cd.timer.Stop()
		return true
	}
	return cd.state.Load() == served
}

// expire is the timer's: it closes c unless a request came first.
func (cd *connDeadline) expire(c net.Conn) {
	if cd.state.CompareAndSwap(pending, expired) {
		c.Close() // Serve's read fails: the connection ends, StateClosed
	}
}

type connDeadlineKey struct{}

// install arms the deadline on every connection srv accepts, composed
// with srv's own ConnContext and ConnState hooks (each still called), and
// returns h wrapped to disarm it at a connection's first request. Call it
// once srv is otherwise configured.
func (d *headerDeadline) install(srv *http.Server, h http.Handler) http.Handler {
	connContext, connState := srv.ConnContext, srv.ConnState
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if connContext != nil {
			ctx = connContext(ctx, c)
		}
		cd := &connDeadline{}
		cd.timer = time.AfterFunc(d.timeout, func() { cd.expire(c) })
		d.conns.Store(c, cd)
		return context.WithValue(ctx, connDeadlineKey{}, cd)
	}
	srv.ConnState = func(c net.Conn, state http.ConnState) {
		if state == http.StateClosed || state == http.StateHijacked {
			if cd, ok := d.conns.LoadAndDelete(c); ok {
				cd.(*connDeadline).timer.Stop()
			}
		}
		if connState != nil {
			connState(c, state)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cd, ok := r.Context().Value(connDeadlineKey{}).(*connDeadline); ok && !cd.serve() {
			// its connection is closing as it came: no answer at all (a
			// handler that returned would have a 200 sent, if the close
			// were late, for a request that never ran)
			panic(http.ErrAbortHandler)
		}
		h.ServeHTTP(w, r)
	})
}

package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync/internal/growstack"
	"github.com/realsync/realsync/internal/stacktest"
)

// A request over HTTP/2, on a goroutine of its own, is served on a stack
// grown once at the top (growstack.Grow), so that the router, the
// middlewares and the handler do not grow it again on the way down; over
// HTTP/1.1 (the connection's goroutine, which keeps the stack its first
// request grew) it is not. An event stream's opening runs on a goroutine
// of its own, grown alike, whatever the protocol; its request's
// goroutine, on which the stream idles, is not: it keeps a small stack
// (carry.go). Each request on a fresh goroutine, as HTTP/2 serves them;
// the handler reports whether calls using half of growstack.Size grow
// its stack, and so does the request's goroutine once carryStreams
// returned.
func TestHTTP2RequestsRunOnAGrownStack(t *testing.T) {
	cases := []struct {
		name, path     string
		proto          int
		handlerMoves   bool
		afterwardMoves bool // the request's goroutine, once served
	}{
		{"HTTP/2", "/v1/rooms/r1", 2, false, false},
		// the handler's own calls grew the stack it ran on
		{"HTTP/1.1", "/v1/rooms/r1", 1, true, false},
		{"an event stream over HTTP/2", "/v1/rooms/r1/events", 2, false, true},
		{"an event stream over HTTP/1.1", "/v1/lobby/events", 1, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			handlerMoved, ran := false, false
			r := chi.NewRouter()
			r.Get("/*", func(http.ResponseWriter, *http.Request) {
				handlerMoved, ran = stacktest.Moves(growstack.Size/2), true
			})
			cs := carryStreams{Router: r, log: slog.New(slog.DiscardHandler)}
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			req.ProtoMajor = tc.proto
			afterward := make(chan bool)
			go func() {
				cs.ServeHTTP(httptest.NewRecorder(), req)
				afterward <- stacktest.Moves(growstack.Size / 2)
			}()
			afterwardMoved := <-afterward
			if !ran {
				t.Fatal("the handler did not run")
			}
			if handlerMoved != tc.handlerMoves {
				t.Errorf("the handler's stack grew: %v, want %v", handlerMoved, tc.handlerMoves)
			}
			if afterwardMoved != tc.afterwardMoves {
				t.Errorf("the request's goroutine's stack grew afterwards: %v, want %v", afterwardMoved, tc.afterwardMoves)
			}
		})
	}
}

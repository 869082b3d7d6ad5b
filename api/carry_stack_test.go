package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync/internal/growstack"
)

// A request over HTTP/2, on a goroutine of its own, is served on a stack
// grown once at the top (growstack.Grow), so that the router, the
// middlewares and the handler do not grow it again on the way down; over
// HTTP/1.1 (the connection's goroutine, which keeps the stack its first
// request grew) it is not, nor is a stream's opening, whose goroutine's
// stack is kept small (carry.go). Each request on a fresh goroutine, as
// HTTP/2 serves them; the handler reports whether calls using half of
// growstack.Size grew its stack.
func TestHTTP2RequestsRunOnAGrownStack(t *testing.T) {
	cases := []struct {
		name, path string
		proto      int
		moves      bool
	}{
		{"HTTP/2", "/v1/rooms/r1", 2, false},
		{"HTTP/1.1", "/v1/rooms/r1", 1, true},
		{"an event stream over HTTP/2", "/v1/rooms/r1/events", 2, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			moved, ran := false, false
			r := chi.NewRouter()
			r.Get("/*", func(http.ResponseWriter, *http.Request) {
				moved, ran = growstack.Moves(growstack.Size/2), true
			})
			cs := carryStreams{Router: r, log: slog.New(slog.DiscardHandler)}
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			req.ProtoMajor = tc.proto
			done := make(chan struct{})
			go func() {
				defer close(done)
				cs.ServeHTTP(httptest.NewRecorder(), req)
			}()
			<-done
			if !ran {
				t.Fatal("the handler did not run")
			}
			if moved != tc.moves {
				t.Fatalf("the handler's stack grew: %v, want %v", moved, tc.moves)
			}
		})
	}
}

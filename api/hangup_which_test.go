package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"
)

// Only the request's own cancellation is a hang-up (499); a context of the
// server's that ended (a shutdown cancelled it, an internal timeout) or the
// request timeout is the server giving up: 503 STORE_UNAVAILABLE.
func TestContextEndedWhich(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	base, cut := context.WithCancelCause(context.Background())
	cutByShutdown, cancel3 := context.WithCancel(base) // a request's, of the server's base
	defer cancel3()
	cut(ErrShutdown)
	timedOut, cancel2 := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel2()
	<-timedOut.Done()
	for _, c := range []struct {
		name   string
		ctx    context.Context // the request's
		err    error           // what the handler failed with
		status int
	}{
		{"HungUp", cancelled, context.Canceled, statusClientClosed},
		{"HungUpWrapped", cancelled, fmt.Errorf("sending: %w", context.Canceled), statusClientClosed},
		{"HungUpDuringAnInternalTimeout", cancelled, context.DeadlineExceeded, statusClientClosed},
		{"OtherContextCancelled", context.Background(), context.Canceled, 503},
		{"CutByShutdown", cutByShutdown, context.Canceled, 503}, // a reviewer's find: was 499
		{"InternalTimeout", context.Background(), context.DeadlineExceeded, 503},
		{"RequestTimeout", timedOut, context.DeadlineExceeded, 503},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("GET", "/v1/rooms", nil).WithContext(c.ctx)
			s.writeError(w, r, c.err)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d (%s)", w.Code, c.status, w.Body)
			}
			if c.status == 503 && w.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("503 as %q", w.Header().Get("Content-Type"))
			}
		})
	}
}

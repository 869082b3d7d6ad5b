package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"
)

// A request detached from its client's hang-up (one with an
// Idempotency-Key) keeps its values and its deadline, and still ends with
// the server: a shutdown's cut reaches it (cause ErrShutdown, answered 503)
// through the server's base context after its client left, or through its
// own context when there is no base; past its deadline it is 503 too.
func TestDetachedRequestEndsWithTheServer(t *testing.T) {
	type key struct{}
	for _, c := range []struct {
		name     string
		withBase bool
		end      func(hangUp context.CancelFunc, cut context.CancelCauseFunc)
	}{
		{"HungUpThenCut", true, func(hangUp context.CancelFunc, cut context.CancelCauseFunc) { hangUp(); cut(ErrShutdown) }},
		{"CutWithoutBase", false, func(_ context.CancelFunc, cut context.CancelCauseFunc) { cut(ErrShutdown) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, cut := context.WithCancelCause(context.Background())
			defer cut(nil)
			s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if c.withBase {
				s.base = base
			}
			deadline := time.Now().Add(time.Hour)
			own, hangUp := context.WithCancel(context.WithValue(base, key{}, "v")) // net/http's, of the base
			defer hangUp()
			own, cancel := context.WithDeadline(own, deadline) // limitTime's
			defer cancel()
			r, release := s.detach(httptest.NewRequest("POST", "/v1/rooms", nil).WithContext(own))
			defer release()
			ctx := r.Context()
			if d, ok := ctx.Deadline(); !ok || !d.Equal(deadline) || ctx.Value(key{}) != "v" {
				t.Fatalf("detached: deadline %v %v, value %v; want %v, v", d, ok, ctx.Value(key{}), deadline)
			}
			c.end(hangUp, cut)
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the cut did not end the detached request within 10 s")
			}
			if !errors.Is(context.Cause(ctx), ErrShutdown) {
				t.Fatalf("ended with %v, want %v", context.Cause(ctx), ErrShutdown)
			}
			w := httptest.NewRecorder()
			s.writeError(w, r, ctx.Err())
			if w.Code != 503 {
				t.Fatalf("answered %d, want 503", w.Code)
			}
		})
	}
	t.Run("PastItsDeadline", func(t *testing.T) {
		s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		own, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		defer cancel()
		<-own.Done()
		r, release := s.detach(httptest.NewRequest("POST", "/v1/rooms", nil).WithContext(own))
		defer release()
		if !errors.Is(r.Context().Err(), context.DeadlineExceeded) {
			t.Fatalf("detached past the deadline: %v", r.Context().Err())
		}
		w := httptest.NewRecorder()
		s.writeError(w, r, r.Context().Err())
		if w.Code != 503 {
			t.Fatalf("answered %d, want 503", w.Code)
		}
	})
}

// A shutdown's Drain waits for the requests detached from their client
// (Detached counts them until released); from its first call on, a
// request that would detach is cut at once (ErrShutdown, 503), so that
// nothing begins which the store's close would cut short.
func TestDrainWaitsForDetachedRequests(t *testing.T) {
	d := new(Detached)
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil)), detached: d, requestTimeout: time.Hour}
	if err := d.Drain(t.Context()); err != nil {
		t.Fatalf("drain with nothing detached: %v", err)
	}
	d = new(Detached)
	s.detached = d
	r, release := s.detach(httptest.NewRequest("POST", "/v1/rooms", nil))
	if dl, ok := r.Context().Deadline(); !ok || time.Until(dl) < 59*time.Minute {
		t.Errorf("detached without a deadline of its own: deadline %v %v, want the request timeout from now", dl, ok)
	}
	ended, end := context.WithCancel(t.Context())
	end()
	if err := d.Drain(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("drain past its context with a request detached: %v", err)
	}
	late, releaseLate := s.detach(httptest.NewRequest("POST", "/v1/rooms", nil))
	defer releaseLate()
	if !errors.Is(context.Cause(late.Context()), ErrShutdown) {
		t.Fatalf("detached after the drain began: %v, want cut with %v", context.Cause(late.Context()), ErrShutdown)
	}
	if r.Context().Err() != nil {
		t.Fatalf("the drain cut a request detached before it: %v", r.Context().Err())
	}
	drained := make(chan error, 1)
	go func() { drained <- d.Drain(t.Context()) }()
	release()
	if err := <-drained; err != nil {
		t.Fatalf("drain once the request was released: %v", err)
	}
}

package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
)

// carryStreams runs at most its bound's openings at once: the next one
// waits for one to end, and one whose client goes away while it waits
// ends unanswered, its handler never run; a panicking opening gives its
// place back too.
func TestCarryStreamsBoundsOpenings(t *testing.T) {
	entered, release := make(chan string, 4), make(chan struct{})
	r := chi.NewRouter()
	r.Get("/v1/lobby/events", func(w http.ResponseWriter, r *http.Request) {
		n := r.URL.Query().Get("n")
		entered <- n
		if n == "panics" {
			panic("opening")
		}
		<-release
	})
	cs := carryStreams{Router: r, openings: make(chan struct{}, 1)}
	serve := func(ctx context.Context, n string) <-chan any {
		done := make(chan any, 1)
		go func() {
			defer func() { done <- recover() }()
			cs.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, "GET", "/v1/lobby/events?n="+n, nil))
		}()
		return done
	}
	first := serve(context.Background(), "1")
	if n := within(t, entered, "the first opening"); n != "1" {
		t.Fatalf("opening %s ran first", n)
	}
	second := serve(context.Background(), "2")
	ctx, leave := context.WithCancel(context.Background())
	third := serve(ctx, "3")
	select {
	case n := <-entered:
		t.Fatalf("opening %s ran beside the first, past the bound of 1", n)
	case <-time.After(100 * time.Millisecond):
	}
	leave()
	within(t, third, "the waiting opening whose client went away")
	release <- struct{}{}
	within(t, first, "the first opening")
	if n := within(t, entered, "the second opening"); n != "2" {
		t.Fatalf("opening %s ran once the first ended, want 2 (3's client went away)", n)
	}
	release <- struct{}{}
	within(t, second, "the second opening")
	if v := within(t, serve(context.Background(), "panics"), "the panicking opening"); v == nil {
		t.Fatal("the panicking opening's panic was not raised again")
	}
	<-entered
	select {
	case n := <-entered:
		t.Fatalf("opening %s ran", n)
	default:
	}
	if n := len(cs.openings); n != 0 {
		t.Fatalf("%d places still held once every opening ended", n)
	}
}

// within receives from ch, failing t when nothing came in 10 s (what:
// what was awaited).
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing after 10 s", what)
		panic("unreachable")
	}
}

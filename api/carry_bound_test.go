package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
)

// carryStreams runs at most its bound's openings at once: the next one
// waits for one to end, one whose client goes away while it waits ends
// unanswered, its handler never run, and one a shutdown cuts meanwhile is
// served at once (to be answered 503); an opening that hands its rest
// over gives its place back then, once, and a panicking one too. Those
// that waited are counted while they wait, and by how their wait ended.
func TestCarryStreamsBoundsOpenings(t *testing.T) {
	entered, release := make(chan string, 4), make(chan struct{})
	r := chi.NewRouter()
	r.Get("/v1/lobby/events", func(w http.ResponseWriter, r *http.Request) {
		n := r.URL.Query().Get("n")
		if n == "handsover" {
			carryingFrom(r.Context()).leave()
		}
		entered <- n
		switch n {
		case "panics":
			panic("opening")
		case "cut":
			return
		}
		<-release
	})
	waits := &openingWaits{}
	cs := carryStreams{Router: r, openings: make(chan struct{}, 1), metrics: waits}
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
	waits.until(t, 2)
	select {
	case n := <-entered:
		t.Fatalf("opening %s ran beside the first, past the bound of 1", n)
	default:
	}
	leave()
	within(t, third, "the waiting opening whose client went away")
	ctx, cut := context.WithCancelCause(context.Background())
	fourth := serve(ctx, "cut")
	cut(ErrShutdown)
	if n := within(t, entered, "the waiting opening a shutdown cut"); n != "cut" {
		t.Fatalf("opening %s ran, want the one a shutdown cut (served at once, to be answered as such)", n)
	}
	within(t, fourth, "the opening a shutdown cut")
	release <- struct{}{}
	within(t, first, "the first opening")
	if n := within(t, entered, "the second opening"); n != "2" {
		t.Fatalf("opening %s ran once the first ended, want 2 (3's client went away)", n)
	}
	handedOver := serve(context.Background(), "handsover")
	waits.until(t, 1)
	release <- struct{}{}
	within(t, second, "the second opening")
	if n := within(t, entered, "the opening that hands over"); n != "handsover" {
		t.Fatalf("opening %s ran, want the one that hands over", n)
	}
	fifth := serve(context.Background(), "5")
	if n := within(t, entered, "the opening after one handed over"); n != "5" {
		t.Fatalf("opening %s ran, want 5 (beside one that handed its rest over)", n)
	}
	release <- struct{}{}
	release <- struct{}{}
	within(t, handedOver, "the opening that handed over")
	within(t, fifth, "the fifth opening")
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
	waits.mu.Lock()
	defer waits.mu.Unlock()
	if want := []string{"gone", "shutdown", "opened", "opened"}; !slices.Equal(waits.outcomes, want) || waits.waiting != 0 || waits.peak != 2 {
		t.Fatalf("waits ended %q, %d waiting at the end, %d at most; want %q, 0, 2 (2 and 3 behind 1)", waits.outcomes, waits.waiting, waits.peak, want)
	}
}

// openingWaits records the openings' waits (Metrics).
type openingWaits struct {
	noMetrics
	mu            sync.Mutex
	waiting, peak int
	outcomes      []string
}

func (m *openingWaits) OpeningsWaiting(delta int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.waiting += delta
	m.peak = max(m.peak, m.waiting)
}

// until waits (10 s at most) for n requests to be waiting for a place.
func (m *openingWaits) until(t *testing.T, n int) {
	t.Helper()
	for began := time.Now(); ; time.Sleep(time.Millisecond) {
		m.mu.Lock()
		w := m.waiting
		m.mu.Unlock()
		if w == n {
			return
		}
		if time.Since(began) > 10*time.Second {
			t.Fatalf("%d waiting for a place after 10 s, want %d", w, n)
		}
	}
}

func (m *openingWaits) OpeningWaited(outcome string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outcomes = append(m.outcomes, outcome)
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

// Carry gives the opening's place back: the opening is over once its
// rest is handed over.
func TestCarryGivesTheOpeningsPlaceBack(t *testing.T) {
	place := make(chan struct{}, 1)
	place <- struct{}{}
	c := &carrying{place: place}
	if !(&streamClient{carrying: c}).Carry(idleRest{}) {
		t.Fatal("the rest was not carried")
	}
	if len(place) != 0 || c.place != nil {
		t.Fatal("the opening's place still held once its rest was handed over")
	}
}

// The opening's first write gives its place back before it writes: a
// client that does not read holds no place while the write waits.
func TestFirstSendGivesTheOpeningsPlaceBack(t *testing.T) {
	place := make(chan struct{}, 1)
	place <- struct{}{}
	rec := httptest.NewRecorder()
	c := &streamClient{w: rec, rc: http.NewResponseController(rec), carrying: &carrying{place: place}}
	if err := c.Send([]byte("data: x\n\n")); err != nil {
		t.Fatal(err)
	}
	if len(place) != 0 || c.carrying.place != nil {
		t.Fatal("the opening's place still held once it wrote")
	}
	if err := c.Send([]byte("data: y\n\n")); err != nil || rec.Body.String() != "data: x\n\ndata: y\n\n" {
		t.Fatalf("%v, body %q", err, rec.Body.String())
	}
}

// idleRest is a rest of a stream that ends at its first step.
type idleRest struct{}

func (idleRest) Wait()      {}
func (idleRest) Step() bool { return false }

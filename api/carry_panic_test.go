package api

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// A panic on the handler's goroutine after the stream was carried is
// raised again on the request's goroutine, once the carried rest ran
// with its writes failing: the stream is ended (its cleanup runs), and
// nothing more is written to the answer.
func TestCarryStreamsEndsTheStreamOnAPanic(t *testing.T) {
	r := chi.NewRouter()
	var sendErr error
	ran := false
	r.Get("/v1/lobby/events", func(w http.ResponseWriter, req *http.Request) {
		c := &streamClient{w: w, rc: http.NewResponseController(w), carrying: carryingFrom(req.Context())}
		if !c.Carry(restFunc(func() { ran, sendErr = true, c.Send([]byte("data: x\n\n")) })) {
			t.Error("a stream request's client refused to carry")
		}
		if c.Carry(restFunc(func() {})) {
			t.Error("a second rest was carried")
		}
		panic("after carrying")
	})
	rec := httptest.NewRecorder()
	func() {
		defer func() {
			if v := recover(); v != "after carrying" {
				t.Errorf("recovered %v, want the handler's panic", v)
			}
		}()
		carryStreams{Router: r, log: slog.New(slog.DiscardHandler)}.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/lobby/events", nil))
	}()
	if !ran || !errors.Is(sendErr, errHandlerPanicked) {
		t.Fatalf("rest ran %v, its Send: %v", ran, sendErr)
	}
	if rec.Body.Len() != 0 {
		t.Fatalf("written after the panic: %q", rec.Body.String())
	}
	// any other request is served on its own goroutine, as usual
	c := &streamClient{}
	if c.Carry(restFunc(func() {})) {
		t.Fatal("a client outside carryStreams carried")
	}
}

// A panic of the carried rest itself (after the handler returned) is
// logged, with the request's id (observe's, handed over with the access
// line), the stream's access line still written, and the response
// aborted.
func TestCarriedRestPanicIsLoggedAndAborts(t *testing.T) {
	r := chi.NewRouter()
	logged := false
	r.Get("/v1/me/events", func(w http.ResponseWriter, req *http.Request) {
		c := carryingFrom(req.Context())
		c.rest = restFunc(func() { panic("in the stream") })
		c.after, c.id = func() { logged = true }, "req-7"
	})
	var logs bytes.Buffer
	cs := carryStreams{Router: r, log: slog.New(slog.NewTextHandler(&logs, nil))}
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler", v)
			}
		}()
		cs.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/me/events", nil))
	}()
	if !logged || !strings.Contains(logs.String(), "in the stream") || !strings.Contains(logs.String(), "request_id=req-7") {
		t.Fatalf("access line written %v, log %q", logged, logs.String())
	}
}

// observe hands the request's id to the carried rest with its access
// line (carryStreams' own request is the one before observe, whose
// context has no exchange).
func TestObserveHandsTheRequestIDToTheCarriedRest(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler), ids: newRequestIDs(), metrics: noMetrics{}}
	r := chi.NewRouter()
	r.Use(s.observe)
	var c *carrying
	r.Get("/v1/me/events", func(w http.ResponseWriter, req *http.Request) {
		c = carryingFrom(req.Context())
		c.rest = restFunc(func() {})
	})
	rec := httptest.NewRecorder()
	carryStreams{Router: r, log: s.log}.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/me/events", nil))
	if id := rec.Header().Get(requestIDHeader); c == nil || id == "" || c.id != id || c.after == nil {
		t.Fatalf("the carried rest's request id %q, the answer's %q", c.id, id)
	}
}

// restFunc is a stream's rest that does f in one step and ends.
type restFunc func()

func (f restFunc) Wait() {}

func (f restFunc) Step() bool { f(); return false }

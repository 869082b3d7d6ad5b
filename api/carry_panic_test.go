package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
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
		if !c.Carry(func() { ran, sendErr = true, c.Send([]byte("data: x\n\n")) }) {
			t.Error("a stream request's client refused to carry")
		}
		if c.Carry(func() {}) {
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
		carryStreams{r}.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/lobby/events", nil))
	}()
	if !ran || !errors.Is(sendErr, errHandlerPanicked) {
		t.Fatalf("rest ran %v, its Send: %v", ran, sendErr)
	}
	if rec.Body.Len() != 0 {
		t.Fatalf("written after the panic: %q", rec.Body.String())
	}
	// any other request is served on its own goroutine, as usual
	c := &streamClient{}
	if c.Carry(func() {}) {
		t.Fatal("a client outside carryStreams carried")
	}
}

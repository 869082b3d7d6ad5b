package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"weak"

	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync/sse"
)

// A carried stream's rest keeps nothing of its opening's context (the
// exchange observe made, the route's context, the identity, each
// middleware's value): it runs on its request's context as net/http made
// it, ended with it, and writes to net/http's writer itself. An idle
// stream held all of that for its whole life before (about 0.7 KiB of
// live heap a stream at 10 000 h2c streams).
func TestCarriedStreamKeepsNothingOfItsOpening(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler), ids: newRequestIDs(), metrics: noMetrics{}}
	r := chi.NewRouter()
	r.Use(s.observe)
	var opening weak.Pointer[exchange]
	var streamCtx context.Context
	var client *streamClient
	var checked bool
	rest := restFunc(func() {
		// the handler, observe and the router have returned
		runtime.GC()
		runtime.GC()
		if opening.Value() != nil {
			t.Error("the opening's exchange is kept by the idle stream")
		}
		if exchangeFrom(streamCtx) != nil || chi.RouteContext(streamCtx) != nil {
			t.Error("the stream runs on its opening's context")
		}
		if _, wrapped := client.w.(*exchange); wrapped {
			t.Error("the stream writes through its opening's exchange")
		}
		if err := client.Send([]byte(": rest\n\n")); err != nil {
			t.Errorf("the rest's Send: %v", err)
		}
		checked = true
	})
	r.Get("/v1/me/events", func(w http.ResponseWriter, req *http.Request) {
		x := exchangeFrom(req.Context())
		if x == nil {
			t.Fatal("no exchange")
		}
		opening = weak.Make(x)
		s.stream(w, req, func(ctx context.Context, c sse.Client) error {
			streamCtx, client = ctx, c.(*streamClient)
			c.Start()
			if err := c.Send([]byte(": opening\n\n")); err != nil {
				t.Errorf("the opening's Send: %v", err)
			}
			if !c.(sse.Carrier).Carry(rest) {
				t.Error("a personal stream's rest not carried")
			}
			return nil
		})
	})
	base, cancel := context.WithCancel(context.Background())
	rec := httptest.NewRecorder()
	carryStreams{Router: r, log: s.log}.ServeHTTP(rec, httptest.NewRequestWithContext(base, "GET", "/v1/me/events", nil))
	if !checked {
		t.Fatal("the rest did not run")
	}
	if got := rec.Body.String(); got != ": opening\n\n: rest\n\n" {
		t.Errorf("the stream wrote %q", got)
	}
	if rec.Header().Get(requestIDHeader) == "" {
		t.Error("no request id answered")
	}
	select {
	case <-streamCtx.Done():
		t.Fatal("the stream's context ended before its request's")
	default:
	}
	cancel()
	<-streamCtx.Done() // the request's end ends the stream's context
}

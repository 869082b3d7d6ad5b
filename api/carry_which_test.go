package api

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// Which requests carryStreams carries: every stream that stays with its
// request, not a plain HTTP/1.1 room stream (the hub takes it over, and
// its request's goroutine ends with the opening), nor a stream asked for
// with a body, nor what is no stream. Which it bounds: every stream
// opening but one asked for with a body.
func TestCarryStreamsCarriesWhatStaysWithItsRequest(t *testing.T) {
	for _, c := range []struct {
		name, method, path string
		h2, tls            bool
		carried, bounded   bool
	}{
		{"room stream, HTTP/1.1", "GET", "/v1/rooms/r1/events", false, false, false, true},
		{"room stream, HTTP/2", "GET", "/v1/rooms/r1/events", true, false, true, true},
		{"room stream, HTTP/1.1 over TLS", "GET", "/v1/rooms/r1/events", false, true, true, true},
		{"lobby stream, HTTP/1.1", "GET", "/v1/lobby/events", false, false, true, true},
		{"personal stream, HTTP/1.1", "GET", "/v1/me/events", false, false, true, true},
		{"personal stream, HTTP/2", "GET", "/v1/me/events", true, false, true, true},
		{"a room", "GET", "/v1/rooms/r1", false, false, false, false},
		{"a POST to a stream's path", "POST", "/v1/rooms/r1/events", true, false, false, false},
		{"lobby stream with a body", "GET", "/v1/lobby/events?body", false, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var carried, bounded bool
			openings := make(chan struct{}, 1)
			r := chi.NewRouter()
			r.HandleFunc("/*", func(w http.ResponseWriter, r *http.Request) {
				cr := carryingFrom(r.Context())
				carried, bounded = cr != nil && !cr.opensOnly, len(openings) == 1
			})
			var body io.Reader
			if strings.HasSuffix(c.path, "?body") { // its body read first, as any request's
				body = strings.NewReader("x")
			}
			req := httptest.NewRequest(c.method, c.path, body)
			if c.h2 {
				req.Proto, req.ProtoMajor, req.ProtoMinor = "HTTP/2.0", 2, 0
			}
			if c.tls {
				req.TLS = &tls.ConnectionState{}
			}
			carryStreams{Router: r, openings: openings}.ServeHTTP(httptest.NewRecorder(), req)
			if carried != c.carried || bounded != c.bounded {
				t.Fatalf("carried %v, bounded %v; want %v, %v", carried, bounded, c.carried, c.bounded)
			}
			if len(openings) != 0 {
				t.Fatal("the opening's place kept once its handler returned")
			}
		})
	}
}

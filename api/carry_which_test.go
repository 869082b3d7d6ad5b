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
// with a body, nor what is no stream.
func TestCarryStreamsCarriesWhatStaysWithItsRequest(t *testing.T) {
	for _, c := range []struct {
		name, method, path string
		h2, tls            bool
		carried            bool
	}{
		{"room stream, HTTP/1.1", "GET", "/v1/rooms/r1/events", false, false, false},
		{"room stream, HTTP/2", "GET", "/v1/rooms/r1/events", true, false, true},
		{"room stream, HTTP/1.1 over TLS", "GET", "/v1/rooms/r1/events", false, true, true},
		{"lobby stream, HTTP/1.1", "GET", "/v1/lobby/events", false, false, true},
		{"personal stream, HTTP/1.1", "GET", "/v1/me/events", false, false, true},
		{"personal stream, HTTP/2", "GET", "/v1/me/events", true, false, true},
		{"a room", "GET", "/v1/rooms/r1", false, false, false},
		{"a POST to a stream's path", "POST", "/v1/rooms/r1/events", true, false, false},
		{"lobby stream with a body", "GET", "/v1/lobby/events?body", false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var carried bool
			r := chi.NewRouter()
			r.HandleFunc("/*", func(w http.ResponseWriter, r *http.Request) { carried = carryingFrom(r.Context()) != nil })
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
			carryStreams{Router: r}.ServeHTTP(httptest.NewRecorder(), req)
			if carried != c.carried {
				t.Fatalf("carried %v, want %v", carried, c.carried)
			}
		})
	}
}

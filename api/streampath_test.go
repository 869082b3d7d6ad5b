package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Every middleware that treats event streams apart tells one as the router
// does (isStream): GET /v1/probe/a%2Fevents reaches the route
// /v1/probe/{x} (x "a%2Fevents"), no stream, although its decoded path
// ends in /events. Through the whole handler: authentication refuses an
// API key in a stream's URL only, the request timeout spares streams
// only, an instance not yet connected answers streams with a retry line
// (others 503), and only streams are carried (carryStreams).
func TestStreamsToldAsTheRouterTellsThem(t *testing.T) {
	for _, c := range []struct {
		name, path string
		stream     bool // what the router reaches is an event stream
	}{
		{"stream", "/v1/probe/a/events", true},
		{"encoded slash, no stream", "/v1/probe/a%2Fevents", false},
	} {
		var (
			reached, deadline, carried bool
			available                  = true
		)
		auth := &Auth{Secret: []byte("test-secret"), GuestEnabled: true}
		h := NewHandler(Config{Auth: auth, Available: func() bool { return available }, Log: slog.New(slog.DiscardHandler)}).(carryStreams)
		probe := func(w http.ResponseWriter, r *http.Request) {
			reached = true
			_, deadline = r.Context().Deadline()
			carried = carryingFrom(r.Context()) != nil
		}
		h.Router.Get("/v1/probe/{x}", probe)
		h.Router.Get("/v1/probe/{x}/events", probe)
		guest, err := auth.Issue("alice")
		if err != nil {
			t.Fatal(err)
		}
		serve := func(query string) *httptest.ResponseRecorder {
			reached, deadline, carried = false, false, false
			req := httptest.NewRequest("GET", c.path+query, nil)
			req.Header.Set("Authorization", "Bearer "+guest.Token)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			return w
		}
		t.Run(c.name, func(t *testing.T) {
			t.Run("router", func(t *testing.T) {
				if w := serve(""); !reached || w.Code != 200 {
					t.Fatalf("%d, reached %v: the probe route is not what the router reaches", w.Code, reached)
				}
			})
			t.Run("authentication", func(t *testing.T) {
				w := serve("?token=" + APIKeyPrefix + "test")
				keyRefused := w.Code == 401 && strings.Contains(w.Body.String(), "not accepted in a URL")
				if keyRefused != c.stream || reached == c.stream {
					t.Fatalf("%d %s: an API key in the URL refused %v, want %v", w.Code, w.Body, keyRefused, c.stream)
				}
			})
			t.Run("request timeout", func(t *testing.T) {
				serve("")
				if deadline == c.stream {
					t.Fatalf("the request's context has a deadline: %v, want %v", deadline, !c.stream)
				}
			})
			t.Run("carried", func(t *testing.T) {
				serve("")
				if carried != c.stream {
					t.Fatalf("carried %v, want %v", carried, c.stream)
				}
			})
			t.Run("not connected", func(t *testing.T) {
				available = false
				defer func() { available = true }()
				w := serve("")
				streamed := w.Code == 200 && strings.HasPrefix(w.Body.String(), "retry: ")
				if reached || streamed != c.stream || !c.stream && (w.Code != 503 || !strings.Contains(w.Body.String(), "STORE_UNAVAILABLE")) {
					t.Fatalf("%d %q (reached %v): streamed %v, want %v (else 503 STORE_UNAVAILABLE)", w.Code, w.Body, reached, streamed, c.stream)
				}
			})
		})
	}
}

package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
)

// A client that hangs up while its request waits on Redis is no server
// failure: the request is recorded as 499 (nginx's "client closed
// request") in the metrics and the access log, nothing is logged at
// error, and no 5xx is counted. Redis is reached through a proxy that
// holds each request 1 s; the clients hang up after 250 ms (wide margins:
// the api package's tests run in parallel).
func TestClientHangupIs499(t *testing.T) {
	target := strings.TrimPrefix(redistest.StandaloneURL(t), "redis://")
	proxy := redistest.StartProxy(t, target)
	e := newEnv(t, redistest.Backend{Name: "proxied", URL: "redis://" + proxy.Addr}, true)
	alice, _ := e.guest("alice")
	_, bobID := e.guest("bob")
	for _, c := range []struct {
		name, method, path, route string
		body                      string
	}{
		{"DirectMessage", "POST", "/v1/users/" + bobID + "/messages", "/v1/users/{userId}/messages", `{"type":"chat","data":"hi"}`},
		{"MeEvents", "GET", "/v1/me/events?platform=pc", "/v1/me/events", ""},
		{"LobbyEvents", "GET", "/v1/lobby/events", "/v1/lobby/events", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxy.DelayRequests(time.Second)
			defer proxy.DelayRequests(0)
			ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
			defer cancel()
			var body *strings.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			req, _ := http.NewRequestWithContext(ctx, c.method, e.url+c.path, nil)
			if body != nil {
				req, _ = http.NewRequestWithContext(ctx, c.method, e.url+c.path, body)
				req.Header.Set("Content-Type", "application/json")
				// with a key the request runs on to its end after the
				// hang-up (its claim, the send, its record: three round
				// trips, 3 s), and is recorded 499 all the same
				req.Header.Set("Idempotency-Key", "hangup-"+c.name)
			}
			req.Header.Set("Authorization", "Bearer "+alice)
			req.Header.Set("X-Request-Id", "hangup-"+c.name)
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
				t.Fatalf("answered %d before the client hung up", res.StatusCode)
			}
			var line map[string]any
			deadline := time.Now().Add(10 * time.Second)
			for line == nil && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				line = e.accessLines()["hangup-"+c.name]
			}
			if line == nil {
				t.Fatal("no access line within 10 s")
			}
			if line["status"] != float64(499) {
				t.Errorf("access line status %v, want 499", line["status"])
			}
			proxy.DelayRequests(0)
			m := e.scrape()
			if v := m.value("realsync_http_requests_total", "route", c.route, "status", "499"); v != 1 {
				t.Errorf("%s requests with status 499: %v, want 1", c.route, v)
			}
			for _, s := range []string{"500", "503"} {
				if v := m.value("realsync_http_requests_total", "route", c.route, "status", s); v != -1 {
					t.Errorf("%s requests with status %s: %v, want none", c.route, s, v)
				}
			}
			for _, l := range e.logLines() {
				if l["request_id"] == "hangup-"+c.name && (l["level"] == "ERROR" || l["level"] == "WARN") {
					t.Errorf("logged at %s: %v", l["level"], l)
				}
			}
		})
	}
}

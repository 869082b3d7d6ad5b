package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/store"
)

// With an allow-list, a browser's preflight is answered before
// authentication, and answers to allowed origins (REST and streams) carry
// the CORS headers; other origins, and servers without a list, get none.
func TestCORS(t *testing.T) {
	const game = "https://game.example"
	allowed := newEnv(t, redistestEmbedded, true, func(c *api.Config, _ *store.Store, _ string) { c.CORSOrigins = []string{game} })
	none := newEnv(t, redistestEmbedded, true)
	any := newEnv(t, redistestEmbedded, true, func(c *api.Config, _ *store.Store, _ string) { c.CORSOrigins = []string{"*"} })
	alice, _ := allowed.guest("alice")
	id := allowed.create(alice, arena)["id"].(string)
	preflight := []string{"Origin", game, "Access-Control-Request-Method", "PATCH",
		"Access-Control-Request-Headers", "authorization,content-type,if-match"}
	cases := []struct {
		name         string
		e            *env
		method, path string
		token        string
		hdr          []string
		status       int
		origin       string // Access-Control-Allow-Origin wanted ("" none)
	}{
		{"Preflight", allowed, "OPTIONS", "/v1/rooms/" + id + "/state", "", preflight, 204, game},
		{"PreflightStream", allowed, "OPTIONS", "/v1/rooms/" + id + "/events", "", []string{"Origin", game, "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "last-event-id"}, 204, game},
		{"PreflightOtherOrigin", allowed, "OPTIONS", "/v1/rooms", "", []string{"Origin", "https://evil.example", "Access-Control-Request-Method", "POST"}, 204, ""},
		{"PreflightUnknownHeader", allowed, "OPTIONS", "/v1/rooms", "", []string{"Origin", game, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "x-secret"}, 204, ""},
		{"Get", allowed, "GET", "/v1/rooms/" + id, alice, []string{"Origin", game}, 200, game},
		{"Error", allowed, "GET", "/v1/rooms/" + id, "", []string{"Origin", game}, 401, game},
		{"OtherOrigin", allowed, "GET", "/v1/rooms/" + id, alice, []string{"Origin", "https://evil.example"}, 200, ""},
		{"NoList", none, "GET", "/v1/rooms", "", []string{"Origin", game}, 401, ""},
		{"Star", any, "OPTIONS", "/v1/rooms", "", []string{"Origin", "https://anyone.example", "Access-Control-Request-Method", "POST"}, 204, "*"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.e.do(tc.method, tc.path, tc.token, nil, tc.hdr...)
			if r.status != tc.status || r.header.Get("Access-Control-Allow-Origin") != tc.origin {
				t.Fatalf("%d, Allow-Origin %q; want %d, %q: %s", r.status, r.header.Get("Access-Control-Allow-Origin"), tc.status, tc.origin, r.raw)
			}
			if tc.origin == "" {
				return
			}
			if tc.method == "OPTIONS" {
				if r.header.Get("Access-Control-Max-Age") != "600" || r.header.Get("Access-Control-Allow-Credentials") != "" {
					t.Fatalf("preflight headers %v", r.header)
				}
				return
			}
			exposed := strings.ToLower(r.header.Get("Access-Control-Expose-Headers"))
			for _, h := range []string{"etag", "location", "retry-after", "ratelimit", "ratelimit-policy", "x-request-id", "idempotent-replayed"} {
				if !strings.Contains(exposed, h) {
					t.Fatalf("%s not exposed: %q", h, exposed)
				}
			}
		})
	}
	// An event stream from an allowed origin carries the header too (as a
	// browser opens it: EventSource with a stream token).
	st := allowed.streamToken(alice, "/v1/rooms/"+id+"/stream-token")
	req, _ := http.NewRequest("GET", allowed.url+"/v1/rooms/"+id+"/events?token="+st, nil)
	req.Header.Set("Origin", game)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Access-Control-Allow-Origin") != game {
		t.Fatalf("stream: %d, Allow-Origin %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
}

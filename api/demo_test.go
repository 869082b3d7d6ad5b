package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/web"
)

// The demo's pages and files carry a Content-Security-Policy of the
// server alone and may be framed by no site (clickjacking of Join, Leave
// and Kick: a browser tester's find); the API's answers are not given it.
func TestDemoIsFramedByNoSite(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true, func(c *api.Config, _ *store.Store, _ string) { c.Demo = web.Demo() })
	for _, path := range []string{"/demo/", "/demo/room.html", "/demo/lobby.js"} {
		r := e.do("GET", path, "", nil)
		csp := r.header.Get("Content-Security-Policy")
		if r.status != http.StatusOK || !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: %d, Content-Security-Policy %q, X-Frame-Options %q", path, r.status, csp, r.header.Get("X-Frame-Options"))
		}
	}
	if r := e.do("GET", "/healthz", "", nil); r.header.Get("Content-Security-Policy") != "" {
		t.Errorf("the API's answers carry the demo's policy: %v", r.header)
	}
}

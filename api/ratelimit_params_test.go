package api_test

import "testing"

// docs/SECURITY.md: "every request counts, a malformed one as much as a
// valid one". A request whose path or query parameters the generated
// binding refuses never reaches the rate-limit middleware (it runs inside
// the route, after the binding).
func TestParamErrorsCount(t *testing.T) {
	e := limitedEnv(t, redistestEmbedded, "read.ip=2/h")
	alice, _ := e.guest("alice")
	for i := range 4 {
		r := e.do("GET", "/v1/rooms?joinable=maybe", alice, nil)
		if i >= 2 && r.status != 429 {
			t.Fatalf("malformed request %d from one address: %d %s, want 429 RATE_LIMITED (read.ip=2/h)", i+1, r.status, r.code())
		}
	}
}

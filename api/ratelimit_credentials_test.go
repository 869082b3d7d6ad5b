package api_test

import "testing"

// Every refused credential counts on the address's auth limit
// (docs/SECURITY.md: "A request with a missing or bad token counts on its
// address's auth limit"): a wrong API key, in X-API-Key or as a bearer
// token, or two credentials at once, as much as a forged JWT.
func TestRefusedKeysCountOnAuthLimit(t *testing.T) {
	for _, hdr := range [][]string{
		{"X-API-Key", "rsk_not-a-key"},
		{"Authorization", "Bearer rsk_not-a-key"},
	} {
		t.Run(hdr[0], func(t *testing.T) {
			e := limitedEnv(t, redistestEmbedded, "auth=3/h")
			for range 3 {
				want(t, e.do("GET", "/v1/rooms", "", nil, hdr...), 401, "UNAUTHENTICATED")
			}
			r := e.do("GET", "/v1/rooms", "", nil, hdr...)
			if r.status != 429 {
				t.Fatalf("4th wrong API key from one address: %d %s, want 429 RATE_LIMITED (auth.ip=3/h)", r.status, r.code())
			}
		})
	}
}

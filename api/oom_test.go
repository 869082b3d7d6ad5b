package api_test

import (
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/players"
)

// A full Redis (maxmemory, noeviction) refuses a new following list whole:
// 503 STORE_UNAVAILABLE, the list followed before kept (its script's first
// change, a DEL, let its SADDs write past maxmemory: 200).
func TestFullRedisFollowingUnavailable(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	e := playerEnvs(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr}, players.PolicyReplace, 1)[0]
	alice, aliceID := e.guest("alice")
	want(t, e.do("PUT", "/v1/me/following", alice, map[string]any{"userIds": []string{"keep"}}), 200, "")
	redistest.Fill(t, srv.Addr)
	want(t, e.do("PUT", "/v1/me/following", alice, map[string]any{"userIds": []string{"keep", "other"}}), 503, "STORE_UNAVAILABLE")
	if got, err := e.store.Sessions().Following(t.Context(), aliceID); err != nil || len(got) != 1 || got[0] != "keep" {
		t.Fatalf("following out of memory: %v (%v), want [keep]", got, err)
	}
}

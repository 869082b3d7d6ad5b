package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
)

// A full Redis (maxmemory, noeviction) lets a script that changed
// something write past maxmemory: following_set emptied the set first (a
// DEL, which Redis does not refuse out of memory) and its SADDs then grew
// it past maxmemory. Full, a new list is refused whole (503) and the old
// one stays; emptying it, which frees memory, still goes through.
func TestFullRedisRefusesFollowing(t *testing.T) {
	srv := ownServer(t)
	s := openStore(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr})
	ctx := context.Background()
	following := func(want ...string) {
		t.Helper()
		if got, err := s.Sessions().Following(ctx, alice.ID); err != nil || !slices.Equal(got, want) {
			t.Fatalf("following %v (%v), want %v", got, err, want)
		}
	}
	if err := s.Sessions().SetFollowing(ctx, alice.ID, []string{"u1", "u2"}); err != nil {
		t.Fatal(err)
	}
	redistest.Fill(t, srv.Addr)
	wantErr(t, s.Sessions().SetFollowing(ctx, alice.ID, []string{"u2", "u3", "u4"}), rooms.ErrUnavailable)
	following("u1", "u2")
	if err := s.Sessions().SetFollowing(ctx, alice.ID, nil); err != nil {
		t.Fatalf("emptied out of memory: %v", err)
	}
	following()
	redistest.Unfill(t, srv.Addr)
	for _, ids := range [][]string{{"u1", "u2"}, {"u2", "u3", "u4"}, {"u4"}} {
		if err := s.Sessions().SetFollowing(ctx, alice.ID, ids); err != nil {
			t.Fatal(err)
		}
		following(ids...)
	}
}

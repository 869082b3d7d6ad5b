package store_test

import (
	"context"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
)

// BenchmarkFreeSeats is a backfill pass's read of one match room of 100
// players (matchmaking.Matcher reads every backfill room of a mode each
// pass): standalone Redis, one call at a time. Run:
//
//	go test ./store -run '^$' -bench FreeSeats
func BenchmarkFreeSeats(b *testing.B) {
	s := openStore(b, redistest.Backend{Name: "standalone", URL: redistest.StandaloneURL(b)})
	ctx := context.Background()
	id := mustCreate(b, s, user(0), newRoom(func(r *rooms.NewRoom) { r.MaxPlayers = 100 })).Room.ID
	for i := 1; i < 100; i++ {
		mustJoin(b, s, user(i), id)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if free, open, err := s.FreeSeats(ctx, id, 100); err != nil || !open || free != 0 {
			b.Fatalf("free %d open %v: %v", free, open, err)
		}
	}
}

package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// BenchmarkCreateJoin measures a create, a join and both leaves on
// standalone Redis, with the room quotas off and on, so the cost of the
// holdings shows. Every user is new, so each create and join also builds
// the user's holdings from the 16 shards' user indexes: the worst case.
// Run:
//
//	go test ./store -run '^$' -bench CreateJoin -benchtime 2000x
func BenchmarkCreateJoin(b *testing.B) {
	for _, q := range []store.Quotas{{}, {RoomsOwned: 5, RoomsJoined: 20}} {
		s, err := store.Open(context.Background(), store.Config{RedisURL: redistest.StandaloneURL(b),
			Prefix: redistest.Prefix(b), Shards: 16, Quotas: q})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.Run(fmt.Sprintf("quotas=%t", q.RoomsJoined > 0), func(b *testing.B) {
			for i := range b.N {
				owner := rooms.User{ID: fmt.Sprintf("o-%d", i), Name: "o"}
				guest := rooms.User{ID: fmt.Sprintf("g-%d", i), Name: "g"}
				j, err := s.Create(ctx, owner, spread(i%16))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Join(ctx, guest, j.Room.ID); err != nil {
					b.Fatal(err)
				}
				if err := s.Leave(ctx, guest, j.Room.ID); err != nil {
					b.Fatal(err)
				}
				if err := s.Leave(ctx, owner, j.Room.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
		s.Close()
	}
}

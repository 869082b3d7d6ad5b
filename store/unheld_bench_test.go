package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/race"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// BenchmarkUnheld reports, with the room quotas off and on, the Redis time
// of closing an 8-player room (owner's delete: one unheld entry per
// player with the quotas on), of the janitor's visit that releases those
// entries (per entry), and of a janitor visit of a shard with nothing to
// do, on a redis-server of its own (20 rooms with -short or the race
// detector, 200 else). Run:
//
//	go test ./store -run '^$' -bench Unheld -benchtime 1x
func BenchmarkUnheld(b *testing.B) {
	for _, q := range []store.Quotas{{}, {RoomsOwned: 5, RoomsJoined: 20}} {
		b.Run(fmt.Sprintf("quotas=%t", q.RoomsJoined > 0), func(b *testing.B) {
			s, _ := freshStore(b, func(c *store.Config) { c.Quotas = q; c.Lifecycle.LogIdleTrim = -1 })
			ctx := context.Background()
			n := 200
			if race.Smoke() {
				n = 20
			}
			ids := make([]string, n)
			for i := range n {
				owner := rooms.User{ID: fmt.Sprintf("owner-%05d", i)}
				j, err := s.Create(ctx, owner, newRoom(func(r *rooms.NewRoom) {
					r.Mode, r.Region, r.MaxPlayers = fmt.Sprint("m", i%4), fmt.Sprint("r", i%4), 8
				}))
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = j.Room.ID
				for p := 1; p < 8; p++ {
					if _, err := s.Join(ctx, rooms.User{ID: fmt.Sprintf("u-%05d-%d", i, p)}, j.Room.ID); err != nil {
						b.Fatal(err)
					}
				}
			}
			s.Client().ConfigResetStat(ctx)
			for i, id := range ids {
				if _, err := s.Delete(ctx, rooms.User{ID: fmt.Sprintf("owner-%05d", i)}, id); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(redisMicros(b, s.Client())/float64(n), "redis-µs/close")
			entries := len(unheldOf(b, s))
			s.Client().ConfigResetStat(ctx)
			sweepAll(b, s, store.Report{})
			if q.RoomsJoined > 0 {
				if entries != 8*n {
					b.Fatalf("%d unheld entries, want %d", entries, 8*n)
				}
				b.ReportMetric(redisMicros(b, s.Client())/float64(entries), "redis-µs/entry")
			}
			if left := unheldOf(b, s); len(left) != 0 {
				b.Fatalf("unheld left %d", len(left))
			}
			time.Sleep(2 * time.Millisecond)
			s.Client().ConfigResetStat(ctx)
			const visits = 400
			for v := range visits {
				if _, err := s.Sweep(ctx, v%8, "bench", time.Millisecond); err != nil {
					b.Fatal(err)
				}
				time.Sleep(10 * time.Microsecond)
			}
			b.ReportMetric(redisMicros(b, s.Client())/visits, "redis-µs/empty-visit")
		})
	}
}

func unheldOf(tb testing.TB, s *store.Store) []string {
	tb.Helper()
	l, err := s.Unheld(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/race"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// BenchmarkLobbyScale measures listing and quick-join on standalone Redis
// with 1k, 10k and 100k rooms (16 shards, 4 modes × 4 regions): their cost
// must not grow with the number of rooms. Run:
//
//	go test ./store -run '^$' -bench LobbyScale -benchtime 2000x
func BenchmarkLobbyScale(b *testing.B) {
	sizes := []int{1_000, 10_000, 100_000}
	if race.Smoke() {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		s, err := store.Open(context.Background(), store.Config{RedisURL: redistest.StandaloneURL(b), Prefix: redistest.Prefix(b), Shards: 16})
		if err != nil {
			b.Fatal(err)
		}
		populate(b, s, n)
		svc := lobby.NewService(s.Listing())
		ctx := context.Background()
		b.Run(fmt.Sprintf("list-fill-mode-region/rooms=%d", n), func(b *testing.B) {
			timed(b, func(i int) error {
				_, err := svc.List(ctx, lobby.ListParams{Joinable: true, Sort: "fill", Mode: mode(i), Region: region(i), Limit: ptr(20)})
				return err
			})
		})
		b.Run(fmt.Sprintf("list-newest-all-shards/rooms=%d", n), func(b *testing.B) {
			timed(b, func(i int) error {
				_, err := svc.List(ctx, lobby.ListParams{Limit: ptr(20)})
				return err
			})
		})
		b.Run(fmt.Sprintf("quick-join/rooms=%d", n), func(b *testing.B) {
			timed(b, func(i int) error {
				_, err := s.QuickJoin(ctx, rooms.User{ID: fmt.Sprintf("qj-%d-%d", n, i)}, mode(i), []string{region(i)}, nil, nil)
				return err
			})
		})
		s.Close()
	}
}

func mode(i int) string   { return fmt.Sprintf("mode%d", i%4) }
func region(i int) string { return fmt.Sprintf("region%d", (i/4)%4) }

// populate creates n rooms of 8 seats over 16 (mode, region) pairs, with
// 16 writers.
func populate(b *testing.B, s *store.Store, n int) {
	b.Helper()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				r := newRoom(func(r *rooms.NewRoom) { r.Mode, r.Region, r.MaxPlayers = mode(i), region(i), 8 })
				if _, err := s.Create(context.Background(), rooms.User{ID: fmt.Sprintf("owner-%d", i)}, r); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.Logf("created %d rooms in %v", n, time.Since(start).Round(time.Millisecond))
}

// timed runs op b.N times and reports latency percentiles.
func timed(b *testing.B, op func(i int) error) {
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if err := op(i); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
}

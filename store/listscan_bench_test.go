package store_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/race"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/store"
)

// BenchmarkListAttributeScan measures what a listing with an attribute
// filter reads from Redis, the security tester's case: 3 600 public rooms
// over 64 modes in one region, every other one playing, 16 shards, on a
// redis-server of its own; status=waiting,playing, limit 100, an
// attr.map no room has (the whole scan budget read), and the same listing
// without the filter. It reports per request the ZRANGE and HMGET calls
// and their µs in Redis (INFO commandstats) and the index entries read.
// Run:
//
//	go test ./store -run '^$' -bench ListAttributeScan -benchtime 200x
func BenchmarkListAttributeScan(b *testing.B) {
	s, addr := freshStore(b, func(c *store.Config) { c.Shards, c.Batch = 16, nil })
	var reads indexReads
	s.Client().AddHook(reads.hook())
	n := 3600
	if race.Smoke() {
		n = 1200 // still past the budget
	}
	seedScan(b, s, n)
	svc := lobby.NewService(s.Listing())
	admin := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { admin.Close() })
	for _, bc := range []struct {
		name  string
		query map[string][]string
	}{
		{"filter-matching-nothing", map[string][]string{"attr.map": {"zzz"}}},
		{"no-filter", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := lobby.ListParams{Status: "waiting,playing", Limit: ptr(100), Query: bc.query}
			before := commandstats(b, admin)
			var entries int64
			for b.Loop() {
				if _, err := svc.List(reads.listed(context.Background()), p); err != nil {
					b.Fatal(err)
				}
				entries += reads.entries.Load()
			}
			after := commandstats(b, admin)
			n := float64(b.N)
			zr, hm := after["zrange"].Sub(before["zrange"]), after["hmget"].Sub(before["hmget"])
			b.ReportMetric(float64(zr.Calls)/n, "zrange/op")
			b.ReportMetric(float64(entries)/n, "entries/op")
			b.ReportMetric(float64(zr.Usec)/n, "zrange-µs/op")
			b.ReportMetric(float64(hm.Calls)/n, "hmget/op")
			b.ReportMetric(float64(hm.Usec)/n, "hmget-µs/op")
		})
	}
}

package ratelimit_test

import (
	"github.com/realsync/realsync/internal/redisinfo"
	"github.com/realsync/realsync/internal/storetest"

	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/ratelimit"
)

// BenchmarkRateLimit is the check a /v1 request costs: a user's and an
// address's counter in one pipeline (and, for a message, the room's and
// the member's), on a redis-server of its own, 64 goroutines. Besides
// ns/op (the round trip as a client sees it, on a shared 2-core machine)
// it reports redis-µs/op: the time Redis spent in the script per check
// (INFO commandstats), the server time a limit adds. The "busy" cases are
// 1 000 users and 200 addresses sending as fast as the loop goes, within
// limits of 2 000/s (burst 4 000) per user and 10 000/s (burst 20 000) per
// address (leases of up to 500 and 2 500, living 250 ms), with leases of
// 1 s (realsyncd's default) and without (REALSYNC_RATE_LIMIT_LEASE=0):
// the cost of busy clients, the ones leases are for.
//
//	go test ./store/ratelimit -run '^$' -bench RateLimit -benchtime 3s
func BenchmarkRateLimit(b *testing.B) {
	srv, err := redistest.StartServer()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop)
	st := storetest.Open(b, store.Config{RedisURL: "redis://" + srv.Addr, Prefix: "bench", Shards: shards})
	tag := st.RoomTag
	plain := ratelimit.New(ratelimit.Config{Client: st.Client(), Prefix: "bench", RoomTag: tag})
	leased := ratelimit.New(ratelimit.Config{Client: st.Client(), Prefix: "bench", RoomTag: tag, LeaseTTL: time.Second})
	big := limits.Limit{Rate: 1_000_000, Period: time.Second, Burst: 1_000_000} // never refuses
	busyUser := limits.Limit{Rate: 2000, Period: time.Second, Burst: 4000}
	busyIP := limits.Limit{Rate: 10_000, Period: time.Second, Burst: 20_000}
	for _, tc := range []struct {
		name   string
		lim    *ratelimit.Limiter
		checks func(i int64) []limits.Check
	}{
		{"user+ip", plain, func(i int64) []limits.Check {
			return []limits.Check{
				{Name: "read", Scope: limits.User, Subject: "u" + strconv.FormatInt(i%1000, 10), Limit: big},
				{Name: "read", Scope: limits.IP, Subject: "10.0.0." + strconv.FormatInt(i%200, 10), Limit: big}}
		}},
		{"user+ip,busy,no-lease", plain, func(i int64) []limits.Check {
			return []limits.Check{
				{Name: "read", Scope: limits.User, Subject: "u" + strconv.FormatInt(i%1000, 10), Limit: busyUser},
				{Name: "read", Scope: limits.IP, Subject: "10.0.0." + strconv.FormatInt(i%200, 10), Limit: busyIP}}
		}},
		{"user+ip,busy,leased", leased, func(i int64) []limits.Check {
			return []limits.Check{
				{Name: "read", Scope: limits.User, Subject: "u" + strconv.FormatInt(i%1000, 10), Limit: busyUser},
				{Name: "read", Scope: limits.IP, Subject: "10.0.0." + strconv.FormatInt(i%200, 10), Limit: busyIP}}
		}},
		{"room+member+user+ip", plain, func(i int64) []limits.Check {
			u := "u" + strconv.FormatInt(i%1000, 10)
			return []limits.Check{
				{Name: "messages", Scope: limits.Room, Subject: room, Member: u, Limit: big},
				{Name: "write", Scope: limits.User, Subject: u, Limit: big},
				{Name: "write", Scope: limits.IP, Subject: "10.0.0." + strconv.FormatInt(i%200, 10), Limit: big}}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			st.Client().ConfigResetStat(context.Background())
			var seq atomic.Int64
			b.SetParallelism(32)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := tc.lim.Do(context.Background(), limits.Take, tc.checks(seq.Add(1))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			calls, usec := scriptStats(b, st.Client())
			if calls > 0 {
				b.ReportMetric(usec/float64(b.N), "redis-µs/op")
				b.ReportMetric(float64(calls)/float64(b.N), "scripts/op")
			}
		})
	}
}

// scriptStats reads the calls and µs of EVALSHA from INFO commandstats.
func scriptStats(b *testing.B, c redis.UniversalClient) (calls int64, usec float64) {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	st := redisinfo.Commandstats(info)
	for _, name := range []string{"evalsha", "eval"} {
		calls += st[name].Calls
		usec += float64(st[name].Usec)
	}
	return calls, usec
}

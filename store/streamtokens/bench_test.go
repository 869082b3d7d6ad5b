package streamtokens_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redisinfo"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/streamtokens"
)

// BenchmarkOpening is what a stream token's one use adds to a stream's
// opening (api's usedStreamToken and useStreamToken): the read at
// authentication (EXISTS) and the claim (stream_token_use.lua), each a
// fresh token of its own, from 64 goroutines through the store's client
// (batched per node, as realsyncd's default), on a fresh redis-server.
// Reports Redis' own µs per opening of each command (INFO commandstats)
// beside the wall time per opening. Run:
//
//	go test ./store/streamtokens -run '^$' -bench Opening -benchtime 20000x
func BenchmarkOpening(b *testing.B) {
	srv, err := redistest.StartServer()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	ctx := context.Background()
	st := storetest.Open(b, store.Config{RedisURL: "redis://" + srv.Addr, Prefix: "bench", Shards: 16, Batch: &store.Batching{}})
	u := streamtokens.New(st.Base())
	if _, err := u.Use(ctx, "warm", "warm", "w", time.Minute); err != nil { // the script loaded
		b.Fatal(err)
	}
	stats := func() map[string]redisinfo.Stat {
		info, err := st.Client().Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		return redisinfo.Commandstats(info)
	}
	before := stats()
	var seq atomic.Int64
	b.SetParallelism(32) // 64 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			uid, id := fmt.Sprint("u", n%1000), fmt.Sprint("t", n)
			if used, err := u.Used(ctx, uid, id); err != nil || used {
				b.Errorf("a fresh token read as used (%v)", err)
				return
			}
			if ok, err := u.Use(ctx, uid, id, "o", 75*time.Second); err != nil || !ok {
				b.Errorf("a fresh token's claim refused (%v)", err)
				return
			}
		}
	})
	b.StopTimer()
	after := stats()
	for _, cmd := range []string{"exists", "evalsha"} {
		d := after[cmd].Sub(before[cmd])
		b.ReportMetric(float64(d.Usec)/float64(b.N), "redis-µs-"+cmd+"/op")
	}
	if n, err := st.Client().(*redis.Client).DBSize(ctx).Result(); err == nil {
		b.ReportMetric(float64(n), "keys")
	}
}

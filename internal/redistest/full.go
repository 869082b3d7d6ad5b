package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Fill puts the redis-server at addr out of memory, as a Redis that
// reached its maxmemory under noeviction: maxmemory is set to half the
// memory it uses now, so it stays full whatever a client's buffers give
// back, and every write that may grow memory is refused (OOM) until tb
// ends, when the server's maxmemory and policy are restored. For a server
// of the test's own (StartServer): a shared one would refuse other tests'
// writes.
func Fill(tb testing.TB, addr string) {
	tb.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	was, err := rdb.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		tb.Fatal(err)
	}
	info, err := rdb.InfoMap(ctx, "memory").Result()
	if err != nil {
		tb.Fatal(err)
	}
	used, err := strconv.ParseInt(strings.TrimSpace(info["Memory"]["used_memory"]), 10, 64)
	if err != nil {
		tb.Fatalf("used_memory: %v", err)
	}
	tb.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		c.ConfigSet(ctx, "maxmemory", was["maxmemory"])
		c.ConfigSet(ctx, "maxmemory-policy", was["maxmemory-policy"])
	})
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		tb.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used/2, 10)).Err(); err != nil {
		tb.Fatal(err)
	}
}

// Unfill gives the redis-server at addr filled by Fill room to spare
// again (no maxmemory), before tb ends.
func Unfill(tb testing.TB, addr string) {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if err := rdb.ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
		tb.Fatal(err)
	}
}

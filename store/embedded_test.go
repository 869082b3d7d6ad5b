package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The embedded store's clock applies expiries, exactly on a small store
// and on ticks on one whose every-key walk is costly (20 000 keys): a key
// set to expire goes within a few ticks, and a longer one's PTTL counts
// down.
func TestEmbeddedKeysExpire(t *testing.T) {
	for _, n := range []int{0, 20000} {
		t.Run(fmt.Sprintf("keys=%d", n), func(t *testing.T) {
			c, ctx := embeddedWith(t, n), context.Background()
			keys := c.DBSize(ctx).Val()
			if err := c.Set(ctx, "short", "v", 200*time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.Set(ctx, "long", "v", time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			within := func(what string, cond func() bool) {
				t.Helper()
				for began := time.Now(); !cond(); time.Sleep(10 * time.Millisecond) {
					if time.Since(began) > 5*time.Second {
						t.Fatalf("%s: not within 5 s", what)
					}
				}
			}
			within("a key set to expire in 200 ms gone", func() bool { return c.Exists(ctx, "short").Val() == 0 })
			within("an hour's key's PTTL down by a second", func() bool { return c.PTTL(ctx, "long").Val() <= time.Hour-time.Second })
			if got := c.DBSize(ctx).Val(); c.Exists(ctx, "long").Val() != 1 || got != keys+1 {
				t.Fatalf("%d keys, want %d: the hour's key and the others kept", got, keys+1)
			}
		})
	}
}

// A small embedded store's expiries are exact (ClockTTL): a key's PTTL
// read just after it was set is down by no more than the time that
// passed, however often it is read. On ticks, a tick landing between the
// SET and the PTTL charges the key the whole tick: a short lease went
// early on a busy machine.
func TestEmbeddedSmallStoreIsExact(t *testing.T) {
	c, ctx := embeddedWith(t, 0), context.Background()
	const ttl = time.Hour
	for i := range 2000 {
		began := time.Now()
		if err := c.Set(ctx, "k", "v", ttl).Err(); err != nil {
			t.Fatal(err)
		}
		left, err := c.PTTL(ctx, "k").Result()
		if err != nil {
			t.Fatal(err)
		}
		if passed := time.Since(began); left < ttl-passed-time.Millisecond { // PTTL's ms
			t.Fatalf("read %d: PTTL %v %v after the SET, want at least %v: charged more than the time passed", i, left, passed, ttl-passed)
		}
	}
}

// embeddedWith opens an embedded store holding n keys (set 1 000 per
// command) and gives its clock a second to measure its walks.
func embeddedWith(tb testing.TB, n int) redis.UniversalClient {
	tb.Helper()
	c := openStore(tb, redistest.Backend{Name: "embedded"}).Client()
	ctx := context.Background()
	for i := 0; i < n; i += 1000 {
		kv := make([]any, 0, 2000)
		for j := i; j < min(n, i+1000); j++ {
			kv = append(kv, fmt.Sprintf("k%d", j), "v")
		}
		if err := c.MSet(ctx, kv...).Err(); err != nil {
			tb.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	return c
}

// BenchmarkEmbeddedScript: a script of 10 writes on the embedded store
// holding 100 or 20 000 other keys. The cost must not grow with the keys
// (with miniredis' ClockTTL alone, every call walked every key, sorted:
// 48 ms per script at 20 000 keys against 0.3 ms without).
func BenchmarkEmbeddedScript(b *testing.B) {
	for _, n := range []int{100, 20000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			c, ctx := embeddedWith(b, n), context.Background()
			script := redis.NewScript("for i = 1, 10 do redis.call('SET', KEYS[1], i) end return 1")
			b.ResetTimer()
			for range b.N {
				if err := script.Run(ctx, c, []string{"w"}).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

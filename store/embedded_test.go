package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The embedded store's clock applies expiries: a key set to expire goes
// within a few ticks, and a longer one's PTTL counts down.
func TestEmbeddedKeysExpire(t *testing.T) {
	s := openStore(t, redistest.Backend{Name: "embedded"})
	c, ctx := s.Client(), context.Background()
	if err := c.Set(ctx, "short", "v", 200*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "long", "v", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for c.Exists(ctx, "short").Val() == 1 {
		if time.Since(began) > 5*time.Second {
			t.Fatal("a key set to expire in 200 ms still there after 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ttl := c.PTTL(ctx, "long").Val(); ttl >= time.Hour || ttl < time.Hour-5*time.Second {
		t.Fatalf("PTTL of an hour's key after %v: %v", time.Since(began), ttl)
	}
	if c.Exists(ctx, "long").Val() != 1 {
		t.Fatal("the hour's key is gone")
	}
}

// BenchmarkEmbeddedScript: a script of 10 writes on the embedded store
// holding 100 or 20 000 other keys. The cost must not grow with the keys
// (with miniredis' ClockTTL, every call walked every key, sorted: 48 ms
// per script at 20 000 keys against 0.3 ms).
func BenchmarkEmbeddedScript(b *testing.B) {
	for _, n := range []int{100, 20000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			s := openStore(b, redistest.Backend{Name: "embedded"})
			c, ctx := s.Client(), context.Background()
			p := c.Pipeline()
			for i := 0; i < n; i++ {
				p.Set(ctx, fmt.Sprintf("k%d", i), "v", time.Hour)
			}
			if _, err := p.Exec(ctx); err != nil {
				b.Fatal(err)
			}
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

package redisx

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
)

// A command sent first after a Redis restart whose outage opened go-redis'
// dial breaker (PoolSize failed dials) runs: Redial sends it again once the
// breaker's probe has closed it. Without it, it failed with the last dial
// error for up to a second. (A transaction's case, the store's room read:
// store's TestFirstCallAfterARedisRestartRuns.)
func TestRedialAfterTheBreakerOpened(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 2, DialerRetries: 1, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	c.AddHook(Redial{})
	ctx := context.Background()
	srv.Kill()
	for range 4 { // twice PoolSize in failed dials
		// cut short: the dials fail at once, Redial's wait would not
		short, cancel := context.WithTimeout(ctx, RedialWait/2)
		if err := c.Ping(short).Err(); !Redialed(err) {
			t.Fatalf("with Redis down: %v, want a failed dial", err)
		}
		cancel()
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("first command after the restart: %v", err)
	}
}

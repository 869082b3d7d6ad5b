package redisx

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
)

// redialed starts a Redis and a client of it with Redial (a pool of 2:
// its breaker opens after 2 failed dials), both stopped when t ends.
func redialed(t *testing.T) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 2, DialerRetries: 1, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	c.AddHook(&Redial{})
	return srv, c
}

// A command sent first after a Redis restart whose outage opened go-redis'
// dial breaker (PoolSize failed dials) runs: Redial sends it again once the
// breaker's probe has closed it. Without it, it failed with the last dial
// error for up to a second. (A transaction's case, the store's room read:
// store's TestFirstCallAfterARedisRestartRuns.)
func TestRedialAfterTheBreakerOpened(t *testing.T) {
	srv, c := redialed(t)
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

// A call to a node that refuses connections (a Redis down, a Cluster
// master killed and not failed over yet) fails at once, a command as a
// pipeline: Redial sends it again, after its wait, only to a node that
// accepts a connection again. Before, every such call waited RedialWait
// first (a failover tester's 503s took 1–3.5 s, a request's calls and the
// batches queued behind each paying it). The bound is the context's: a
// call that waited for the redial returns only once it ended.
func TestNoRedialWhileTheNodeRefuses(t *testing.T) {
	srv, c := redialed(t)
	srv.Kill()
	for _, tc := range []struct {
		name string
		send func(context.Context) error // one call to the node down
	}{
		{"Command", func(ctx context.Context) error { return c.Ping(ctx).Err() }},
		{"Pipeline", func(ctx context.Context) error {
			_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() })
			return err
		}},
	} {
		t.Run(tc.name+"FailsAtOnce", func(t *testing.T) {
			// twice PoolSize: with go-redis' breaker open as well
			for range 4 {
				ctx, cancel := context.WithTimeout(context.Background(), RedialWait)
				err := tc.send(ctx)
				waited := ctx.Err()
				cancel()
				if !Redialed(err) {
					t.Fatalf("with Redis down: %v, want a failed dial", err)
				}
				if waited != nil {
					t.Fatalf("the call waited %v for a redial to a node that refuses connections", RedialWait)
				}
			}
		})
	}
}

// The calls that failed to dial one node share a probe of it: a hundred
// at once dial it once (a reviewer's find: each dialled it, thousands of
// connections against a Redis just back), and a node that accepts answers
// true to all of them.
func TestRedialProbesANodeOnceForItsCalls(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Addr: ln.Addr(), Err: errors.New("connection refused")}
	r := &Redial{}
	var wg sync.WaitGroup
	var yes atomic.Int64
	for range 100 {
		wg.Go(func() {
			if r.answers(context.Background(), dialErr) {
				yes.Add(1)
			}
		})
	}
	wg.Wait()
	if yes.Load() != 100 {
		t.Errorf("%d of 100 calls were told the node answers", yes.Load())
	}
	if n := accepted.Load(); n > 10 { // one, a few should the calls of a loaded machine straddle probeFresh
		t.Errorf("the node was dialled %d times for 100 calls at once", n)
	}
}

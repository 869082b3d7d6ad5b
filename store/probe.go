package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Readiness asks Redis through connections of its own: a client built from
// the request client's options (address, TLS, credentials, timeouts) with
// a pool of probePoolSize connections (per node on a Cluster), closed by
// Close. Through the request pool, an instance whose requests hold every
// connection (thousands in flight, each waiting up to the pool timeout)
// failed its readiness check although Redis answered at once: every
// instance of an overloaded fleet left the load balancer together, a
// slowdown made an outage. Its own connections wait for nothing but Redis.
const probePoolSize = 2

// probeOptions are a standalone (or embedded) probe's options: opt's,
// with a pool of its own size.
func probeOptions(opt redis.Options) *redis.Options {
	opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns, opt.MaxActiveConns = probePoolSize, 0, probePoolSize, 0
	return &opt
}

// probeClusterOptions are a Cluster probe's options: opt's (the masters'
// client's, never the replica reader's), with a pool of its own size per
// node.
func probeClusterOptions(opt redis.ClusterOptions) *redis.ClusterOptions {
	opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns, opt.MaxActiveConns = probePoolSize, 0, probePoolSize, 0
	opt.ReadOnly, opt.RouteRandomly, opt.RouteByLatency = false, false, false
	return &opt
}

// Ping reports whether this instance reaches Redis: PING on the server,
// or on a Cluster on every master at once, through the probe's own
// connections (see probePoolSize), so that it answers as fast while every
// request connection is taken. On a Cluster it answers nil as soon as
// one master answers, without waiting for the others, and an error only
// when none answers before ctx ends: readiness says whether this instance
// is cut off from Redis, not whether all of Redis is healthy. A master
// that died or hangs fails the requests for its slots on every instance
// alike (until its replica is promoted), so failing every instance's
// readiness for it would only take the whole fleet out of rotation, the
// shards that still serve with it. Replicas that serve browsing reads
// (ReadFromReplicas) are not asked. Errors: go-redis' (unreachable, a
// timeout, an error reply; on a Cluster every master's, joined), ctx's
// end.
func (s *Store) Ping(ctx context.Context) error {
	if c, ok := s.probe.(*redis.ClusterClient); ok {
		return pingAnyMaster(ctx, c)
	}
	return s.probe.Ping(ctx).Err()
}

// pingAnyMaster pings every master of c concurrently and returns nil at the
// first answer; the pings still running are cancelled. Its error joins
// every master's, or is the Cluster layout's (no node answered CLUSTER
// SLOTS).
func pingAnyMaster(ctx context.Context, c *redis.ClusterClient) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answered := make(chan struct{}, 1)
	done := make(chan error, 1)
	var mu sync.Mutex
	var errs []error
	go func() {
		// ForEachMaster waits for every ping, a hung master's until ctx
		// ends: its answer is only needed when no master answered
		done <- c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			err := n.Ping(ctx).Err()
			if err == nil {
				select {
				case answered <- struct{}{}:
				default:
				}
				return nil
			}
			mu.Lock()
			errs = append(errs, fmt.Errorf("%s: %w", n.Options().Addr, err))
			mu.Unlock()
			return err
		})
	}()
	select {
	case <-answered:
		return nil
	case err := <-done:
		select {
		case <-answered:
			return nil
		default:
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case len(errs) > 0:
			return errors.Join(errs...)
		case err != nil:
			return err // the layout could not be read
		default:
			return errors.New("redis cluster: no master known")
		}
	}
}

package store

import (
	"context"
	"errors"
	"fmt"

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
// or on a Cluster on every master that serves the store's shards at once
// (as the probe's layout, re-read every second, says), through the probe's own
// connections (see probePoolSize), so that it answers as fast while every
// request connection is taken. On a Cluster it answers nil as soon as a
// majority of those masters answered, without waiting for the others, and
// an error as soon as a majority cannot answer (or ctx ends first).
// Readiness says whether this instance can serve, not whether all of
// Redis is healthy: a master that died or hangs fails the requests for its
// slots on every instance alike (until its replica is promoted), so
// failing every instance's readiness for one master would only take the
// whole fleet out of rotation, the shards that still serve with it; but an
// instance cut off from most masters (a partition on its side) would fail
// most of its requests while the others serve them, and leaves. With most
// masters gone the Cluster itself cannot fail them over and refuses
// commands (CLUSTERDOWN) on every instance anyway. Replicas that serve
// browsing reads (ReadFromReplicas) are not asked. Errors: go-redis'
// (unreachable, a timeout, an error reply; on a Cluster the failed
// masters', joined), ctx's end.
func (s *Store) Ping(ctx context.Context) error {
	if c, ok := s.probe.(*redis.ClusterClient); ok {
		return s.pingMasters(ctx, c)
	}
	return s.probe.Ping(ctx).Err()
}

// pingMasters pings the masters of c that serve the store's keys
// (shardMasters) concurrently and returns nil once more than half of
// them answered; the pings still running are cancelled. Its error, once
// half of them or more failed, joins the failed masters', or is the
// Cluster layout's (no node answered CLUSTER SLOTS yet).
func (s *Store) pingMasters(ctx context.Context, c *redis.ClusterClient) error {
	masters, err := s.shardMasters(ctx, c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(masters))
	for _, n := range masters {
		go func() {
			err := n.Ping(ctx).Err()
			if err != nil {
				err = fmt.Errorf("%s: %w", n.Options().Addr, err)
			}
			errs <- err
		}()
	}
	need := len(masters)/2 + 1 // a majority
	answered := 0
	var failed []error
	for range masters {
		err := <-errs
		if err == nil {
			if answered++; answered == need {
				return nil
			}
			continue
		}
		if failed = append(failed, err); len(failed) > len(masters)-need {
			break
		}
	}
	return fmt.Errorf("%d of %d masters unreachable: %w", len(failed), len(masters), errors.Join(failed...))
}

// shardMasters returns the clients of c's masters that serve the store's
// shards and its meta key, once each, as c's Cluster layout says. It reads
// the layout c holds (re-read in the background when older than its
// reload interval), never waiting for a re-read as ForEachMaster does:
// that asks CLUSTER SLOTS of a random node first, and a node that hangs
// held every readiness check that picked it until its timeout, long
// after the Cluster had failed it over. Only the first call, before c
// holds a layout, waits for one.
func (s *Store) shardMasters(ctx context.Context, c *redis.ClusterClient) ([]*redis.Client, error) {
	seen := map[string]bool{}
	var out []*redis.Client
	add := func(key string) error {
		n, err := c.MasterForKey(ctx, key)
		if err != nil {
			return err
		}
		if addr := n.Options().Addr; !seen[addr] {
			seen[addr] = true
			out = append(out, n)
		}
		return nil
	}
	if err := add(s.keys.Meta()); err != nil {
		return nil, err
	}
	for i := range s.shards {
		if err := add(s.keys.Tag(i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

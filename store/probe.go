package store

import (
	"context"

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

// Ping reports whether Redis answers: PING on every master of a Cluster,
// on the server otherwise, through the probe's own connections (see
// probePoolSize), so that it answers as fast while every request
// connection is taken. Replicas that serve browsing reads
// (ReadFromReplicas) are not asked. Errors: go-redis' (unreachable, a
// timeout, an error reply), ctx's end.
func (s *Store) Ping(ctx context.Context) error {
	if c, ok := s.probe.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.Ping(ctx).Err()
		})
	}
	return s.probe.Ping(ctx).Err()
}

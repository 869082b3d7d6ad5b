package conn

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/layout"
)

// Readiness asks Redis through connections of its own: a client built from
// the request client's options (address, TLS, credentials, timeouts) with
// a pool of probePoolSize connections (per node on a Cluster), closed by
// Close. Through the request pool, an instance whose requests hold every
// connection (thousands in flight, each waiting up to the pool timeout)
// failed its readiness check although Redis answered at once: every
// instance of an overloaded fleet left the load balancer together, a
// slowdown made an outage. Its own connections wait for nothing but Redis.
// The presence renewals (RenewStreams, RenewSessions) have a client of the
// same size of their own, for the same reason: behind a burst of streams
// opening they came after the leases' TTL, and the streams ended lapsed.
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

// Ping reports whether this instance reaches the Redis of the shards
// (keys names their tags and the meta key): PING on the server,
// or on a Cluster on every master that serves the store's shards at once
// (as the probe's layout, re-read every second, says), through the probe's own
// connections (see probePoolSize), so that it answers as fast while every
// request connection is taken. On a Cluster it answers nil as soon as the
// masters that answered hold at least half of the shards, without waiting
// for the others, and an error as soon as those that failed hold more
// than half (or ctx ends first). Readiness says whether this instance can
// serve, not whether all of Redis is healthy: a master that died or hangs
// fails the requests for its slots on every instance alike (until its
// replica is promoted), so failing every instance's readiness for one
// master would only take the whole fleet out of rotation, the shards that
// still serve with it; but an instance cut off from the masters of most
// shards (a partition on its side) would fail most of its requests while
// the others serve them, and leaves. With most masters gone the Cluster
// itself cannot fail them over and refuses commands (CLUSTERDOWN) on every
// instance anyway. Shards, not masters, are counted: a master that holds
// only the meta key (few shards) weighs nothing, one that holds most
// shards decides. Replicas that serve browsing reads (ReadFromReplicas)
// are not asked. Errors: go-redis' (unreachable, a timeout, an error
// reply; on a Cluster the failed masters', joined), ctx's end.
func (c *Clients) Ping(ctx context.Context, keys layout.Keys, shards int) error {
	if cc, ok := c.Probe.(*redis.ClusterClient); ok {
		return pingMasters(ctx, cc, keys, shards)
	}
	return c.Probe.Ping(ctx).Err()
}

// pingMasters pings the masters of c that serve the store's shards
// (shardMasters) concurrently and returns nil once those that answered
// hold at least half of the shards; the pings still running are
// cancelled. Its error, once those that failed hold more than half, joins
// the failed masters', or is the Cluster layout's (no node answered
// CLUSTER SLOTS yet).
func pingMasters(ctx context.Context, c *redis.ClusterClient, keys layout.Keys, shards int) error {
	masters, err := shardMasters(ctx, c, keys, shards)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		shards int
		err    error
	}
	answers := make(chan answer, len(masters))
	asked := 0
	for _, m := range masters {
		if m.shards == 0 {
			continue // the meta key's only
		}
		asked++
		go func() {
			err := m.client.Ping(ctx).Err()
			if err != nil {
				err = fmt.Errorf("%s (%d of %d shards): %w", m.client.Options().Addr, m.shards, shards, err)
			}
			answers <- answer{m.shards, err}
		}()
	}
	up, down := 0, 0 // shards
	var failed []error
	for range asked {
		var a answer
		select {
		case a = <-answers:
		case <-ctx.Done(): // a reply timeout longer than ctx's: not waited for
			return fmt.Errorf("the masters of %d of %d shards answered in time: %w", up, shards, errors.Join(append(failed, context.Cause(ctx))...))
		}
		if a.err == nil {
			if up += a.shards; 2*up >= shards {
				return nil
			}
			continue
		}
		failed = append(failed, a.err)
		if down += a.shards; 2*down > shards {
			break
		}
	}
	return fmt.Errorf("the masters of %d of %d shards unreachable: %w", down, shards, errors.Join(failed...))
}

// shardMaster is a master of a Cluster and how many of the store's shards
// it serves (0: only the meta key).
type shardMaster struct {
	client *redis.Client
	shards int
}

// shardMasters returns c's masters that serve the store's shards or its
// meta key, once each, as c's Cluster layout says. It reads the layout c
// holds (re-read in the background when older than its reload interval),
// never waiting for a re-read as ForEachMaster does: that asks CLUSTER
// SLOTS of a random node first, and a node that hangs held every
// readiness check that picked it until its timeout, long after the
// Cluster had failed it over. Only the first call, before c holds a
// layout, waits for one.
func shardMasters(ctx context.Context, c *redis.ClusterClient, keys layout.Keys, shards int) ([]shardMaster, error) {
	at := map[string]int{} // address: index in out
	var out []shardMaster
	add := func(key string, shards int) error {
		n, err := c.MasterForKey(ctx, key)
		if err != nil {
			return err
		}
		addr := n.Options().Addr
		i, ok := at[addr]
		if !ok {
			i = len(out)
			at[addr] = i
			out = append(out, shardMaster{client: n})
		}
		out[i].shards += shards
		return nil
	}
	if err := add(keys.Meta(), 0); err != nil {
		return nil, err
	}
	for i := range shards {
		if err := add(keys.Tag(i), 1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Masters returns c's masters that serve the shards keys names, or their
// meta key, once each, from the layout c holds (as Ping finds them: never
// waiting for a re-read but the first).
func Masters(ctx context.Context, c *redis.ClusterClient, keys layout.Keys, shards int) ([]*redis.Client, error) {
	ms, err := shardMasters(ctx, c, keys, shards)
	out := make([]*redis.Client, len(ms))
	for i, m := range ms {
		out[i] = m.client
	}
	return out, err
}

// Package conn opens the store's connections to Redis: one client path for
// a standalone Redis (REALSYNC_REDIS_URL), a Redis Cluster
// (REALSYNC_REDIS_CLUSTER_ADDRS, its slot layout read by SlotSource) and
// the embedded in-process store (miniredis, Embedded), with the timeouts,
// retries and per-call bound a partition or a failover needs, the
// connections readiness and presence renewals keep apart (probe.go), and
// the browsing reads' replica client (replicas.go).
package conn

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redisurl"
)

// Config says where Redis is.
type Config struct {
	// RedisURL is a redis:// or rediss:// URL of a standalone Redis.
	RedisURL string
	// ClusterAddrs are seed nodes of a Redis Cluster; they win over RedisURL.
	ClusterAddrs []string
	// Neither set: the embedded in-process store.

	// ReadFromReplicas routes a Cluster's browsing reads to replicas
	// (Clients.Reads); only with ClusterAddrs; "" is off.
	ReadFromReplicas ReplicaReads
	// ReadTimeout bounds the wait for each reply; 0: ReadTimeout. With
	// RedisURL, the URL's read_timeout wins; the embedded store's calls
	// wait EmbeddedReadTimeout.
	ReadTimeout time.Duration
}

// Clients are the store's connections to one Redis deployment. Close
// closes them all.
type Clients struct {
	// Client carries the store's calls (masters only).
	Client redis.UniversalClient
	// Reads carries a Cluster's browsing reads to replicas
	// (Config.ReadFromReplicas); nil: they go through Client.
	Reads redis.UniversalClient
	// Probe and Renewals have small pools of their own (probePoolSize):
	// readiness (Ping) and the presence renewals never wait behind the
	// requests' calls.
	Probe, Renewals redis.UniversalClient
	// Slots is a Cluster's slot layout for its clients; nil: not a Cluster.
	Slots *SlotSource
	// Embedded is the in-process store; nil: a Redis of its own.
	Embedded *Embedded
	// PubCmd publishes an event: SPUBLISH on a Cluster (a publish reaches
	// only the slot's node), PUBLISH otherwise.
	PubCmd string
	// Bound is each store call's own deadline (callBound); 0: none (the
	// embedded store, or a URL whose read_timeout waits forever).
	Bound time.Duration

	nearest *nearest // Reads' routing by latency; nil: none
}

// How long a Redis connection may take to open, a command to answer, and
// how often a failed command is tried again. go-redis' defaults (a dial of
// 5 s tried 5 times, for each of a command's 4 tries, and 5 s for a reply)
// suit a server that is slow, not one that is gone: behind a network
// partition, where packets vanish, a request would hang for minutes. With
// these a store call fails within about 3 s (a reply that never comes, then
// a dial that gets no answer) with rooms.ErrUnavailable (503), and the calls
// to a failed-over Cluster master fail at once until its replica is
// promoted. Redis answers a RealSync script in well under a millisecond.
// The wait for a free connection keeps its former total (go-redis: 6 s,
// tried 4 times), within a call's own deadline (callBound): behind a
// partition the pool empties within seconds anyway, as replies time out
// and dials fail, and batched calls queue in the batcher, not for the
// pool. In REALSYNC_REDIS_URL, the
// dial_timeout, read_timeout, max_retries and pool_timeout parameters win
// over these.
const (
	dialTimeout = time.Second
	ReadTimeout = 2 * time.Second
	poolTimeout = 12 * time.Second // tried twice
	// maxRetries: one more try of a command that is not a script run (a
	// script run is sent once, redisx.sentOnce, and once more only when it
	// did not run, redisx.NotSent); maxRedirects: a Cluster's tries after
	// the first, which also follow MOVED and ASK.
	maxRetries   = 1
	maxRedirects = 2
	// clusterTries: a Cluster's store call is bounded by this many
	// callBound (a node it cannot reach is tried again, then the script
	// run once more when it did not run)
	clusterTries = 2
)

// EmbeddedReadTimeout bounds the wait for each reply of the embedded
// store to the store's calls. The store is the process' own and runs one
// command at a time, so a call waits behind the others queued before it,
// and no partition can hang it: go-redis' default (5 s; a command other
// than a script tried twice) failed calls of a burst that would have been
// answered (50 concurrent joins under the race detector on a loaded
// machine). A request's own deadline still ends its calls
// (ContextTimeoutEnabled); readiness and the presence renewals keep their
// own clients at go-redis' default.
const EmbeddedReadTimeout = 30 * time.Second

// callBound is how long one store call (a command, a pipeline, a
// transaction) may take on a standalone Redis, whatever Redis does: a
// connection opened and a reply waited for, with the request's deadline
// when that comes first (redisx.Bound, on a client with
// ContextTimeoutEnabled). 3 s at the defaults, as a partition costs
// (a reply that never comes, then a dial that gets no answer); a Redis
// that accepts connections and answers nothing ends at it too. The
// wait for a free pooled connection is part of it. 0 (no bound) when
// REALSYNC_REDIS_URL's read_timeout says replies are not waited for
// within a time (-1, -2).
func callBound(dial, read time.Duration) time.Duration {
	if read < 0 {
		return 0
	}
	return max(dial, 0) + read
}

// Open builds the clients of cfg without reaching Redis (the embedded
// store is started in-process). Errors are configuration errors: a bad
// URL, replica reads without a Cluster.
func Open(cfg Config) (*Clients, error) {
	c := &Clients{}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = ReadTimeout
	}
	if _, err := ParseReplicaReads(string(cfg.ReadFromReplicas)); err != nil {
		return nil, fmt.Errorf("REALSYNC_REDIS_READ_FROM_REPLICAS: %w", err)
	}
	if len(cfg.ClusterAddrs) == 0 && cfg.ReadFromReplicas != "" && cfg.ReadFromReplicas != ReplicasOff {
		return nil, fmt.Errorf("REALSYNC_REDIS_READ_FROM_REPLICAS: replicas are read only on a Redis Cluster (REALSYNC_REDIS_CLUSTER_ADDRS)")
	}
	switch {
	case len(cfg.ClusterAddrs) > 0:
		// go-redis re-reads the Cluster layout every 60 s by default (while
		// commands flow; a dead master refuses connections, which triggers
		// no re-read); after a failover commands would go to the dead master
		// for that long. Every second: a shard serves again within about a
		// second of its replica's promotion.
		opt := redis.ClusterOptions{Addrs: cfg.ClusterAddrs,
			ClusterStateReloadInterval: time.Second, Protocol: 2,
			DialTimeout: dialTimeout, DialerRetries: 1, ReadTimeout: cfg.ReadTimeout, PoolTimeout: poolTimeout,
			MaxRedirects: maxRedirects}
		// the layout from a node that serves slots (slots.go): not from
		// a master removed from the Cluster, which knows none
		c.Slots = NewSlotSource(cfg.ClusterAddrs, opt.DialTimeout, opt.ReadTimeout)
		opt.ClusterSlots = c.Slots.Slots
		c.Probe = redis.NewClusterClient(probeClusterOptions(opt))
		c.Renewals = redis.NewClusterClient(probeClusterOptions(opt))
		opt.ContextTimeoutEnabled = true
		c.Bound = clusterTries * callBound(opt.DialTimeout, opt.ReadTimeout)
		c.Client = redis.NewClusterClient(&opt)
		if cfg.ReadFromReplicas != "" && cfg.ReadFromReplicas != ReplicasOff {
			// the same layout, READONLY sent by the reader itself
			// (readerClient)
			c.Reads, c.nearest = readerClient(opt, cfg.ReadFromReplicas, c.Slots.RTT)
		}
		c.PubCmd = "SPUBLISH" // sharded: a publish reaches only the slot's node
	case cfg.RedisURL != "":
		opt, err := redisurl.Parse(cfg.RedisURL) // its errors hide the password
		if err != nil {
			return nil, fmt.Errorf("REALSYNC_REDIS_URL: %w", err)
		}
		if opt.Protocol == 0 {
			opt.Protocol = 2
		}
		if opt.DialTimeout == 0 {
			opt.DialTimeout = dialTimeout
		}
		if opt.ReadTimeout == 0 {
			opt.ReadTimeout = cfg.ReadTimeout
		}
		if opt.MaxRetries == 0 {
			opt.MaxRetries = maxRetries
		}
		if opt.PoolTimeout == 0 {
			opt.PoolTimeout = poolTimeout
		}
		opt.DialerRetries = 1
		if opt.TLSConfig != nil && opt.Dialer == nil && opt.Protocol == 2 {
			opt.Dialer = tlsDialer(opt.TLSConfig, opt.DialTimeout)
		}
		c.Probe = redis.NewClient(probeOptions(*opt))
		c.Renewals = redis.NewClient(probeOptions(*opt))
		opt.ContextTimeoutEnabled = true
		c.Bound = callBound(opt.DialTimeout, opt.ReadTimeout)
		c.Client = redis.NewClient(opt)
		c.PubCmd = "PUBLISH" // one node: classic Pub/Sub, works on any Redis
	default:
		m, err := StartEmbedded()
		if err != nil {
			return nil, err
		}
		c.Embedded = m
		opt := redis.Options{Addr: m.Addr(), Password: m.Password, Protocol: 2}
		c.Probe = redis.NewClient(probeOptions(opt))
		c.Renewals = redis.NewClient(probeOptions(opt))
		opt.ContextTimeoutEnabled = true // a request's deadline ends its calls
		opt.ReadTimeout = EmbeddedReadTimeout
		c.Client = redis.NewClient(&opt)
		c.PubCmd = "PUBLISH" // miniredis has no sharded Pub/Sub
	}
	return c, nil
}

// Close closes every client and stops the embedded store.
func (c *Clients) Close() error {
	err := errors.Join(c.Client.Close(), c.Probe.Close(), c.Renewals.Close())
	if c.Reads != nil {
		err = errors.Join(err, c.Reads.Close())
	}
	if c.nearest != nil {
		c.nearest.Close()
	}
	if c.Slots != nil {
		err = errors.Join(err, c.Slots.Close())
	}
	if c.Embedded != nil {
		c.Embedded.Close()
	}
	return err
}

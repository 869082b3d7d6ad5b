package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
)

// Ping asks Redis through connections of its own: with every connection
// of the request pool held (blocking pops, as thousands of requests in
// flight hold them), a request waits for the pool and gives up, while
// Ping answers at once; once Redis is gone, Ping fails. Standalone and a
// Cluster of their own (every node is stopped), and the embedded store
// (which cannot be stopped from outside).
func TestPingHasConnectionsOfItsOwn(t *testing.T) {
	srv, c := ownRedis(t)
	type backend struct {
		b    redistest.Backend
		stop func() // makes Redis unreachable; nil: cannot
	}
	backends := []backend{
		{redistest.Backend{Name: "standalone", URL: "redis://" + srv.Addr}, srv.Kill},
		{redistest.Backend{Name: "embedded"}, nil},
	}
	if c != nil {
		backends = append(backends, backend{redistest.Backend{Name: "cluster", ClusterAddrs: c.Addrs()}, func() {
			for _, n := range c.Nodes {
				n.Kill()
			}
		}})
	}
	for _, be := range backends {
		t.Run(be.b.Name, func(t *testing.T) {
			s := openStore(t, be.b)
			holdRequestPool(t, s)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := s.Ping(ctx); err != nil {
				t.Fatalf("Ping with the request pool taken: %v, want nil (Redis answers)", err)
			}
			if be.stop == nil {
				return
			}
			be.stop()
			ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := s.Ping(ctx); err == nil {
				t.Fatal("Ping with Redis stopped: nil, want an error")
			}
		})
	}
}

// On a Cluster, Ping answers nil while the masters of at least half of
// the shards answer: a master killed (before its replica is promoted) or
// hung (SIGSTOP: connections accepted, nothing answered) fails the
// requests for its slots on every instance alike, and readiness must not
// take every instance out of rotation for it, nor wait for the hung node.
// Once the masters of most shards do not answer (as for an instance cut
// off from them by a partition on its side), Ping fails. A prefix is
// picked whose 8 shards spread so that the master of the fewest paused
// leaves most shards up, and the one of the most killed besides leaves
// less than half.
func TestPingAnswersWhileAMasterIsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Cluster of its own")
	}
	c := ownReplicatedCluster(t)
	const shards = 8
	var prefix string
	var fewest, most *redistest.Server
	for i := 0; ; i++ {
		prefix = fmt.Sprintf("%s%d", redistest.Prefix(t), i)
		held := shardsHeld(t, c, prefix, shards)
		if len(held) != 3 {
			continue
		}
		fewest, most = nil, nil
		for m := range held {
			if fewest == nil || held[m] < held[fewest] {
				fewest = m
			}
			if most == nil || held[m] > held[most] {
				most = m
			}
		}
		if left := shards - held[fewest] - held[most]; fewest != most && 2*left < shards {
			break
		}
	}
	ping := clusterPing(t, c, prefix, shards)
	fewest.Pause()
	defer fewest.Resume()
	// again and again: a check that asked a random node for the slot
	// layout first waited for the hung one whenever it picked it
	for i := range 10 {
		if err := ping(); err != nil {
			t.Fatalf("Ping %d, one master hung: %v, want nil (the others hold most shards)", i, err)
		}
	}
	// at once, before a replica is promoted: the layout still names them
	most.Kill()
	if err := ping(); err == nil {
		t.Fatal("Ping, one master killed and one hung: nil, want an error (the one left holds less than half of the shards)")
	}
	for _, n := range c.Nodes {
		n.Kill()
	}
	if err := ping(); err == nil {
		t.Fatal("Ping, every node killed: nil, want an error")
	}
}

// clusterPing opens a store of prefix with shards shards on c and
// returns its Ping, bounded by the readiness check's 2 s, having checked
// that it answers nil with every master up.
func clusterPing(t *testing.T, c *redistest.Cluster, prefix string, shards int) func() error {
	t.Helper()
	s := openStoreWith(t, redistest.Backend{Name: "cluster", ClusterAddrs: c.Addrs()}, func(cfg *store.Config) {
		cfg.Prefix, cfg.Shards = prefix, shards
	})
	ping := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return s.Ping(ctx)
	}
	if err := ping(); err != nil {
		t.Fatalf("Ping, every master up: %v", err)
	}
	return ping
}

// shardsHeld counts the shards of a store of prefix each master of c
// serves.
func shardsHeld(tb testing.TB, c *redistest.Cluster, prefix string, shards int) map[*redistest.Server]int {
	tb.Helper()
	ctx := context.Background()
	held := map[*redistest.Server]int{}
	for i := range shards {
		m, _, err := c.MasterOf(ctx, store.ShardTags(prefix, shards, store.SchemaVersion)[i])
		if err != nil {
			tb.Fatal(err)
		}
		held[m]++
	}
	return held
}

// Ping weighs the masters by the shards they serve: with one shard, its
// master decides; a master that serves only the meta key (another slot)
// does not: killed, it fails no request (the janitor's layout check waits
// for it), and readiness must not fail every instance for it, while the
// shard's master killed fails them all. A prefix is picked whose meta key
// and shard are on different masters.
func TestPingWeighsMastersByShards(t *testing.T) {
	c := ownCluster(t)
	ctx := context.Background()
	master := func(key string) *redistest.Server {
		m, _, err := c.MasterOf(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	var prefix string
	var metaMaster, shardMaster *redistest.Server
	for i := 0; metaMaster == shardMaster; i++ {
		prefix = fmt.Sprintf("%s%d", redistest.Prefix(t), i)
		metaMaster, shardMaster = master(prefix+":meta"), master(store.ShardTags(prefix, 1, store.SchemaVersion)[0])
	}
	ping := clusterPing(t, c, prefix, 1)
	metaMaster.Kill()
	if err := ping(); err != nil {
		t.Fatalf("Ping, the master of the meta key only killed: %v, want nil (the only shard's master answers)", err)
	}
	shardMaster.Kill()
	if err := ping(); err == nil {
		t.Fatal("Ping, the only shard's master killed: nil, want an error")
	}
}

// holdRequestPool takes every connection of s's request pool (each
// master's on a Cluster) with a blocking pop, until a call through the
// pool waits in vain (300 ms); the pops end when tb ends.
func holdRequestPool(tb testing.TB, s *store.Store) {
	tb.Helper()
	ctx := context.Background()
	c := s.Client()
	keys, size := []string{s.Prefix() + ":hold"}, 0
	var other redis.UniversalClient // pushes to end the pops
	switch c := c.(type) {
	case *redis.ClusterClient:
		size, other = c.Options().PoolSize, redis.NewClusterClient(c.Options())
		masters := map[string]string{} // address: a key it serves
		var mu sync.Mutex
		c.ForEachMaster(ctx, func(_ context.Context, n *redis.Client) error {
			mu.Lock()
			masters[n.Options().Addr] = ""
			mu.Unlock()
			return nil
		})
		keys = nil
		for i := 0; len(keys) < len(masters); i++ {
			k := fmt.Sprintf("%s:{hold%d}", s.Prefix(), i)
			n, err := c.MasterForKey(ctx, k)
			if err != nil {
				tb.Fatal(err)
			}
			if masters[n.Options().Addr] == "" {
				masters[n.Options().Addr] = k
				keys = append(keys, k)
			}
		}
	case *redis.Client:
		size, other = c.Options().PoolSize, redis.NewClient(c.Options())
	default:
		tb.Fatalf("client %T", c)
	}
	var wg sync.WaitGroup
	for _, k := range keys {
		for range size {
			wg.Go(func() { c.BLPop(ctx, 30*time.Second, k) })
		}
	}
	tb.Cleanup(func() {
		for _, k := range keys {
			other.RPush(ctx, k, make([]any, size)...)
		}
		wg.Wait()
		other.Del(ctx, keys...)
		other.Close()
	})
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range keys {
		for {
			wait, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			err := c.Exists(wait, k).Err()
			cancel()
			if err != nil {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("the request pool of %s's node still serves after 10 s", k)
			}
		}
	}
}

// Ping on a Cluster ends with its ctx, however long the replies may take
// (Config.ReadTimeout, here 20 s): a master that hangs is
// not waited for past the readiness check's 2 s.
func TestPingEndsWithItsContext(t *testing.T) {
	c := ownCluster(t)
	s := openStoreWith(t, redistest.Backend{Name: "cluster", ClusterAddrs: c.Addrs()}, func(cfg *store.Config) {
		cfg.ReadTimeout = 20 * time.Second
	})
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping, every master up: %v", err)
	}
	for _, n := range c.Nodes {
		n.Pause()
		defer n.Resume()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.Ping(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ping, every master hung: %v, want its context's end", err)
	}
}

package store_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
)

// A standalone client (REALSYNC_REDIS_URL) pointed at a node of a Redis
// Cluster is a configuration error, refused at start: every call to a
// slot of another node would answer MOVED, each one a 503, while /readyz
// stayed 200 (a reviewer's find). A one-node Cluster, which serves every
// slot, is refused too: a standalone client's batched transactions mix
// shards, which a Cluster node refuses (CROSSSLOT; a reviewer found every
// batched join failing through it). The Cluster client, of the 3-master
// Cluster and of the one-node one, and a standalone server pass.
func TestStandaloneURLOfAClusterNodeIsRefused(t *testing.T) {
	ctx := context.Background()
	one, err := redistest.StartCluster(1)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Stop()
	for _, node := range []string{redistest.ClusterAddrs(t)[0], one.Addrs()[0]} {
		cfg := store.Config{RedisURL: "redis://" + node, Prefix: redistest.Prefix(t), Shards: 8}
		if _, err := store.Open(ctx, cfg); !errors.Is(err, store.ErrLayout) || !strings.Contains(err.Error(), "REALSYNC_REDIS_CLUSTER_ADDRS") {
			t.Fatalf("open of a Cluster node %s as standalone: %v, want ErrLayout naming REALSYNC_REDIS_CLUSTER_ADDRS", node, err)
		}
	}
	// users who may not ask INFO (no @dangerous), nor CLUSTER INFO (a
	// least-privilege user: the categories the store uses) are told too
	// (reviewers' finds: INFO, then CLUSTER INFO refused passed the check);
	// on a standalone server the same users pass
	rules := map[string][]any{
		"nodanger": {"+@all", "-@dangerous"},
		"least": {"-@all", "+@read", "+@write", "+@scripting", "+@connection", "+@pubsub", "+@transaction", "+@fast",
			"+@keyspace", "+@hash", "+@stream", "+@sortedset", "+@set", "+@string", "+@list"},
	}
	limited := func(addr, name string) string {
		user := "rs-" + name + "-" + redistest.Prefix(t)
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		args := append(append([]any{"ACL", "SETUSER", user, "on", ">pw"}, rules[name]...), "~*", "&*")
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c := redis.NewClient(&redis.Options{Addr: addr})
			c.Do(context.Background(), "ACL", "DELUSER", user)
			c.Close()
		})
		return "redis://" + user + ":pw@" + addr
	}
	su, err := url.Parse(redistest.StandaloneURL(t))
	if err != nil {
		t.Fatal(err)
	}
	standalone := su.Host
	opens := []store.Config{{ClusterAddrs: redistest.ClusterAddrs(t)}, {RedisURL: redistest.StandaloneURL(t)}, {ClusterAddrs: one.Addrs()}}
	for name := range rules {
		for _, node := range []string{redistest.ClusterAddrs(t)[0], one.Addrs()[0]} {
			if _, err := store.Open(ctx, store.Config{RedisURL: limited(node, name), Prefix: redistest.Prefix(t), Shards: 8}); !errors.Is(err, store.ErrLayout) {
				t.Fatalf("a Cluster node %s as standalone, user %s: %v, want ErrLayout", node, name, err)
			}
		}
		opens = append(opens, store.Config{RedisURL: limited(standalone, name)})
	}
	for _, c := range opens {
		c.Prefix, c.Shards = redistest.Prefix(t), 8
		s, err := store.Open(ctx, c)
		if err != nil {
			t.Fatalf("open %+v: %v", c, err)
		}
		s.Close()
	}
}

package store_test

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
)

// MasterShards counts each Cluster master's shards as go-redis routes the
// shards' keys, every master included; nil without a Cluster.
func TestMasterShards(t *testing.T) {
	ctx := context.Background()
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix, c.Shards = prefix, 16 })
		got, err := s.MasterShards(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cc, ok := s.Client().(*redis.ClusterClient)
		if !ok {
			if got != nil {
				t.Fatalf("MasterShards without a Cluster: %v, want nil", got)
			}
			return
		}
		// by port: go-redis names the test Cluster's nodes ":<port>"
		// (they announce no host), CLUSTER SLOTS "127.0.0.1:<port>"
		got = byPort(got)
		want := map[string]int{}
		var mu sync.Mutex // ForEachMaster calls at once
		if err := cc.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			want[port(m.Options().Addr)] = 0
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for shard := range 16 {
			m, err := cc.MasterForKey(ctx, s.Base().Tag(shard)+":x")
			if err != nil {
				t.Fatal(err)
			}
			want[port(m.Options().Addr)]++
		}
		if !maps.Equal(got, want) {
			t.Fatalf("MasterShards = %v, want %v (go-redis' routing of the shards' keys)", got, want)
		}
		// a new deployment's tags are spread: the test Cluster's
		// masters own equal slot ranges, so they hold 16/m shards,
		// rounded either way (plain tags: 8/4/4 on 3)
		lo, hi := 16, 0
		for _, n := range got {
			lo, hi = min(lo, n), max(hi, n)
		}
		if hi-lo > 1 {
			t.Errorf("a new deployment's shards spread %v over the masters, want even counts (±1)", got)
		}
	})
}

// port is the port of addr ("host:port", ":port").
func port(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

func byPort(m map[string]int) map[string]int {
	out := map[string]int{}
	for a, n := range m {
		out[port(a)] += n
	}
	return out
}

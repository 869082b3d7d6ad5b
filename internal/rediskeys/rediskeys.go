// Package rediskeys lists keys by pattern on standalone Redis and on every
// master of a Cluster, for the tools that must see every key: migrations,
// the invariant checker, tests that count keys.
package rediskeys

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Scan returns every key matching pattern (SCAN MATCH, 1000 per call), on
// each master of a Cluster. It costs a walk of the whole keyspace: for
// tools and tests, never for a request.
func Scan(ctx context.Context, c redis.UniversalClient, pattern string) ([]string, error) {
	var mu sync.Mutex
	var out []string
	one := func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			out = append(out, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return one(ctx, n) })
		return out, err
	}
	return out, one(ctx, c)
}

// GlobEscape quotes the glob characters of s (* ? [ ] \) for SCAN MATCH,
// so a pattern built from a prefix or an id (user ids may hold any of
// them) matches that text literally.
func GlobEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

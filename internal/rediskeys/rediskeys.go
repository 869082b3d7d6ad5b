// Package rediskeys lists keys by pattern on standalone Redis and on every
// master of a Cluster, for the tools that must see every key: migrations,
// the invariant checker, tests that count keys, and the store's look for
// an older layout's data where its layout record is missing.
package rediskeys

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Scan returns every key matching pattern (SCAN MATCH, 1000 per call), on
// each master of a Cluster. It costs a walk of the whole keyspace: for
// tools and tests, never for a request.
func Scan(ctx context.Context, c redis.UniversalClient, pattern string) ([]string, error) {
	var mu sync.Mutex
	var out []string
	err := each(ctx, c, pattern, func(k string) bool {
		mu.Lock()
		out = append(out, k)
		mu.Unlock()
		return true
	})
	return out, err
}

// Find reports whether a key matching pattern passes ok, walking as Scan
// does and stopping at the first (on every master of a Cluster). ok may
// run on several masters' walks at once.
func Find(ctx context.Context, c redis.UniversalClient, pattern string, ok func(key string) bool) (bool, error) {
	var found atomic.Bool
	err := each(ctx, c, pattern, func(k string) bool {
		if ok(k) {
			found.Store(true)
		}
		return !found.Load()
	})
	if found.Load() {
		return true, nil
	}
	return false, err
}

// each calls f with every key matching pattern, on each master of a
// Cluster at once, until f returns false (then every walk stops, with no
// error).
func each(ctx context.Context, c redis.UniversalClient, pattern string, f func(string) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stopped atomic.Bool
	one := func(ctx context.Context, n redis.UniversalClient) error {
		it := n.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			if !f(it.Val()) {
				stopped.Store(true)
				cancel()
				return nil
			}
		}
		if stopped.Load() {
			return nil
		}
		return it.Err()
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return one(ctx, n) })
	}
	return one(ctx, c)
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

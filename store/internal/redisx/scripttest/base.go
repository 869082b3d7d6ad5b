package scripttest

import (
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store/internal/conn"
	"github.com/realsync/realsync/store/internal/redisx"
)

// Base is a redisx.Base of shards shards on b, for a store package's
// tests against Redis: a deployment of its own (redistest.Prefix), plain
// tags, no script library; its connection closed when tb ends.
func Base(tb testing.TB, b redistest.Backend, shards int) *redisx.Base {
	tb.Helper()
	c, err := conn.Open(conn.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &redisx.Base{Client: c.Client, Runner: redisx.NewRunner(c.Client, nil), Prefix: redistest.Prefix(tb), Shards: shards, PubCmd: c.PubCmd}
}

package scripttest

import (
	"testing"

	"github.com/realsync/realsync/store/internal/conn"
	"github.com/realsync/realsync/store/internal/redisx"
)

// Base is a redisx.Base of shards shards on the Redis at url (standalone)
// or cluster (a Cluster's addresses), keys under prefix (a deployment of
// its own: redistest.Prefix), for a store package's tests against Redis:
// plain tags, no script library; its connection closed when tb ends.
// (It takes redistest.Backend's fields, not the Backend: redistest
// imports net/http, which no package of store/ may.)
func Base(tb testing.TB, url string, cluster []string, prefix string, shards int) *redisx.Base {
	tb.Helper()
	c, err := conn.Open(conn.Config{RedisURL: url, ClusterAddrs: cluster})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &redisx.Base{Client: c.Client, Runner: redisx.NewRunner(c.Client, nil), Prefix: prefix, Shards: shards, PubCmd: c.PubCmd}
}

package redisx

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/layout"
)

// Base is what every store package shares: one client, one runner of
// scripts, and the deployment's key layout (prefix and shard count). The
// root store (package store) makes it; a concept's package under store/
// (webhooks, player sessions, tickets) is built on it and builds its own
// keys with Tag, so each of its scripts touches one hash slot.
type Base struct {
	Client redis.UniversalClient
	Runner *Runner
	Prefix string
	Shards int
	// Tags are the shards' hash tags (the root store's, whose Init sets
	// their scheme); nil: the plain tags of Prefix, for tests.
	Tags *layout.Tags
	// PubCmd publishes: SPUBLISH on a Cluster (a publish reaches only the
	// slot's node), PUBLISH elsewhere.
	PubCmd string
	// Bound is Client's bound on each call (0: none; see Bound.Ends).
	Bound Bound
	// Replicas is how many replicas a Cluster's layout lists for the
	// master of a slot (RunReplicated); nil: none known.
	Replicas func(slot int) int
	// ConnHooks are added to the connection RunReplicated pins to a
	// Cluster master, which the Cluster client's own hooks do not see
	// (the metrics').
	ConnHooks []redis.Hook
}

// Tag is shard's hash tag (layout.Tags): every key that starts with it
// lives in one slot.
func (b *Base) Tag(shard int) string {
	if b.Tags == nil {
		return layout.PlainTag(b.Prefix, shard)
	}
	return b.Tags.Tag(shard)
}

// UserShard is the shard of the slot that holds user uid's own keys.
func (b *Base) UserShard(uid string) int { return UserShard(uid, b.Shards) }

// UserShard is the shard, of shards, of the slot that holds user uid's
// own keys.
func UserShard(uid string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(uid))
	return int(h.Sum32() % uint32(shards))
}

// RunOK runs call, a script whose reply is {"OK", ...}, and returns what
// follows the "OK"; any other reply is an error naming the script.
func (b *Base) RunOK(ctx context.Context, call Call) ([]any, error) {
	res, err := b.Runner.Run(ctx, call).Result()
	if err != nil {
		return nil, Wrap(err)
	}
	arr, _ := res.([]any)
	if len(arr) < 2 || arr[0] != "OK" {
		return nil, fmt.Errorf("%s: unexpected reply %v", call.Script().Name, res)
	}
	return arr[1:], nil
}

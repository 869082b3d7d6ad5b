package store

import (
	"context"
	"errors"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/instances"
	"github.com/realsync/realsync/store/internal/redisx"
)

// The instance registry (package fleet) is store/instances; what a
// deregistered or lapsed instance held here, the shards' janitor leases,
// is released by releaseJanitorLeases, which the registry calls.

// Fleet is the instance registry of the store's deployment.
func (s *Store) Fleet() *instances.Registry { return s.fleet }

// releaseJanitorLeases deletes every shard's janitor lease held by one of
// ids: one pipelined read of every lease, then the compare-and-delete
// script only on the shards one of ids held when read (it checks again).
func (s *Store) releaseJanitorLeases(ctx context.Context, ids []string) error {
	holders := make([]*redis.StringCmd, s.shards)
	if _, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for shard := range s.shards {
			holders[shard] = p.Get(ctx, s.keys.Janitor(shard))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return redisx.Wrap(err)
	}
	var errs []error
	for shard, h := range holders {
		if !slices.Contains(ids, h.Val()) {
			continue
		}
		if _, err := s.result(ctx, leaseReleaseCall{lease: s.keys.Janitor(shard), ids: ids}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

package store

import (
	"context"
	"slices"

	"github.com/realsync/realsync/store/internal/redisx"
)

// renewByUser renews leases held in their users' slots: one script (call
// builds it) per user shard and renewBatch items, all sent in one pipeline
// (users' keys lie in other slots than rooms'; renewing twice is harmless,
// so the pipeline may be retried). Each script answers the 1-based
// positions in its batch of the items whose lease was lost; renewByUser
// returns those items, and the first error when a script failed (the other
// scripts' answers still count).
func renewByUser[T any](ctx context.Context, s *Store, items []T, user func(T) string, call func(shard int, batch []T) redisx.Call) ([]T, error) {
	byShard := map[int][]T{}
	for _, it := range items {
		sh := redisx.UserShard(user(it), s.shards)
		byShard[sh] = append(byShard[sh], it)
	}
	var calls []redisx.Call
	var batches [][]T
	for sh, all := range byShard {
		for batch := range slices.Chunk(all, renewBatch) {
			calls, batches = append(calls, call(sh, batch)), append(batches, batch)
		}
	}
	cmds, _ := s.runner.RunAll(ctx, calls) // each command holds its error
	var lost []T
	var first error
	for i, cmd := range cmds {
		res, err := cmd.Result()
		if err != nil {
			if first == nil {
				first = redisx.Wrap(err)
			}
			continue
		}
		for _, j := range res.([]any) {
			lost = append(lost, batches[i][toInt64(j)-1])
		}
	}
	return lost, first
}

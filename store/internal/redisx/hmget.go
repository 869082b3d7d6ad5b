package redisx

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// HMGet queues on p the HMGET of fields of key, read as strings ("" for
// a field not set), and returns its command (its error is the command's:
// a pipeline only queues it). Not p.HMGet: a StringSliceCmd is a typed
// read, which the batcher takes into its read batches (store/internal/batch),
// where a plain HGET went alone, a round trip of its own; and it holds
// each value once, where HMGet's SliceCmd boxes each again. fields may be
// built once and shared (HMGet does not keep or change the slice).
func HMGet(ctx context.Context, p redis.Pipeliner, key string, fields ...any) *redis.StringSliceCmd {
	args := make([]any, 2, 2+len(fields))
	args[0], args[1] = "hmget", key
	cmd := redis.NewStringSliceCmd(ctx, append(args, fields...)...)
	_ = p.Process(ctx, cmd)
	return cmd
}

// Read runs the reads read queues on p as a pipeline of their own, which
// the batcher's read lane (store/internal/batch) sends with the other
// callers' reads bound for the same node, where a read sent on its own
// (Client.ZScan, Client.HKeys) is a round trip of its own. Each command
// keeps its own reply and error; the one returned is the first, wrapped.
func Read(ctx context.Context, c redis.UniversalClient, read func(p redis.Pipeliner)) error {
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		read(p)
		return nil
	})
	return Wrap(err)
}

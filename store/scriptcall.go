package store

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/redisx"
)

// Every script of store/lua runs through its descriptor (scriptcalls.go, a
// redisx.Call) by the store's runner (redisx.Runner: s.runner.Run, Queue,
// RunAll); a room script's status reply is decoded here.

// result runs call and decodes its status reply (reply).
func (s *Store) result(ctx context.Context, call redisx.Call) ([]any, error) {
	return reply(s.runner.Run(ctx, call))
}

// reply decodes the status reply of a script's cmd, run or queued: what
// follows "OK", or the error its status names (replyStatus), or Redis'
// own (wrap).
func reply(cmd *redis.Cmd) ([]any, error) {
	res, err := cmd.Result()
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	return replyStatus(res)
}

package redistest

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// BeforePipeline is a go-redis hook (Client.AddHook) that runs F once,
// armed, before the next pipeline holding a command named Name is sent;
// an error from F fails that pipeline. Tests use it to change Redis
// between two steps of one store call (a page of a replay read after its
// script: the log trimmed, rewritten or unreachable meanwhile).
type BeforePipeline struct {
	Name  string
	F     func() error
	armed atomic.Bool
}

// Arm makes the hook run F before the next matching pipeline.
func (h *BeforePipeline) Arm() { h.armed.Store(true) }

// DialHook implements redis.Hook.
func (h *BeforePipeline) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (h *BeforePipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook implements redis.Hook.
func (h *BeforePipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == h.Name && h.armed.CompareAndSwap(true, false) {
				if err := h.F(); err != nil {
					return err
				}
			}
		}
		return next(ctx, cmds)
	}
}

// Around is a go-redis hook (Client.AddHook) that runs around every
// sending of commands, one alone or a pipeline's (a transaction's, a
// batch's): send sends cmds and returns their error; what Around returns
// is the caller's. Tests use it to watch calls, or to lose a reply after
// Redis ran the command (set each command's error, return it).
type Around func(ctx context.Context, cmds []redis.Cmder, send func() error) error

// DialHook implements redis.Hook.
func (Around) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (f Around) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return f(ctx, []redis.Cmder{cmd}, func() error { return next(ctx, cmd) })
	}
}

// ProcessPipelineHook implements redis.Hook.
func (f Around) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return f(ctx, cmds, func() error { return next(ctx, cmds) })
	}
}

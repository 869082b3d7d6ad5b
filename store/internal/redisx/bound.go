package redisx

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bound is a go-redis hook that gives each call (a command, a pipeline, a
// transaction) a deadline of its own: the caller's, or d after the call
// begins when that comes first. On a client with ContextTimeoutEnabled,
// go-redis then ends the call at that deadline wherever it waits: for a
// free pooled connection, a dial, a new connection's HELLO, a reply, a
// try's backoff; a try past it is not made. Without it a Redis that
// accepts connections and answers nothing (a hung or paused process) held
// a call for one reply timeout per new connection's HELLO and per try
// (a pipeline 8 s, a Cluster's 12 s, measured), and a request's store
// call sent just before the request's deadline waited past it.
//
// A call cut so is a transport failure as a lost reply is (go-redis'
// "i/o timeout", or the context's end before anything was sent): a
// script run that may have run is not sent again (sentOnce), and its
// caller gets rooms.ErrUnavailable (Wrap). Install it as the client's
// first hook, so that the calls another hook makes (a batch's pipeline)
// are bounded too.
type Bound time.Duration

var _ redis.Hook = Bound(0)

// DialHook implements redis.Hook: the dial is bounded by the call's
// context (go-redis' dial timeout, within it).
func (Bound) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (b Bound) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if b.within(ctx) {
			return next(ctx, cmd)
		}
		ctx, cancel := context.WithTimeout(ctx, time.Duration(b))
		defer cancel()
		return next(ctx, cmd)
	}
}

// within reports whether ctx already ends within b: its deadline is the
// call's, and a context of its own (a timer, a goroutine's worth of
// allocations) would add nothing. So a batch's pipeline, whose context
// ends at its callers' latest deadline, each bounded here, gets none.
func (b Bound) within(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && time.Until(d) <= time.Duration(b)
}

// ProcessPipelineHook implements redis.Hook, for pipelines and
// transactions.
func (b Bound) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if b.within(ctx) {
			return next(ctx, cmds)
		}
		ctx, cancel := context.WithTimeout(ctx, time.Duration(b))
		defer cancel()
		return next(ctx, cmds)
	}
}

package redisx

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redial is a go-redis hook that sends a call whose dial failed (nothing
// was sent: a command, or a pipeline none of whose commands left) once
// more, after RedialWait, unless the call's context ends first. It is
// there for go-redis' dial circuit breaker: once a pool has failed as many
// dials as it has connections (PoolSize; a Redis restart of a few seconds
// does it, and the count only starts again from zero when the breaker
// closes), every dial fails at once with the last dial error while one
// probe dial a second runs, and only that probe's success closes it. After
// a restart every pooled connection is dead, so without Redial every call
// failed for up to a second after Redis was back (503), while readiness,
// with connections of its own, said ready. Install it as the client's last
// hook, so that it sees what is really sent: a batch's pipeline once
// (store/internal/batch), not each of its callers. During an outage a
// call that cannot dial fails RedialWait later than it did (within its
// bound: Bound).
type Redial struct{}

// RedialWait is a little more than go-redis' probe interval (a second): a
// call sent again after it finds a pool whose probe has succeeded since,
// if Redis was back by then.
const RedialWait = 1100 * time.Millisecond

// DialHook implements redis.Hook.
func (Redial) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (Redial) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if Redialed(err) && answers(ctx, err) && wait(ctx, RedialWait) {
			cmd.SetErr(nil)
			err = next(ctx, cmd)
		}
		return err
	}
}

// ProcessPipelineHook implements redis.Hook, for pipelines and
// transactions: sent again only when no command of it left (on a Cluster,
// a pipeline goes to several nodes, and a dial failing to one leaves the
// others' commands sent).
func (Redial) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if !allRedialed(cmds) || !answers(ctx, cmds[0].Err()) || !wait(ctx, RedialWait) {
			return err
		}
		for _, c := range cmds {
			c.SetErr(nil)
		}
		return next(ctx, cmds)
	}
}

// answers reports whether the node of dialErr, a failed dial (Redialed),
// accepts a connection now, within RedialWait and ctx: a TCP connection,
// closed at once (go-redis' breaker gives the last dial error, whose
// address is the node's, without dialling). True when dialErr names no
// address: sent again after the wait, as before.
func answers(ctx context.Context, dialErr error) bool {
	op, ok := errors.AsType[*net.OpError](dialErr)
	if !ok || op.Addr == nil {
		return true
	}
	d := net.Dialer{Timeout: RedialWait}
	c, err := d.DialContext(ctx, op.Addr.Network(), op.Addr.String())
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Redialed reports whether err is a failed dial (go-redis' breaker
// answers with the last one): a call that failed so was sent again by
// Redial already (a command; a pipeline when allRedialed), or was not
// because its node refuses connections, and sending it once more at once
// (Again) would find the same.
func Redialed(err error) bool {
	op, ok := errors.AsType[*net.OpError](err)
	return ok && op.Op == "dial"
}

// allRedialed reports whether every command of a pipeline failed its dial
// (none was sent).
func allRedialed[C redis.Cmder](cmds []C) bool {
	for _, c := range cmds {
		if !Redialed(c.Err()) {
			return false
		}
	}
	return len(cmds) > 0
}

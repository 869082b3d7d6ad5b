package redisx

import (
	"context"
	"errors"
	"net"
	"sync"
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
//
// Use one per client (&Redial{}): it shares its probes of a node among
// the calls that failed to dial it (answers).
type Redial struct {
	mu     sync.Mutex
	probes map[string]*probe // by the address of the node probed
}

// probe is one TCP dial of a node, its answer shared by the calls that
// ask within probeFresh of it.
type probe struct {
	done chan struct{} // closed once ok and at are set
	ok   bool
	at   time.Time
}

// probeFresh is how long a probe's answer serves the calls that failed to
// dial its node: in the second after a Redis came back, with go-redis'
// breaker still open, every failing call dialled it (a reviewer's find:
// thousands of connections against a Redis just restarted).
const probeFresh = 100 * time.Millisecond

// RedialWait is a little more than go-redis' probe interval (a second): a
// call sent again after it finds a pool whose probe has succeeded since,
// if Redis was back by then.
const RedialWait = 1100 * time.Millisecond

// DialHook implements redis.Hook.
func (*Redial) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (r *Redial) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if Redialed(err) && r.answers(ctx, err) && wait(ctx, RedialWait) {
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
func (r *Redial) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if !allRedialed(cmds) || !r.answers(ctx, cmds[0].Err()) || !wait(ctx, RedialWait) {
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
// address is the node's, without dialling), shared by the calls that
// ask within probeFresh. True when dialErr names no address: sent again
// after the wait, as before. The address is the one the failed dial
// resolved: a node's of a Cluster (CLUSTER SLOTS gives addresses), a
// standalone Redis' host name's at that dial; a host name that moved to
// another address meanwhile reads as down, and its calls fail at once
// until go-redis' breaker closes (within a second), as before Redial.
func (r *Redial) answers(ctx context.Context, dialErr error) bool {
	op, ok := errors.AsType[*net.OpError](dialErr)
	if !ok || op.Addr == nil {
		return true
	}
	addr := op.Addr.String()
	r.mu.Lock()
	p := r.probes[addr]
	if p == nil || (p.answered() && time.Since(p.at) > probeFresh) {
		p = &probe{done: make(chan struct{})}
		if r.probes == nil {
			r.probes = map[string]*probe{}
		}
		r.probes[addr] = p
		go p.run(op.Addr.Network(), addr)
	}
	r.mu.Unlock()
	select {
	case <-p.done:
		return p.ok
	case <-ctx.Done():
		return false
	}
}

// answered reports whether p's dial is over.
func (p *probe) answered() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// run dials addr once, within RedialWait, and closes the connection.
func (p *probe) run(network, addr string) {
	c, err := net.DialTimeout(network, addr, RedialWait)
	if err == nil {
		c.Close()
	}
	p.ok, p.at = err == nil, time.Now()
	close(p.done)
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

package redisx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/layout"
)

// ShortOfReplicasError is a call run by RunReplicated whose writes fewer
// replicas than asked acknowledged within its wait: they stand on the
// master (at Addr), which loses them if it fails before its replicas
// have them and a replica is promoted.
type ShortOfReplicasError struct {
	Addr        string
	Want, Acked int
	// Refused is the master's error reply to WAIT (a managed Redis that
	// hides it, an ACL without it): nothing can be waited for there.
	Refused error
}

func (e *ShortOfReplicasError) Error() string {
	if e.Refused != nil {
		return fmt.Sprintf("WAIT refused, the write's replicas unknown: %v", e.Refused)
	}
	return fmt.Sprintf("%d of the %d replicas asked for acknowledged the write in time", e.Acked, e.Want)
}

// RunReplicated runs call on a connection of its own to the Cluster
// master of its first key's slot, as EVAL of its code, then waits on that
// connection (WAIT) until want of the master's replicas acknowledged
// every write the master took up to the call's, for timeout at most; no
// more than the replicas the Cluster's layout lists for the slot
// (Base.Replicas: a replica marked failed is not waited for, one whose
// link to the master is down is). So a write that must not be lost in a
// failover (Redis replicates asynchronously) is known to be on a replica
// before anything outside Redis acts on it. The call must write something
// (WAIT waits for the connection's last write, whichever call made it),
// and must be safe to run again: see below.
// It returns the call's reply and whether a WAIT was answered in full
// (acked), or a *ShortOfReplicasError with the reply when fewer
// acknowledged in time, or the master refused WAIT. want 0, a slot the layout lists no replica for,
// or a client other than a Cluster's (a standalone Redis has no failover
// RealSync follows) runs call as Runner.Run does, acked false.
//
// The master is the one the client's layout names. A call sent again
// once the layout was read again (movedBackoff), to the slot's master
// then, when it reached a node no longer serving the slot (MOVED: it did
// not run; as go-redis follows a MOVED, instead of failing until a
// repair: a chaos tester's graceful failovers, matches told 5 s late),
// and when its master was made a replica during the wait (Redis ends the
// WAIT with UNBLOCKED): it ran, but whether the new master has its write
// is known only by running it there (in a graceful failover it has; in a
// forced one it may not), and only that master's replicas can be waited
// for. (An operator's CLIENT UNBLOCK … ERROR ends a WAIT with UNBLOCKED
// too: the call then runs again on the same master, which an idempotent
// call allows.) The whole call is bounded by the Base's Bound plus twice
// timeout: the node's client has none of the Cluster client's hooks; the
// Base's ConnHooks (the metrics') see the run. The call goes by its
// function or script hash, as Runner.Run sends it: a node that lacks the
// code gets it loaded, and the code goes with the call only where it is
// still missing.
func (b *Base) RunReplicated(ctx context.Context, call Call, want int, timeout time.Duration) (reply any, acked bool, err error) {
	keys, _ := call.KeysArgs()
	cc, ok := b.Client.(*redis.ClusterClient)
	if !ok {
		reply, err = b.Runner.Run(ctx, call).Result()
		return reply, false, err
	}
	if d := time.Duration(b.Bound); d > 0 {
		// the whole call, sent again after MOVED or run again after
		// UNBLOCKED: the second run waits for its replicas once more
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d+2*timeout)
		defer cancel()
	}
	for try := 0; ; try++ {
		n := want
		if b.Replicas != nil {
			n = min(want, b.Replicas(layout.Slot(keys[0])))
		}
		if n <= 0 {
			reply, err = b.Runner.Run(ctx, call).Result()
			return reply, false, err
		}
		var again bool
		reply, acked, again, err = b.runOnMaster(ctx, cc, keys[0], call, n, timeout)
		if !again || try == len(movedBackoff) {
			return reply, acked, err
		}
		// the layout read again, and the call sent to the slot's master then
		cc.ReloadState(ctx)
		select {
		case <-ctx.Done():
			return reply, acked, err
		case <-time.After(movedBackoff[try]):
		}
	}
}

// MasterAddr is the address of the Cluster master the client's layout
// names for key's slot (RunReplicated's), "" for a client other than a
// Cluster's or when the layout cannot be read.
func (b *Base) MasterAddr(ctx context.Context, key string) string {
	cc, ok := b.Client.(*redis.ClusterClient)
	if !ok {
		return ""
	}
	node, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return ""
	}
	return node.Options().Addr
}

// runOnMaster is one run of RunReplicated's on the master of key's slot
// the layout names; again when it is to be sent again once the layout
// was read again: it did not run there (MOVED), or that master was made a
// replica during the wait (UNBLOCKED).
func (b *Base) runOnMaster(ctx context.Context, cc *redis.ClusterClient, key string, call Call, want int, timeout time.Duration) (reply any, acked, again bool, err error) {
	node, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return nil, false, false, err
	}
	conn := node.Conn()
	defer conn.Close()
	for _, h := range b.ConnHooks {
		conn.AddHook(h)
	}
	// by its function or hash, as Runner.Run: where the node lacks its
	// code (nothing ran, nor was written for the WAIT), the code is
	// loaded on the key's node and the call sent again, and where it is
	// still missing (not the node loaded) the code goes with the call
	var cmd *redis.Cmd
	send := func(queue func(context.Context, redis.Pipeliner, Call) *redis.Cmd) error {
		_, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
			cmd = queue(ctx, p, call)
			return nil
		})
		return err
	}
	err = send(b.Runner.Queue)
	if MissingCode(err) && b.Runner.LoadCode(ctx, call) == nil {
		err = send(b.Runner.Queue)
	}
	if MissingCode(err) {
		err = send(b.Runner.QueueSource)
	}
	if err != nil {
		_, moved := redis.IsMovedError(err)
		return nil, false, moved, err
	}
	reply = cmd.Val()
	n, err := conn.Wait(ctx, want, timeout).Result()
	var refused redis.Error
	if errors.As(err, &refused) {
		demoted := strings.HasPrefix(refused.Error(), "UNBLOCKED")
		return reply, false, demoted, &ShortOfReplicasError{Addr: node.Options().Addr, Want: want, Refused: err}
	} else if err != nil {
		return reply, false, false, err
	}
	if int(n) < want {
		return reply, false, false, &ShortOfReplicasError{Addr: node.Options().Addr, Want: want, Acked: int(n)}
	}
	return reply, true, false, nil
}

// movedBackoff is how long RunReplicated waits, after each MOVED or
// UNBLOCKED, for the layout to be read again before it sends the call once more (go-redis
// reads it in the background).
var movedBackoff = []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond}

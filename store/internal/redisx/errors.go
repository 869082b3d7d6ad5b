package redisx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
)

// Wrap turns transport failures into rooms.ErrUnavailable; Redis error
// replies (a bug, never the client's fault) pass through as they are. A
// call NeverSent stays so.
func Wrap(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, rooms.ErrUnavailable) {
		return err // nothing to wrap, or wrapped already
	}
	if rerr, ok := errors.AsType[redis.Error](err); ok && !IsTransient(rerr) {
		return err
	}
	if n, ok := errors.AsType[neverSent](err); ok {
		return neverSent{fmt.Errorf("%w: %v", rooms.ErrUnavailable, n.err)}
	}
	return fmt.Errorf("%w: %v", rooms.ErrUnavailable, err)
}

// GaveUp is the error of a call whose caller gave up (ctx ended, err is
// ctx's) before it was sent to Redis: nothing of it ran. Only a call
// certainly not sent gets it (the batch queue's, or one whose context had
// ended before it was handed to go-redis); a caller that gave up once
// its call was sent waits for Redis' answer (store/internal/batch), and one
// whose outcome is unknown (a lost reply) gets a transport error, never
// this one.
func GaveUp(err error) error { return neverSent{err} }

// NeverSent reports whether err says its call was never sent (GaveUp):
// what it would have changed, such as a quota reservation made for it,
// may be undone.
func NeverSent(err error) bool {
	_, ok := errors.AsType[neverSent](err)
	return ok
}

// neverSent marks err as GaveUp's; errors.Is sees through it (a canceled
// context is still context.Canceled).
type neverSent struct{ err error }

func (n neverSent) Error() string { return n.err.Error() + " (never sent)" }
func (n neverSent) Unwrap() error { return n.err }

// IsTransient recognizes error replies that mean "not now" rather than "bug":
// loading after a restart, a Cluster moving or down, a Redis out of memory
// (maxmemory with noeviction refuses writes; no script starts half done).
// EXECABORT too: the store's transactions queue fixed, valid commands, so a
// transaction refused at queue time is Redis refusing writes (out of memory).
// MOVED and ASK reach the store only when go-redis' redirects ran out
// (maxRedirects): during a failover the nodes disagree on the slot's owner
// for a few seconds; the call did not run and can be tried later, as a
// CLUSTERDOWN can.
func IsTransient(err redis.Error) bool {
	return hasPrefix(err.Error(), transient)
}

// transient are the prefixes of IsTransient's error replies; refused
// (NotSent's) are those of them that also say the command did not run and
// may pass within Again's 20 ms. OOM and READONLY are not in refused (a
// full Redis, a replica refusing writes, do not pass that soon).
var (
	transient = []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "OOM", "EXECABORT", "MOVED ", "ASK "}
	refused   = []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "EXECABORT", "MOVED ", "ASK "}
)

func hasPrefix(msg string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// OutOfMemory reports whether err is Redis refusing a transaction for
// want of memory (maxmemory with noeviction): OOM, or EXECABORT, how a
// transaction whose queued commands were refused ends (Redis refuses
// every command queued in a MULTI then, reads too).
func OutOfMemory(err error) bool {
	rerr, ok := errors.AsType[redis.Error](err)
	return ok && hasPrefix(rerr.Error(), []string{"OOM", "EXECABORT"})
}

// NotSent reports whether err says a call never ran, so that sending it
// again cannot run it twice: no connection to send it on (a dial that
// failed, no free pooled connection within the pool timeout), or Redis
// refusing it before running anything (loading a restart's data, a
// Cluster down or moving the slot, a node that does not own the slot
// (MOVED, ASK: go-redis' redirects ran out), a transaction refused at
// queue time).
// A script run is sent once (sentOnce); the store sends it again once
// when NotSent (Runner.Run, and the store's transactions).
func NotSent(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, redis.ErrPoolTimeout) {
		return true
	}
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return true
	}
	rerr, ok := errors.AsType[redis.Error](err)
	return ok && hasPrefix(rerr.Error(), refused)
}

// Again waits before a call NotSent is sent again (a slot moving, a
// restart loading): 20 ms, or less when ctx ends first (false). Not for a
// failed dial: Redial sent it again already, or its node refuses
// connections (Redialed).
func Again(ctx context.Context) bool { return wait(ctx, 20*time.Millisecond) }

// wait waits d; false when ctx ends first.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Unavailable reports whether err means Redis could not serve the call:
// what Wrap turns into rooms.ErrUnavailable. A caller that gave up
// (context.Canceled) is not Redis' failure.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	rerr, ok := errors.AsType[redis.Error](err)
	return !ok || IsTransient(rerr)
}

// CmdErr is the error of cmd of a pipeline that answered err: its own, or
// the pipeline's when that is a transport failure (Redis could not serve
// the pipeline before cmd had one). Another command's error reply (the
// pipeline's err is the first command error, a TRYAGAIN of another slot
// as much as a script's own) is not cmd's.
func CmdErr(cmd redis.Cmder, err error) error {
	if e := cmd.Err(); e != nil || !Unavailable(err) {
		return e
	}
	if _, ok := errors.AsType[redis.Error](err); ok {
		return nil
	}
	return err
}

package redisx

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
)

// Wrap turns transport failures into rooms.ErrUnavailable; Redis error
// replies (a bug, never the client's fault) pass through as they are.
func Wrap(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && !IsTransient(rerr) {
		return err
	}
	return fmt.Errorf("%w: %v", rooms.ErrUnavailable, err)
}

// IsTransient recognizes error replies that mean "not now" rather than "bug":
// loading after a restart, a Cluster moving or down, a Redis out of memory
// (maxmemory with noeviction refuses writes; no script starts half done).
// EXECABORT too: the store's transactions queue fixed, valid commands, so a
// transaction refused at queue time is Redis refusing writes (out of memory).
func IsTransient(err redis.Error) bool {
	msg := err.Error()
	for _, p := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "OOM", "EXECABORT"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// Unavailable reports whether err means Redis could not serve the call:
// what Wrap turns into rooms.ErrUnavailable. A caller that gave up
// (context.Canceled) is not Redis' failure.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	var rerr redis.Error
	return !errors.As(err, &rerr) || IsTransient(rerr)
}

// CmdErr is the error of cmd of a pipeline that answered err: its own, or
// the pipeline's when Redis could not serve the pipeline before cmd had
// one. (Another command's error reply is not cmd's.)
func CmdErr(cmd redis.Cmder, err error) error {
	if e := cmd.Err(); e != nil || !Unavailable(err) {
		return e
	}
	return err
}

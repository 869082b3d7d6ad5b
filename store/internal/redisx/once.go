package redisx

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// A script run is sent to Redis once. go-redis sends a command, or a
// whole pipeline, again when it did not get the reply (MaxRetries, the
// store's is 1): after a read timeout or a connection reset too, when
// Redis may have run it. A mutation that ran and lost its reply would run
// twice: a leave's second run answers NOT_A_MEMBER to a leave that
// worked, a message is sent twice, a patch makes two versions. A script
// run (but a ReadOnly or Idempotent script's) is therefore marked NoRetry (a pipeline that holds one is not sent
// again either): its caller gets the transport error, rooms.ErrUnavailable
// (503), whose outcome is unknown, and decides. MOVED and ASK are still
// followed (the script did not run there); a call that did not run
// (NotSent: no connection, a refusal such as TRYAGAIN or LOADING) is
// sent once more by Runner.Run and the store's transactions; a pooled
// connection that Redis closed (a restart) is found so, and replaced,
// before the write: go-redis checks each one it hands out (over TLS too:
// the store's dialer shows it the socket, store/internal/conn/tlsdial.go).
type sentOnce struct{ *redis.Cmd }

// NoRetry implements redis.Cmder: never send it again.
func (sentOnce) NoRetry() bool { return true }

// scriptCmd is a script run (command fcall, evalsha or eval, of what
// names the script) of keys and args, to be sent once unless resend (a
// ReadOnly script): process the Cmder, read the reply from the
// *redis.Cmd.
func scriptCmd(ctx context.Context, resend bool, command, script string, keys []string, args []any) (redis.Cmder, *redis.Cmd) {
	a := make([]any, 3+len(keys), 3+len(keys)+len(args))
	a[0], a[1], a[2] = command, script, len(keys)
	for i, k := range keys {
		a[3+i] = k
	}
	cmd := redis.NewCmd(ctx, append(a, args...)...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // where a Cluster routes it
	}
	if resend {
		return cmd, cmd
	}
	return sentOnce{cmd}, cmd
}

// AsCmd is the *redis.Cmd behind c, a command with a reply of any type
// (a Runner's script run, or go-redis' own Cmd), as a hook sees it; false
// for a typed command (HGETALL's, ZRANGE's).
func AsCmd(c redis.Cmder) (*redis.Cmd, bool) {
	switch c := c.(type) {
	case sentOnce:
		return c.Cmd, true
	case *redis.Cmd:
		return c, true
	}
	return nil, false
}

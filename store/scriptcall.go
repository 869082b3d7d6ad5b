package store

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// scriptCall is a script's typed contract with Go (issue 15 item 9): a
// descriptor, a struct of the script's named keys and arguments, lays them
// out as KEYS and ARGV in one place, its keysArgs, documented beside the
// Lua's own header. Scripts converted so far: quick_join.
type scriptCall interface {
	// script is the script the call runs.
	script() *redis.Script
	// keysArgs lays the call out as the script's KEYS and ARGV.
	keysArgs() (keys []string, args []any)
}

// runScript runs call on c: EVALSHA, then EVAL when the node does not know
// the script (a restart, SCRIPT FLUSH, a new node). Every script with a
// descriptor runs through it; c is any client (a plain one, a pipeline, a
// batching one).
func runScript(ctx context.Context, c redis.Scripter, call scriptCall) *redis.Cmd {
	k, a := call.keysArgs()
	return call.script().Run(ctx, c, k, a...)
}

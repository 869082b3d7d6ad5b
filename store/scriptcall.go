package store

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// luaScript is one script of store/lua as the store runs it: what EVALSHA
// runs (a mutation's body with the prelude in front, see mutation) and,
// for a mutation, its function in the Functions library (functions.go).
type luaScript struct {
	*redis.Script
	name  string // the file's base name: room_join
	body  string // a mutation's body, for the library
	fname string // a mutation's function in the library ("" for the others)
}

// plain is a script run as it is written (no prelude, not in the library).
func plain(name, src string) *luaScript {
	return &luaScript{Script: redis.NewScript(src), name: name}
}

// scriptCall is a script's typed contract with Go (issue 15 item 9): a
// descriptor, a struct of the script's named keys and arguments
// (scriptcalls.go), lays them out as KEYS and ARGV in one place, its
// keysArgs, beside the Lua's own header that names them. Every script the
// store runs is run through one: run, result, queue or runAll.
type scriptCall interface {
	// script is the script the call runs.
	script() *luaScript
	// keysArgs lays the call out as the script's KEYS and ARGV.
	keysArgs() (keys []string, args []any)
}

// run runs call: FCALL of a mutation's function where the library is
// loaded (loading it on the key's node and calling again when that node
// lacks it), else EVALSHA, then EVAL when the node does not know the
// script (a restart, SCRIPT FLUSH, a new node).
func (s *Store) run(ctx context.Context, call scriptCall) *redis.Cmd {
	sc := call.script()
	keys, args := call.keysArgs()
	if !s.functions || sc.fname == "" {
		return sc.Run(ctx, s.client, keys, args...)
	}
	cmd := s.client.FCall(ctx, sc.fname, keys, args...)
	if functionMissing(cmd.Err()) && s.loadLibraryFor(ctx, keys[0]) == nil {
		cmd = s.client.FCall(ctx, sc.fname, keys, args...)
	}
	return cmd
}

// result runs call and decodes its status reply (reply).
func (s *Store) result(ctx context.Context, call scriptCall) ([]any, error) {
	return reply(s.run(ctx, call))
}

// reply decodes the status reply of a script's cmd, run or queued: what
// follows "OK", or the error its status names (replyStatus), or Redis'
// own (wrap).
func reply(cmd *redis.Cmd) ([]any, error) {
	res, err := cmd.Result()
	if err != nil {
		return nil, wrap(err)
	}
	return replyStatus(res)
}

// queue queues call on a pipeline or transaction p as run runs it; the
// caller loads what a node lacked (missingCode, loadCode) and sends again.
func (s *Store) queue(ctx context.Context, p redis.Pipeliner, call scriptCall) *redis.Cmd {
	sc := call.script()
	keys, args := call.keysArgs()
	if !s.functions || sc.fname == "" {
		return sc.EvalSha(ctx, p, keys, args...)
	}
	return p.FCall(ctx, sc.fname, keys, args...)
}

// runAll runs calls in one pipeline and returns their commands, in order;
// when a node lacked a script, the scripts are loaded and the pipeline
// sent once more, so each call must be safe to run twice (idempotent, or
// comparing what it changes). The error is the pipeline's: each command
// holds its own.
func (s *Store) runAll(ctx context.Context, calls []scriptCall) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	for attempt := 0; ; attempt++ {
		_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, c := range calls {
				cmds[i] = s.queue(ctx, p, c)
			}
			return nil
		})
		if !missingCode(err) || attempt > 0 {
			return cmds, err
		}
		loaded := map[*luaScript]bool{}
		for i, c := range cmds {
			if sc := calls[i].script(); missingCode(c.Err()) && !loaded[sc] {
				if err := s.loadCode(ctx, calls[i]); err != nil {
					return cmds, wrap(err)
				}
				loaded[sc] = true
			}
		}
	}
}

// loadCode loads what a queued call lacked on the node of its first key:
// the library for a mutation where it is used, else the script.
func (s *Store) loadCode(ctx context.Context, call scriptCall) error {
	sc := call.script()
	keys, _ := call.keysArgs()
	if s.functions && sc.fname != "" {
		return s.loadLibraryFor(ctx, keys[0])
	}
	return sc.Load(ctx, s.client).Err()
}

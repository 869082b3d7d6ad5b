package redisx

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Script is one Lua script as a store runs it: what EVALSHA runs (for a
// mutation of a Library, its body with the library's prelude in front,
// see Mutation) and, for a mutation, its function in the library.
type Script struct {
	*redis.Script
	Name   string // the file's base name: room_join
	Before string // a mutation's code ahead of begin() (MutationAfter)
	Body   string // a mutation's body, for the library
	FName  string // a mutation's function in the library ("" for the others)
	// AllowOOM: a mutation whose function runs out of memory too (flagged
	// allow-oom): one that frees more than it writes (a leave, a delete).
	// Set before the library is made.
	AllowOOM bool
	src      string // what EVAL runs
	// resend: the script writes nothing (ReadOnly) or nothing more when
	// run again (Idempotent), so go-redis may send it again when its reply
	// was lost, as it does any read; every other script is sent once
	// (sentOnce).
	resend bool
}

// Plain is a script run as it is written (no prelude, not in a library).
func Plain(name, src string) *Script {
	s := &Script{Script: redis.NewScript(src), Name: name, src: src}
	register(s.Hash(), name)
	return s
}

// ReadOnly is a Plain script that writes nothing: a run whose reply was
// lost is sent again, as go-redis sends any read again, where any other
// script but an Idempotent one is sent once (sentOnce) and its caller
// gets a 503.
func ReadOnly(name, src string) *Script {
	s := Plain(name, src)
	s.resend = true
	return s
}

// Idempotent is a Plain script whose second run of one call changes
// nothing the first did not and answers as the first did (a lock taken
// for a token, found held by that token): sent again when its reply was
// lost, as ReadOnly's. Not when it left in a batch (store/internal/batch)
// with a script sent once: go-redis sends no part of such a pipeline
// again, and the caller gets the transport error.
func Idempotent(name, src string) *Script { return ReadOnly(name, src) }

// Mutation is a script of a library: prelude, "begin()", then src for
// EVALSHA; src alone as a function of the library (NewLibrary).
func Mutation(prelude, name, src string) *Script {
	return MutationAfter(prelude, name, "", src)
}

// MutationAfter is Mutation with before run ahead of begin(), in the
// same scope as src: code that rewrites KEYS and ARGV before the prelude
// binds them (quick_join.lua picks the room the rest of the call is about).
func MutationAfter(prelude, name, before, src string) *Script {
	code := prelude + "\n" + lines(before) + "begin()\n" + src
	s := &Script{Script: redis.NewScript(code), Name: name, Before: before, Body: src, src: code}
	register(s.Hash(), name)
	return s
}

// lines is code followed by a newline, or nothing.
func lines(code string) string {
	if code == "" {
		return ""
	}
	return code + "\n"
}

// names maps what a call names a script by (the SHA1 of what EVALSHA
// runs, a library function's name) to the script's name: filled as the
// scripts are declared (package variables), read by metrics and tools.
var names sync.Map

func register(id, name string) { names.Store(id, name) }

// ScriptName is the name of the script that EVALSHA names by sha, or that
// FCALL names by its function's name.
func ScriptName(id string) (string, bool) {
	v, ok := names.Load(id)
	if !ok {
		return "", false
	}
	return v.(string), true
}

// ScriptNames is every known id (SHA1, function name) with its script's
// name.
func ScriptNames() map[string]string {
	m := map[string]string{}
	names.Range(func(k, v any) bool {
		m[k.(string)] = v.(string)
		return true
	})
	return m
}

// Call is a script's typed contract with Go (issue 15 item 9): a
// descriptor, a struct of the script's named keys and arguments, lays them
// out as KEYS and ARGV in one place, its KeysArgs, beside the Lua's own
// header that names them. Every script is run through one: Runner.Run,
// Queue or RunAll.
type Call interface {
	// Script is the script the call runs.
	Script() *Script
	// KeysArgs lays the call out as the script's KEYS and ARGV.
	KeysArgs() (keys []string, args []any)
}

// A Library is mutation scripts as one Redis Functions library (issue 15
// item 1): the prelude's helpers are defined once, when the library is
// loaded, instead of on every call of every script (about 10 µs of Redis
// time per call, docs/BENCHMARKS.md). Each mutation is a function of the
// library that runs the script's Before (MutationAfter; most have none),
// binds its keys and arguments (begin) and runs the script's body: the
// same Lua, the same KEYS and ARGV, the same replies, as EVALSHA of
// prelude + Before + "begin()" + body, which is what runs where Redis has no
// Functions (the embedded store, miniredis; Redis before 7) or when a
// store is told to run scripts only.
//
// The library's and its functions' names carry the hash of its code
// ("realsync_<hash>", "<script>_<hash>"), so instances of two versions
// share a Redis during a rolling upgrade, each calling its own. A Runner
// loads it on every master (FUNCTION LOAD REPLACE); a node that answers a
// call with "Function not found" (a node added later, a FUNCTION FLUSH, a
// restart without persistence) gets it loaded and the call runs again, as
// Script.Run does with EVALSHA on NOSCRIPT; a call that still reaches a
// node without it (the client's layout not yet showing a slot's move to
// a master added since: the library went to the slot's former master)
// runs as EVAL of its code. Replicas get it by
// replication, so a promoted replica has it.
type Library struct {
	Name string // realsync_<hash>
	Code string // what FUNCTION LOAD loads
}

// NewLibrary makes the library of mutations ms (made by Mutation with
// prelude) and gives each its function's name.
func NewLibrary(prelude string, ms ...*Script) *Library {
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	var b strings.Builder
	b.WriteString("local KEYS, ARGV\n")
	b.WriteString(prelude)
	for _, m := range ms {
		flags := ""
		if m.AllowOOM {
			flags = ", flags={'allow-oom'}"
		}
		fmt.Fprintf(&b, "\nredis.register_function{function_name='%s_@', callback=function(keys, args)\nKEYS, ARGV = keys, args\n%sbegin()\n%s\nend%s}\n", m.Name, lines(m.Before), m.Body, flags)
	}
	sum := sha1.Sum([]byte(b.String()))
	hash := hex.EncodeToString(sum[:6])
	for _, m := range ms {
		m.FName = m.Name + "_" + hash
		register(m.FName, m.Name)
	}
	name := "realsync_" + hash
	return &Library{Name: name, Code: "#!lua name=" + name + "\n" + strings.ReplaceAll(b.String(), "_@', callback=", "_"+hash+"', callback=")}
}

// Runner runs Calls on a client: a mutation as FCALL of its function where
// the library is loaded, anything else (and a mutation elsewhere) as
// EVALSHA, then EVAL when the node does not know the script (a restart,
// SCRIPT FLUSH, a new node).
type Runner struct {
	client    redis.UniversalClient
	lib       *Library // nil: EVALSHA only
	functions bool     // the library is loaded: mutations run as FCALL
}

// NewRunner runs scripts on client; lib, when not nil, is loaded by
// LoadLibrary.
func NewRunner(client redis.UniversalClient, lib *Library) *Runner {
	return &Runner{client: client, lib: lib}
}

// Functions says whether the mutations run as FCALL of the library.
func (r *Runner) Functions() bool { return r.functions }

// LoadLibrary loads the library on every master, and from then on runs
// the mutations as FCALL of it. It keeps EVALSHA (and returns nil) when
// Redis has no Functions (unknown command) or the user may not load them
// (NOPERM). Call it once, before the runner is used by others.
func (r *Runner) LoadLibrary(ctx context.Context) error {
	if r.lib == nil {
		return nil
	}
	load := func(ctx context.Context, c *redis.Client) error {
		return c.FunctionLoadReplace(ctx, r.lib.Code).Err()
	}
	var err error
	switch c := r.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, load)
	case *redis.Client:
		err = load(ctx, c)
	default:
		return nil
	}
	// no Functions (miniredis, Redis < 7), or an ACL that forbids loading
	// them: the scripts run with EVALSHA, as before
	if err != nil && (strings.Contains(strings.ToLower(err.Error()), "unknown command") || redis.HasErrorPrefix(err, "NOPERM")) {
		return nil
	}
	r.functions = err == nil
	return err
}

// loadLibraryFor loads the library on the master of key.
func (r *Runner) loadLibraryFor(ctx context.Context, key string) error {
	switch c := r.client.(type) {
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return err
		}
		return node.FunctionLoadReplace(ctx, r.lib.Code).Err()
	default:
		return r.client.FunctionLoadReplace(ctx, r.lib.Code).Err()
	}
}

// Run runs call, sent once (see sentOnce; once more when it did not run:
// NotSent): FCALL of a mutation's function where the library is loaded
// (loading it on the key's node and calling again when that node lacks
// it, then EVAL of its code when the call still reached a node without
// it: a slot moving, or just moved, to a master added since), else
// EVALSHA, then EVAL when the node does not know the script. Each of
// these is sent only when the one before did not run.
// A ctx already ended sends nothing: the command's error says so
// (NeverSent), as does a call given up while it waited in a batch's queue.
func (r *Runner) Run(ctx context.Context, call Call) *redis.Cmd {
	sc := call.Script()
	keys, args := call.KeysArgs()
	if err := ctx.Err(); err != nil {
		_, cmd := scriptCmd(ctx, sc.resend, "evalsha", sc.Hash(), keys, args)
		cmd.SetErr(GaveUp(err))
		return cmd
	}
	run := func(command, script string) *redis.Cmd {
		send, cmd := scriptCmd(ctx, sc.resend, command, script, keys, args)
		if _ = r.client.Process(ctx, send); NotSent(cmd.Err()) && !Redialed(cmd.Err()) && Again(ctx) {
			send, cmd = scriptCmd(ctx, sc.resend, command, script, keys, args)
			_ = r.client.Process(ctx, send)
		}
		return cmd
	}
	if !r.functions || sc.FName == "" {
		cmd := run("evalsha", sc.Hash())
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			cmd = run("eval", sc.src)
		}
		return cmd
	}
	cmd := run("fcall", sc.FName)
	if functionMissing(cmd.Err()) && r.loadLibraryFor(ctx, keys[0]) == nil {
		cmd = run("fcall", sc.FName)
	}
	if functionMissing(cmd.Err()) {
		// the node that answered is not the one the library was loaded
		// on: a slot moving to a master added since (ASK), or moved there
		// before the client re-read the layout (MOVED). EVAL carries its
		// code to whichever node runs it.
		cmd = run("eval", sc.src)
	}
	return cmd
}

// Queue queues call on a pipeline or transaction p as Run runs it; when
// the node lacked its code (MissingCode), the caller loads it (LoadCode)
// and sends again.
func (r *Runner) Queue(ctx context.Context, p redis.Pipeliner, call Call) *redis.Cmd {
	return r.queue(ctx, p, call, false)
}

// QueueSource queues call as EVAL of its code, which runs on whichever
// node the call reaches: for a call that lacked its code again after
// LoadCode (the node that answered was not the key's master as the
// client's layout says: a slot moving, or moved, to a master added since).
func (r *Runner) QueueSource(ctx context.Context, p redis.Pipeliner, call Call) *redis.Cmd {
	return r.queue(ctx, p, call, true)
}

func (r *Runner) queue(ctx context.Context, p redis.Pipeliner, call Call, source bool) *redis.Cmd {
	sc := call.Script()
	keys, args := call.KeysArgs()
	command, script := "evalsha", sc.Hash()
	switch {
	case source:
		command, script = "eval", sc.src
	case r.functions && sc.FName != "":
		command, script = "fcall", sc.FName
	}
	send, cmd := scriptCmd(ctx, sc.resend, command, script, keys, args)
	_ = p.Process(ctx, send)
	return cmd
}

// RunAll runs calls in one pipeline and returns their commands, in order;
// when a node lacked a script, the scripts are loaded and the pipeline
// sent once more, as when a call did not run (NotSent: a refused dial, a
// TRYAGAIN or LOADING), so each call must be safe to run twice
// (idempotent, or comparing what it changes). The error is the
// pipeline's: each command holds its own.
func (r *Runner) RunAll(ctx context.Context, calls []Call) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	loaded, source, again := false, false, false
	for {
		_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, c := range calls {
				cmds[i] = r.queue(ctx, p, c, source)
			}
			return nil
		})
		switch {
		case MissingCode(err) && loaded && !source:
			source = true
		case MissingCode(err) && !loaded:
			loaded = true
			done := map[*Script]bool{}
			for i, c := range cmds {
				if sc := calls[i].Script(); MissingCode(c.Err()) && !done[sc] {
					if err := r.LoadCode(ctx, calls[i]); err != nil {
						return cmds, Wrap(err)
					}
					done[sc] = true
				}
			}
		case !again && slices.ContainsFunc(cmds, func(c *redis.Cmd) bool { return NotSent(c.Err()) }) && !allRedialed(cmds) && Again(ctx):
			again = true
		default:
			return cmds, err
		}
	}
}

// LoadCode loads what a queued call lacked on the node of its first key:
// the library for a mutation where it is used, else the script.
func (r *Runner) LoadCode(ctx context.Context, call Call) error {
	sc := call.Script()
	keys, _ := call.KeysArgs()
	if r.functions && sc.FName != "" {
		return r.loadLibraryFor(ctx, keys[0])
	}
	return sc.Load(ctx, r.client).Err()
}

// functionMissing: the node does not have the library (loaded elsewhere,
// flushed, or a node added since it was loaded).
func functionMissing(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Function not found")
}

// MissingCode: a queued script failed because the node lacks its code
// (NOSCRIPT for EVALSHA, "Function not found" for FCALL).
func MissingCode(err error) bool {
	return redis.HasErrorPrefix(err, "NOSCRIPT") || functionMissing(err)
}

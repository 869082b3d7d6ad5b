package store

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/batch"
	"github.com/realsync/realsync/store/internal/redisx"
)

// Metrics observes the store's Redis traffic; internal/metrics implements
// it with Prometheus (janitor actions go to Config.JanitorActions). A store
// opened without one observes nothing. Methods are called on every Redis
// call's goroutine, so they must be safe for concurrent use and must not
// block.
type Metrics interface {
	// ScriptCall records one run of a Lua script: script is its file name
	// without ".lua" (room_join: the rooms' scripts are in
	// store/internal/roomlua/lua/, the other store packages' in their own
	// lua/), d the time of its round trip (of
	// the whole MULTI/EXEC when the room is read in the same transaction),
	// outcome the first element of its reply ("OK" or an error status such
	// as ROOM_FULL), or "unavailable" (Redis unreachable, timed out, or
	// answering LOADING, CLUSTERDOWN…), "redis_error" (an error reply: a
	// bug) or "canceled" (the caller gave up). A NOSCRIPT answer is not an
	// outcome: the script runs again with EVAL, and that run is recorded.
	ScriptCall(script, outcome string, d time.Duration)
	// RedisError records a Redis call that failed for want of Redis (what
	// clients get as 503 STORE_UNAVAILABLE): op is the command in lower
	// case (evalsha, hgetall, …), or "pipeline" or "multi" for commands
	// sent together (counted once).
	RedisError(op string)
}

// noMetrics is the Metrics of a store opened without one.
type noMetrics struct{}

func (noMetrics) ScriptCall(string, string, time.Duration) {}
func (noMetrics) RedisError(string)                        {}

// observe installs m as a go-redis hook on the store's client, so every
// script run (Script.Run: EVALSHA, then EVAL) and every transaction that
// runs one (runThenRead) is measured where it happens.
func (s *Store) observe(m Metrics) {
	if m == nil {
		s.metrics = noMetrics{}
		return
	}
	s.metrics = m
	s.client.AddHook(metricsHook{m})
	// a match's commit, pinned to its master's connection on a Cluster
	// (redisx.RunReplicated), is measured alike
	s.base.ConnHooks = append(s.base.ConnHooks, metricsHook{m})
	// a failed readiness check counts as any failed call; on a Cluster
	// the probe pings each master's own client (conn.Masters), which
	// the Cluster client's hooks do not see: not counted there
	s.conn.Probe.AddHook(metricsHook{m})
	s.renewals.AddHook(metricsHook{m})
	if s.reads != nil {
		s.reads.AddHook(metricsHook{m})
	}
}

// scriptOf returns the name of the script cmd runs, "" when cmd runs none.
// An unknown script (none of the scripts) is "unknown".
func scriptOf(cmd redis.Cmder) string {
	args := cmd.Args()
	if len(args) < 2 {
		return ""
	}
	var sha string
	switch name, _ := args[0].(string); name {
	case "evalsha", "evalsha_ro":
		sha, _ = args[1].(string)
	case "fcall", "fcall_ro": // a mutation of the library: its function's name
		sha, _ = args[1].(string)
	case "eval", "eval_ro": // the fallback after NOSCRIPT: rare, so hashing is fine
		body, _ := args[1].(string)
		sum := sha1.Sum([]byte(body))
		sha = hex.EncodeToString(sum[:])
	default:
		return ""
	}
	if name, ok := redisx.ScriptName(sha); ok {
		return name
	}
	return "unknown"
}

// metricsHook is the go-redis hook that feeds Metrics.
type metricsHook struct{ m Metrics }

var _ redis.Hook = metricsHook{}

func (h metricsHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h metricsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		script := scriptOf(cmd)
		if script == "" {
			err := next(ctx, cmd)
			if redisx.Unavailable(err) {
				h.m.RedisError(cmd.Name())
			}
			return err
		}
		start := time.Now()
		err := next(ctx, cmd) // cmd.Err() is set only after the hooks
		h.script(cmd, script, err, time.Since(start))
		if redisx.Unavailable(err) {
			h.m.RedisError(cmd.Name())
		}
		return err
	}
}

// ProcessPipelineHook serves pipelines and transactions alike (go-redis
// hands a transaction over with its MULTI and EXEC).
func (h metricsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		d := time.Since(start)
		failed := redisx.Unavailable(err)
		for _, cmd := range cmds {
			if script := scriptOf(cmd); script != "" {
				h.script(cmd, script, redisx.CmdErr(cmd, err), d)
			}
			failed = failed || redisx.Unavailable(redisx.CmdErr(cmd, err))
		}
		if failed {
			op := "pipeline"
			if len(cmds) > 0 && cmds[0].Name() == "multi" {
				op = "multi"
			}
			h.m.RedisError(op)
		}
		return err
	}
}

// script records a run of script name by cmd that answered err, unless
// Redis did not know the script (NOSCRIPT, or "Function not found" for a
// function of the library): the caller runs it again.
func (h metricsHook) script(cmd redis.Cmder, name string, err error, d time.Duration) {
	if redisx.MissingCode(err) {
		return
	}
	h.m.ScriptCall(name, outcome(cmd, err), d)
}

// outcome is a script reply's status: its first element when that is a
// string, else "OK"; or what kind of failure it met.
func outcome(cmd redis.Cmder, err error) string {
	switch {
	case err == nil || errors.Is(err, redis.Nil):
		if c, ok := redisx.AsCmd(cmd); ok {
			if arr, ok := c.Val().([]any); ok && len(arr) > 0 {
				if status, ok := arr[0].(string); ok {
					return status
				}
			}
		}
		return "OK"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case redisx.Unavailable(err):
		return "unavailable"
	}
	return "redis_error"
}

// Batching sends concurrent script runs bound for the same node in one
// pipeline: see batch.Config.
type Batching = batch.Config

// BatchMetrics is implemented by a Config.Metrics that observes batches.
type BatchMetrics interface {
	// RedisBatch records one batch sent: kind "script" (script runs in one
	// pipeline), "read" (pipelines of reads in one pipeline) or
	// "transaction" (transactions in one MULTI/EXEC), size the calls in it.
	RedisBatch(kind string, size int)
}

// Package roomlua is the rooms' Lua library and its typed contract: the
// prelude and every room script (lua/), loaded as one Redis Functions
// library (library.go); one descriptor per script, its keys and
// arguments by name (calls.go), on the scope every mutation starts with
// (scope.go); and the scripts' replies decoded into the domain's errors
// (reply.go). The store runs them (store/rooms.go and the rest); nothing
// here reaches Redis.
package roomlua

import "github.com/realsync/realsync/store/internal/redisx"

// The room mutations run as one Redis Functions library (redisx.Library):
// the prelude (lua/prelude.lua) defined once, each mutation a function of
// it; EVALSHA of prelude + body where Redis has no Functions (the embedded
// store; Redis before 7) or Config.ScriptsOnly says so.

// mutation is a room mutation script of the library, with the prelude
// (and the OOM probe) prepended for EVALSHA.
func mutation(name, src string) *redisx.Script { return redisx.Mutation(scriptPrelude, name, src) }

// scriptPrelude is what a mutation's EVALSHA runs ahead of its body: the
// prelude, then a write that changes nothing but that Redis refuses out of
// memory (maxmemory, noeviction). Redis refuses a function not flagged
// allow-oom whole out of memory, but a plain script only until its first
// write (whatever it changes), and only a write that may grow memory: a
// mutation that began with a delete (a state patch's HDEL, a stale index
// entry or a lapsed hold dropped) then wrote its room past maxmemory. So
// a mutation is refused whole out of memory as EVALSHA as it is as FCALL.
// KEYS[12] (the shard's presence schedule, a zset) is every mutation's,
// quick_join's before it picks its room too. The library's functions go
// without it.
var scriptPrelude = preludeLua + "\nredis.call('ZADD', KEYS[12], 'XX', 0, '') -- refused out of memory: see library.go\n"

// cleanup is a mutation that frees more than it writes (a leave, a
// delete, a room closed, a stream closed, a sweep of lapsed presences): it
// runs out of memory too, so that a full Redis gets memory back as players
// leave and rooms end. Its function is flagged allow-oom; its EVALSHA
// begins with a write that changes nothing and that Redis does not refuse
// out of memory (a ZREM of no member), after which Redis lets a plain
// script's writes through. What it writes beside the room it frees, its
// events, goes to logs and streams capped by length.
func cleanup(name, src string) *redisx.Script {
	s := redisx.Mutation(cleanupPrelude, name, src)
	s.AllowOOM = true
	return s
}

// cleanupPrelude is what a cleanup's EVALSHA runs ahead of its body: see
// cleanup.
var cleanupPrelude = preludeLua + "\nredis.call('ZREM', KEYS[12], '') -- lets the rest write out of memory: see library.go\n"

// plain is a script run as it is written (no prelude, not in the library).
func plain(name, src string) *redisx.Script { return redisx.Plain(name, src) }

// readOnly is a plain script that writes nothing: sent again after a
// lost reply, as any read (redisx.ReadOnly).
func readOnly(name, src string) *redisx.Script { return redisx.ReadOnly(name, src) }

// Library is the library of every mutation script.
var Library = redisx.NewLibrary(preludeLua, roomCreate, roomJoin, playerRemove, roomUpdate, roomDelete, statePatch,
	streamOpen, streamClose, presenceSweep, messageSend, roomLifecycle, roomRepair, seatsReserve, quickJoin)

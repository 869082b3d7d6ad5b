// Package anchor is the anchor of the Redis-time targets of issue 15 item 1
// (docs/BENCHMARKS.md, "Redis time per mutation"): the least a join can do
// in one EVALSHA, against which the store's scripts are measured in the
// same run (cmd/rsload -serve-minimal -redis serves it as POST /anchor;
// store's BenchmarkRedisTime runs it beside the scripts).
package anchor

import "github.com/redis/go-redis/v9"

// Lua: one room of one hash tag. Read the room's placement (HMGET of 5
// fields), write the player record, the user → player entry and the
// room's sequence, version, count and status (3 HSET), append the event
// to the room's log (XADD MAXLEN ~ 1000) and publish it (PUBLISH): 6 Redis
// calls, reply {"OK", playerId}. No indexes, stats, presence, bans or
// prelude. Bounded: player records and users are overwritten modulo 1000.
//
//	KEYS[1] room hash  KEYS[2] players hash  KEYS[3] users hash  KEYS[4] log
//	ARGV[1] userId  ARGV[2] name as a JSON string  ARGV[3] channel
const Lua = `
local r = redis.call('HMGET', KEYS[1], 'st', 'pc', 'mx', 'sq', 'ver')
local pid = (tonumber(r[4]) or 0) + 1
local v = (tonumber(r[5]) or 0) + 1
redis.call('HSET', KEYS[2], pid % 1000, '0|' .. ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], pid)
redis.call('HSET', KEYS[1], 'sq', pid, 'ver', v, 'pc', pid % 1000, 'st', 'waiting')
local ev = '{"type":"player_joined","roomId":"anchor","version":' .. v ..
  ',"player":{"playerId":' .. pid .. ',"name":' .. ARGV[2] .. ',"connected":false}}'
redis.call('XADD', KEYS[4], 'MAXLEN', '~', 1000, v .. '-0', 'g', 'anchor', 'd', ev)
redis.call('PUBLISH', ARGV[3], v .. ' anchor ' .. ev)
return {'OK', pid}
`

// Script is Lua as go-redis runs it (EVALSHA, EVAL on NOSCRIPT).
var Script = redis.NewScript(Lua)

// Keys are its KEYS, under the hash tag "{rsload-anchor}".
var Keys = []string{"{rsload-anchor}:room", "{rsload-anchor}:room:players", "{rsload-anchor}:room:users", "{rsload-anchor}:room:log"}

// Channel is where it publishes.
const Channel = "{rsload-anchor}:ch"

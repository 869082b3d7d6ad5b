-- instance_heartbeat: an instance registers itself, or renews its
-- registration, for ttl ms of Redis' clock; unless renewed, the registration
-- lapses (the instance died or lost Redis). The hash expires when the
-- registration lapses, so a hash that exists is a live registration; the
-- set of live instances keeps a lapsed member until instance_reap removes it.
-- No prelude.
-- KEYS[1] live instances (zset id -> registration expiry, ms)
-- KEYS[2] the instance's hash: id, addr, version, startedAt (ms),
--         streams, heartbeatAt (ms, Redis clock), settings
-- ARGV[1] id  ARGV[2] ttl (ms)  ARGV[3] advertised address  ARGV[4] version
-- ARGV[5] startedAt (ms)  ARGV[6] open streams  ARGV[7] settings digest
--         (absent from an older release: "")
-- Reply: {"OK", renewed (1: it was still registered; 0: registered anew), heartbeatAt}
local live, inst = KEYS[1], KEYS[2]
local id, ttl = ARGV[1], tonumber(ARGV[2])
-- Out of memory (maxmemory, noeviction) Redis refuses a script's first
-- write that may grow memory, and lets everything through once the script
-- wrote anything: a heartbeat rewrites what exists (a registration lapsed
-- meanwhile is a few bytes), so it begins with a write that changes
-- nothing and that Redis lets through (a ZREM of no member): a full Redis
-- keeps every live instance registered, and the janitor does not take a
-- live instance for dead and release its streams' leases.
redis.call('ZREM', live, '')
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local expiry = now + ttl

local prev = redis.call('ZSCORE', live, id)
local renewed = 0
if prev and tonumber(prev) > now then renewed = 1 end
redis.call('ZADD', live, expiry, id)
redis.call('HSET', inst, 'id', id, 'addr', ARGV[3], 'version', ARGV[4], 'startedAt', ARGV[5],
  'streams', ARGV[6], 'heartbeatAt', string.format('%.0f', now), 'settings', ARGV[7] or '')
redis.call('PEXPIREAT', inst, string.format('%.0f', expiry))
-- The set outlives its last registration by one ttl, so the last lapsed
-- member can still be reaped, and nothing is left once every instance is gone.
local last = redis.call('ZRANGE', live, -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', live, string.format('%.0f', tonumber(last[2]) + ttl))
return {'OK', renewed, string.format('%.0f', now)}

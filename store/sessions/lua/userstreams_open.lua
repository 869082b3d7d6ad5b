-- userstreams_open: records an event stream (of a room or the lobby) among
-- the streams its user holds open, refusing it when the user holds the
-- most allowed already, so one user's streams stay bounded across every
-- room, the lobby and every instance: every open of the user goes through
-- this one key, in the user's own slot. Leases that lapsed (their instance
-- died or lost Redis for a TTL) are purged first and free their places.
-- No prelude.
-- KEYS[1] the user's streams (zset: "<roomId>/<stream>", "/<stream>" for
--         the lobby; score = lease expiry, ms, Redis clock)
-- ARGV[1] member  ARGV[2] most streams at once  ARGV[3] lease TTL (ms)
-- Reply: {"OK", "1" new | "0" held before (renewed)} |
--        {"STREAM_LIMIT", streams held}
local key, member = KEYS[1], ARGV[1]
local max, ttl = tonumber(ARGV[2]), tonumber(ARGV[3])
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)

-- refused out of memory before the purge, a change Redis would let the
-- ZADD below follow past maxmemory (session_open.lua says why)
redis.call('ZADD', key, 'XX', 0, '')
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local fresh = '0'
if not redis.call('ZSCORE', key, member) then
  local held = redis.call('ZCARD', key)
  if held >= max then return {'STREAM_LIMIT', held} end
  fresh = '1'
end
redis.call('ZADD', key, now + ttl, member)
-- the key lives as long as its longest lease
local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', key, last[2])
return {'OK', fresh}

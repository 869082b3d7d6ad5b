-- webhook_due: moves the failed deliveries whose next try is due back into
-- the deliveries stream, and off a recount that walked them: one at or
-- before the walk's retries cursor, or any once the walk has passed every
-- retry, takes one off its endpoint's walked retries (webhook_recount.lua;
-- its new delivery is added at the stream's end, where the walk reaches
-- it later). One shard's keys:
--   KEYS[1] retries (zset, score: due ms)   KEYS[2] deliveries
--   KEYS[3] recount (hash)
--   ARGV[1] now (ms)   ARGV[2] at most this many
-- Returns the number moved.

local walked = retryWalker(KEYS[3])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[2])
for i = 1, #due, 2 do
  local m = due[i]
  local d = cjson.decode(m)
  redis.call('XADD', KEYS[2], '*', 'e', d.e, 'm', d.m, 't', d.t, 'd', d.d, 'n', d.n)
  redis.call('ZREM', KEYS[1], m)
  if walked(due[i + 1], m) then redis.call('HINCRBY', KEYS[3], 'r:' .. d.e, -1) end
end
return #due / 2

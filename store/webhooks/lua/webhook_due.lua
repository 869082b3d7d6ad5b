-- webhook_due: moves the failed deliveries whose next try is due back into
-- the deliveries stream. One shard's keys:
--   KEYS[1] retries (zset, score: due ms)   KEYS[2] deliveries
--   ARGV[1] now (ms)   ARGV[2] at most this many
-- Returns the number moved.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, m in ipairs(due) do
  local d = cjson.decode(m)
  redis.call('XADD', KEYS[2], '*', 'e', d.e, 'm', d.m, 't', d.t, 'd', d.d, 'n', d.n)
  redis.call('ZREM', KEYS[1], m)
end
return #due

-- instance_reap: removes the registrations that lapsed by Redis' clock (their
-- hashes already expired with them) and names them, so the caller releases
-- what those instances held. Atomic, so of instances reaping at once exactly
-- one gets each lapsed id, and an instance that renewed in time is never
-- reaped. No prelude.
-- KEYS[1] live instances (zset id -> registration expiry, ms)
-- ARGV[1] most ids to reap in one call
-- Reply: {"OK", {lapsed ids}}
local live = KEYS[1]
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local lapsed = redis.call('ZRANGEBYSCORE', live, '-inf', string.format('%.0f', now), 'LIMIT', 0, tonumber(ARGV[1]))
for _, id in ipairs(lapsed) do
  redis.call('ZREM', live, id)
end
return {'OK', lapsed}

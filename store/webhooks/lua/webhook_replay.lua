-- webhook_replay: a dead letter goes back into the deliveries stream with
-- its retry count reset, and into its endpoint's backlog (one more), and
-- leaves the dead-letter stream (deleted once empty: it has no consumer
-- group to keep); unless its endpoint's backlog in the shard is at the
-- bound, or the shard's deliveries stream is at its own (its length, less
-- the backlogs of the endpoints at their bound, as the fan-out counts it),
-- checked here with the counts, atomically: a replay never takes an
-- endpoint past the bound its new events are refused at, and the letter
-- stays in the dead letters, untouched. One shard's keys:
--   KEYS[1] dead letters   KEYS[2] deliveries   KEYS[3] backlog (hash)
--   ARGV[1] the dead letter's entry id
--   ARGV[2] the bound of an endpoint's backlog (Config.MaxBacklog)
--   ARGV[3] the bound of the deliveries stream (Config.MaxDeliveries)
--   ARGV[4] '1': the endpoints in force follow (ARGV[5..]), a letter of
--           another one is not replayed (its tries would all fail, "no
--           longer configured"); '0': not checked
-- Returns {1}; {0} when there is no such dead letter; {-1, its endpoint's
-- backlog, its endpoint} when that is at the bound; {-2, the deliveries
-- counted} when the stream is at its bound; {-3, 0, its endpoint} when
-- that is not in force.
local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if not e[1] then return {0} end
local d = {}
local f = e[1][2]
for i = 1, #f, 2 do d[f[i]] = f[i + 1] end
if ARGV[4] == '1' then
  local known = false
  for i = 5, #ARGV do
    if ARGV[i] == d.e then known = true break end
  end
  if not known then return {-3, 0, d.e} end
end
local bound = tonumber(ARGV[2])
local held = tonumber(redis.call('HGET', KEYS[3], d.e) or '0')
if held >= bound then return {-1, held, d.e} end
local n = redis.call('XLEN', KEYS[2])
if n >= tonumber(ARGV[3]) then
  local counts = redis.call('HGETALL', KEYS[3])
  for i = 2, #counts, 2 do
    local c = tonumber(counts[i])
    if c >= bound then n = n - c end
  end
  if n >= tonumber(ARGV[3]) then return {-2, n} end
end
-- 'r': a replay, its retries too (webhook_fail, webhook_due): its delivery
-- time is no measure of delivery (realsync_webhook_delivery_seconds)
redis.call('XADD', KEYS[2], '*', 'e', d.e, 'm', d.m, 't', d.t, 'd', d.d, 'n', 0, 'r', 1)
redis.call('HINCRBY', KEYS[3], d.e, 1)
redis.call('XDEL', KEYS[1], ARGV[1])
if redis.call('XLEN', KEYS[1]) == 0 then redis.call('DEL', KEYS[1]) end
return {1}

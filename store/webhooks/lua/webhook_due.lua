-- webhook_due: moves the failed deliveries whose next try is due back into
-- the deliveries stream, and off a recount that walked them: one at or
-- before the walk's retries cursor, or any once the walk has passed every
-- retry, takes one off its endpoint's walked retries (webhook_recount.lua;
-- its new delivery is added at the stream's end, where the walk reaches
-- it later). One shard's keys:
--   KEYS[1] retries (zset, score: due ms)   KEYS[2] deliveries
--   KEYS[3] recount (hash)
--   ARGV[1] now (ms)   ARGV[2] at most this many
--   ARGV[3] and stop once this many bytes of them are moved (a retry
--           holds its event, up to some 80 KiB): read 16 at a time
-- Returns the number moved.

local walked = retryWalker(KEYS[3])
local most, maxBytes = tonumber(ARGV[2]), tonumber(ARGV[3])
local moved, bytes = 0, 0
while moved < most and bytes < maxBytes do
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, math.min(16, most - moved))
  for i = 1, #due, 2 do
    local m = due[i]
    local d = cjson.decode(m)
    local fields = {'e', d.e, 'm', d.m, 't', d.t, 'd', d.d, 'n', d.n}
    if d.r then -- a replay's retry stays one
      fields[#fields + 1], fields[#fields + 2] = 'r', d.r
    end
    redis.call('XADD', KEYS[2], '*', unpack(fields))
    redis.call('ZREM', KEYS[1], m)
    if walked(due[i + 1], m) then redis.call('HINCRBY', KEYS[3], 'r:' .. d.e, -1) end
    bytes = bytes + #m
  end
  moved = moved + #due / 2
  if #due < 32 then break end
end
return moved

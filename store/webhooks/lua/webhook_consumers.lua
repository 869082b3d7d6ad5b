-- webhook_consumers: removes consumers of one stream's group that hold no
-- pending entry, so that instances come and go without their names piling
-- up in the group (one per stream of every shard at each start: an
-- instance reads under a name of its own). One key:
--   KEYS[1] the outbox or the deliveries stream of a shard
--   ARGV[1] consumer group   ARGV[2] mode: "leave" (ARGV[3], this
--   instance's consumer, shutting down) or "sweep" (every consumer but
--   ARGV[3] idle at least ARGV[4] ms: instances that died)
--   ARGV[4] sweep: the least idle time (ms)
-- A consumer with entries pending stays (they are taken over by another
-- consumer after the claim time, XAUTOCLAIM, and a later sweep removes
-- it then); removing one with none loses nothing, even a live one (its
-- next read makes it again), and no read runs between this script's look
-- and its removal.
-- Returns the number of consumers removed.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local group, mode, self = ARGV[1], ARGV[2], ARGV[3]
local ok, list = pcall(redis.call, 'XINFO', 'CONSUMERS', KEYS[1], group)
if not ok then return 0 end -- no group yet
local removed = 0
for _, c in ipairs(list) do
  local f = {}
  for i = 1, #c, 2 do f[c[i]] = c[i + 1] end
  local mine, idle = f['name'] == self, tonumber(f['idle'])
  if idle < 0 then idle = math.huge end -- never seen (the embedded store's consumers made without a read)
  if tonumber(f['pending']) == 0 and ((mode == 'leave' and mine) or
      (mode == 'sweep' and not mine and idle >= tonumber(ARGV[4]))) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], group, f['name'])
    removed = removed + 1
  end
end
return removed

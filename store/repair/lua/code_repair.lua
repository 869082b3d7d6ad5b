-- code_repair: drops invite codes whose room is gone or has another code;
-- a room found here that is missing from the lifecycle schedule is
-- scheduled now (so the room walk sees it).
-- KEYS[1] shard invite codes  KEYS[2] shard lifecycle schedule
-- KEYS[3..] the hash of each code's room
-- ARGV[i*2-1], ARGV[i*2] code i and the room id it maps to (as the walk read it)
-- Reply: {codes dropped, rooms scheduled}
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local dropped, scheduled = 0, 0
for i = 1, #ARGV / 2 do
  local code, id, room = ARGV[2 * i - 1], ARGV[2 * i], KEYS[i + 2]
  local cd = redis.call('HGET', room, 'cd')
  if redis.call('HGET', KEYS[1], code) == id and cd ~= code then
    redis.call('HDEL', KEYS[1], code)
    dropped = dropped + 1
  elseif cd and not redis.call('ZSCORE', KEYS[2], id) then
    redis.call('ZADD', KEYS[2], now, id)
    scheduled = scheduled + 1
  end
end
return {dropped, scheduled}

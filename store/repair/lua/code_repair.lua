-- code_repair: drops invite codes (or create keys) whose room is gone or
-- has another code (create key); a room found here that is missing from
-- the lifecycle schedule is scheduled now (so the room walk sees it).
-- KEYS[1] shard invite codes (or create keys)  KEYS[2] shard lifecycle schedule
-- KEYS[3..] the hash of each entry's room
-- ARGV[1] the room hash's field that names the entry: "cd" (invite codes)
-- or "ck" (create keys)
-- ARGV[i*2], ARGV[i*2+1] entry i and the room id it maps to (as the walk
-- read it)
-- Reply: {entries dropped, rooms scheduled}
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local field = ARGV[1]
local dropped, scheduled = 0, 0
for i = 1, (#ARGV - 1) / 2 do
  local code, id, room = ARGV[2 * i], ARGV[2 * i + 1], KEYS[i + 2]
  local cd = redis.call('HGET', room, field)
  if redis.call('HGET', KEYS[1], code) == id and cd ~= code then
    redis.call('HDEL', KEYS[1], code)
    dropped = dropped + 1
  elseif cd and not redis.call('ZSCORE', KEYS[2], id) then
    redis.call('ZADD', KEYS[2], now, id)
    scheduled = scheduled + 1
  end
end
return {dropped, scheduled}

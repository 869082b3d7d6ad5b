-- user_repair: the repair walk's look at one user of the shard's user index:
-- room ids listed for the user whose room is gone or no longer has the user
-- are dropped; a listed room that exists but is missing from the lifecycle
-- schedule is scheduled now.
-- KEYS[1] shard user index  KEYS[2] shard lifecycle schedule
-- KEYS[3..] for each listed room: its hash, then its users hash
-- ARGV[1] userId  ARGV[2..] the listed room ids, in KEYS order
-- Reply: {entries dropped, rooms scheduled}
local uid = ARGV[1]
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local gone, dropped, scheduled = {}, 0, 0
for i = 2, #ARGV do
  local id, room, users = ARGV[i], KEYS[2 * i - 1], KEYS[2 * i]
  if redis.call('HEXISTS', users, uid) == 0 then
    gone[id] = true
  elseif not redis.call('ZSCORE', KEYS[2], id) and redis.call('EXISTS', room) == 1 then
    redis.call('ZADD', KEYS[2], now, id)
    scheduled = scheduled + 1
  end
end
-- the list is read again: a room joined since the walk read it stays
local keep = {}
for id in string.gmatch(redis.call('HGET', KEYS[1], uid) or '', '%S+') do
  if gone[id] then dropped = dropped + 1 else keep[#keep + 1] = id end
end
if dropped > 0 then
  if #keep == 0 then
    redis.call('HDEL', KEYS[1], uid)
  else
    redis.call('HSET', KEYS[1], uid, table.concat(keep, ' '))
  end
end
return {dropped, scheduled}

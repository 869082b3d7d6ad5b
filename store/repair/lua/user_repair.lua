-- user_repair: the repair walk's look at a page of the shard's user index:
-- room ids listed for a user whose room is gone or no longer has the user
-- are dropped; a listed room that exists but is missing from the lifecycle
-- schedule is scheduled now.
-- KEYS[1] shard user index  KEYS[2] shard lifecycle schedule
-- KEYS[2i+1], KEYS[2i+2] the hash and the users hash of listed room i
-- ARGV[2i-1], ARGV[2i] the userId and the room id of listed room i
-- Reply: {entries dropped, rooms scheduled}
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local gone, users, scheduled = {}, {}, 0
for i = 1, #ARGV / 2 do
  local uid, id, room, members = ARGV[2 * i - 1], ARGV[2 * i], KEYS[2 * i + 1], KEYS[2 * i + 2]
  if not gone[uid] then
    gone[uid] = {}
    users[#users + 1] = uid
  end
  if redis.call('HEXISTS', members, uid) == 0 then
    gone[uid][id] = true
  elseif not redis.call('ZSCORE', KEYS[2], id) and redis.call('EXISTS', room) == 1 then
    redis.call('ZADD', KEYS[2], now, id)
    scheduled = scheduled + 1
  end
end
-- each list is read again: a room joined since the walk read it stays
local dropped = 0
for _, uid in ipairs(users) do
  local keep, n = {}, 0
  for id in string.gmatch(redis.call('HGET', KEYS[1], uid) or '', '%S+') do
    if gone[uid][id] then n = n + 1 else keep[#keep + 1] = id end
  end
  if n > 0 then
    dropped = dropped + n
    if #keep == 0 then
      redis.call('HDEL', KEYS[1], uid)
    else
      redis.call('HSET', KEYS[1], uid, table.concat(keep, ' '))
    end
  end
end
return {dropped, scheduled}

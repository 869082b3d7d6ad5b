-- holdings_release: corrects a user's holdings (see holdings_reserve) after
-- the rooms were read: drops rooms the user is no longer in, or a
-- reservation whose room script failed, and sets the role of rooms whose
-- ownership changed. An entry is only changed when it still holds the value
-- the caller read, so a reservation made meanwhile is never lost.
-- No prelude.
-- KEYS[1] the user's holdings
-- ARGV[3i-2] room id  ARGV[3i-1] the value read ("*": any)
-- ARGV[3i] "" to drop the entry, or the role to set ("o" or "m")
-- Reply: {"OK", entries changed}
local key, changed = KEYS[1], 0
for i = 1, #ARGV - 2, 3 do
  local room, seen, to = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local cur = redis.call('HGET', key, room)
  if cur and (seen == '*' or cur == seen) then
    if to == '' then
      redis.call('HDEL', key, room)
    else
      redis.call('HSET', key, room, to .. string.sub(cur, 2))
    end
    changed = changed + 1
  end
end
return {'OK', changed}

-- holdings_release: corrects a user's holdings (see holdings_reserve) after
-- the rooms were read: drops rooms the user is no longer in, or a
-- reservation whose room script failed, sets the role of rooms whose
-- ownership changed, and adds rooms the user is in that the holdings lack.
-- An entry is only changed when it still holds the reservation the caller
-- read (its stamp: the role may have changed since, when ownership passed
-- on), so a reservation made meanwhile is never lost. A key left with no
-- room keeps its "#" marker until it expires (an hour after the user's
-- last reservation): it still says "in no room", so the user's next create
-- or join reads this key alone instead of rebuilding it from every shard's
-- user index.
-- No prelude.
-- KEYS[1] the user's holdings
-- ARGV[3i-2] room id  ARGV[3i-1] the value read: only its stamp (after
--         the ":") is compared; "*" any; "+" none: add the entry, with
--         this node's time as its stamp, when the room has none (the key
--         must exist)
-- ARGV[3i] "" to drop the entry, the role to set ("o" or "m"), or "-<µs>"
--         to drop it only if its last reservation is at least that old by
--         this node's clock (older than any room script in flight)
-- Reply: {"OK", entries changed, entries kept for being too young}
local key, changed, young, T = KEYS[1], 0, 0, nil
for i = 1, #ARGV - 2, 3 do
  local room, seen, to = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local cur = redis.call('HGET', key, room)
  if seen == '+' then
    if not cur and redis.call('EXISTS', key) == 1 then
      if not T then T = redis.call('TIME') end
      redis.call('HSET', key, room, to .. ':' .. T[1] .. string.format('%06d', tonumber(T[2])))
      changed = changed + 1
    end
    cur = nil
  end
  local min_age = string.match(to, '^%-(%d+)$')
  if min_age and cur then
    if not T then T = redis.call('TIME') end
    local stamp = tonumber(string.match(cur, ':(%d+)$') or '0')
    if stamp > tonumber(T[1]) * 1000000 + tonumber(T[2]) - tonumber(min_age) then
      cur = nil
      young = young + 1
    end
  end
  if cur and (seen == '*' or string.match(cur, ':(%d+)$') == string.match(seen, ':(%d+)$')) then
    if to == '' or min_age then
      redis.call('HDEL', key, room)
    else
      redis.call('HSET', key, room, to .. string.sub(cur, 2))
    end
    changed = changed + 1
  end
end
return {'OK', changed, young}

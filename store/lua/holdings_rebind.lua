-- holdings_rebind: after a quick-join's script picked and joined its room,
-- turns the reservation the store made under a placeholder id (the room was
-- not known before the script; see Store.pickAndJoin) into the room's
-- entry, with the reservation's stamp and the role the user has in the
-- room (a reservation as owner for a room the script only joined is a
-- member's). The count of the user's rooms does not change, and an
-- owner's becomes a member's at most, so no quota is checked again.
-- No prelude.
-- KEYS[1] the user's holdings (see holdings_reserve)
-- ARGV[1] the placeholder id  ARGV[2] the room id  ARGV[3] role: o or m
-- Reply: {"OK", the room entry's value ("" when the key is gone: the next
--        reservation rebuilds it from the rooms)}
local key, placeholder, room, role = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
if redis.call('EXISTS', key) == 0 then return {'OK', ''} end
local v = redis.call('HGET', key, placeholder)
redis.call('HDEL', key, placeholder)
local cur = redis.call('HGET', key, room)
if cur then return {'OK', cur} end
if v then
  v = role .. string.sub(v, 2)
else
  local T = redis.call('TIME')
  v = role .. ':' .. T[1] .. string.format('%06d', tonumber(T[2]))
end
redis.call('HSET', key, room, v)
return {'OK', v}

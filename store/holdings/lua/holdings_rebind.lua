-- holdings_rebind: after a quick-join's script picked and joined its room,
-- turns the reservation the store made under a placeholder id (the room was
-- not known before the script; see Store.pickAndJoin) into the room's
-- entry, with the reservation's stamp and the role the user has in the
-- room (a reservation as owner for a room the script only joined is a
-- member's). When the room has an entry already (the user was in it, or
-- left it and a leave's correction is still in flight), the entry takes
-- the reservation's stamp, so that the leave's correction (which matches
-- the stamp it read) cannot drop the entry of the room the user is in
-- again; it stays owned if it was (an over-count at most, which a check
-- corrects). The count of the user's rooms does not grow, and an owner's
-- becomes a member's at most, so no quota is checked again. A room id of
-- "" drops the placeholder: the quick-join joined nothing.
-- No prelude.
-- KEYS[1] the user's holdings (see holdings_reserve)
-- ARGV[1] the placeholder id  ARGV[2] the room id ("": none)
-- ARGV[3] role: o or m
-- Reply: {"OK", the room entry's value ("" when the key is gone: the next
--        reservation rebuilds it from the rooms; or no room)}
local key, placeholder, room, role = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
if redis.call('EXISTS', key) == 0 then return {'OK', ''} end
local v = redis.call('HGET', key, placeholder)
redis.call('HDEL', key, placeholder)
if room == '' then return {'OK', ''} end
local stamp
if v then
  stamp = string.match(v, '^%a:(%d+)')
else
  local T = redis.call('TIME')
  stamp = T[1] .. string.format('%06d', tonumber(T[2]))
end
local cur = redis.call('HGET', key, room)
if cur and string.sub(cur, 1, 1) == 'o' then role = 'o' end
v = role .. ':' .. stamp
redis.call('HSET', key, room, v)
return {'OK', v}

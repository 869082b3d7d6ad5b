-- player_remove: a member leaves or the owner kicks a player. The owner
-- leaving passes ownership to the earliest-joined remaining member; the last
-- member leaving closes the room (see remove_player in the prelude).
-- KEYS: prelude, with the indexes.
-- ARGV[7] caller userId  ARGV[8] target playerId ("" = the caller)
-- ARGV[9] reason: left | kicked
-- Reply: {"OK", userId of the new owner when ownership passed on, else ""} |
--        {"ROOM_NOT_FOUND"} | {"NOT_A_MEMBER"} | {"NOT_OWNER"} |
--        {"KICK_SELF"} | {"PLAYER_NOT_FOUND"}
local caller, target_arg, reason = ARGV[7], ARGV[8], ARGV[9]

local p = placement()
if not p then return {'ROOM_NOT_FOUND'} end
local owner = p.ow
local target, target_uid = target_arg, nil
local cp = redis.call('HGET', K_USERS, caller)
if not cp then return deny(p.vi) end
if target_arg == '' then
  target, target_uid = cp, caller
elseif owner ~= cp then
  return {'NOT_OWNER'}
elseif target_arg == cp then
  return {'KICK_SELF'}
else
  if redis.call('HEXISTS', K_PLAYERS, target) == 0 then return {'PLAYER_NOT_FOUND'} end
  target_uid = uid_of(target)
end
if remove_player(target, target_uid, reason, p) or tostring(target) ~= owner then return {'OK', ''} end
return {'OK', uid_of(redis.call('HGET', K_ROOM, 'ow')) or ''}

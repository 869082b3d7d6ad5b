-- player_remove: a member leaves or the owner (or the server) kicks a
-- player, optionally banning the player's user from the room. The owner
-- leaving passes ownership to the earliest-joined remaining member; the last
-- member leaving closes the room (see remove_player in the prelude).
-- KEYS: prelude, with the indexes (KEYS[35]: the room's bans).
-- ARGV[7] caller userId ("" = the server: no membership or owner check; it
-- never leaves)  ARGV[8] target playerId ("" = the caller)
-- ARGV[9] reason: left | kicked
-- ARGV[10] "1": also ban the target's user (a kick only), else ""
-- ARGV[11] most bans the room may hold (a new one past it: BANS_FULL, and
-- nobody is kicked), and most kicks it remembers
-- A kick without a ban is remembered in K_KICKED (the target's user, by
-- when), the last ARGV[11] kicks: the server picks that room for that user
-- no more (a backfill's seat hold, a quick-join), while the user may still
-- join it by id or code.
-- Reply: {"OK", userId of the new owner when ownership passed on, else ""} |
--        {"ROOM_NOT_FOUND"} | {"NOT_A_MEMBER"} | {"NOT_OWNER"} |
--        {"KICK_SELF"} | {"PLAYER_NOT_FOUND"} | {"BANS_FULL"}
local caller, target_arg, reason = ARGV[7], ARGV[8], ARGV[9]
local ban, max_bans = ARGV[10] == '1', tonumber(ARGV[11])

local p = placement()
if not p then return {'ROOM_NOT_FOUND'} end
local owner = p.ow
local target, target_uid = target_arg, nil
local cp = nil
if caller ~= '' then
  cp = redis.call('HGET', K_USERS, caller)
  if not cp then return deny(p.vi) end
elseif target_arg == '' then
  return {'PLAYER_NOT_FOUND'}
end
if target_arg == '' then
  target, target_uid = cp, caller
elseif cp and owner ~= cp then
  return {'NOT_OWNER'}
elseif target_arg == cp then
  return {'KICK_SELF'}
else
  if redis.call('HEXISTS', K_PLAYERS, target) == 0 then return {'PLAYER_NOT_FOUND'} end
  target_uid = uid_of(target)
end
if ban and target_arg ~= '' then
  if redis.call('SISMEMBER', K_BANS, target_uid) == 0 and redis.call('SCARD', K_BANS) >= max_bans then
    return {'BANS_FULL'}
  end
  redis.call('SADD', K_BANS, target_uid)
  redis.call('HSET', K_ROOM, 'bn', '1') -- joins check the bans from now on
elseif target_arg ~= '' and reason == 'kicked' then
  redis.call('ZADD', K_KICKED, now, target_uid)
  if redis.call('ZCARD', K_KICKED) > max_bans then redis.call('ZPOPMIN', K_KICKED) end
end
if remove_player(target, target_uid, reason, p) or tostring(target) ~= owner then return {'OK', ''} end
return {'OK', uid_of(redis.call('HGET', K_ROOM, 'ow')) or ''}

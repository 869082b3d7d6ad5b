-- player_remove: a member leaves, the owner kicks a player, or the janitor
-- removes a disconnected one. The owner leaving passes ownership to the
-- earliest-joined remaining member; the last member leaving closes the room.
-- KEYS: prelude, with the 12 status indexes.
-- ARGV[7] caller userId ("" for the system)  ARGV[8] target playerId ("" = the caller)
-- ARGV[9] reason: left | kicked | disconnected
-- Reply: {"OK"} | {"ROOM_NOT_FOUND"} | {"NOT_A_MEMBER"} | {"NOT_OWNER"} |
--        {"KICK_SELF"} | {"PLAYER_NOT_FOUND"}
local caller, target_arg, reason = ARGV[7], ARGV[8], ARGV[9]

if redis.call('EXISTS', K_ROOM) == 0 then return {'ROOM_NOT_FOUND'} end
local owner = redis.call('HGET', K_ROOM, 'ow')
local target, target_uid = target_arg, nil
if caller ~= '' then
  local cp = redis.call('HGET', K_USERS, caller)
  if not cp then return deny() end
  if target_arg == '' then
    target, target_uid = cp, caller
  elseif owner ~= cp then
    return {'NOT_OWNER'}
  elseif target_arg == cp then
    return {'KICK_SELF'}
  end
end
if not target_uid then
  if redis.call('HEXISTS', K_PLAYERS, target) == 0 then return {'PLAYER_NOT_FOUND'} end
  local users = redis.call('HGETALL', K_USERS)
  for i = 1, #users, 2 do
    if users[i + 1] == target then target_uid = users[i] end
  end
end

redis.call('HDEL', K_PLAYERS, target)
redis.call('HDEL', K_USERS, target_uid)
redis.call('ZREM', K_USERIDX, user_entry(target_uid))
local left = redis.call('HINCRBY', K_ROOM, 'pc', -1)
emit('player_left', ',"playerId":' .. target .. ',"reason":"' .. reason .. '"')
if left == 0 then
  close_room('empty')
  return {'OK'}
end
if target == owner then
  local next_owner
  for _, pid in ipairs(redis.call('HKEYS', K_PLAYERS)) do
    local n = tonumber(pid)
    if not next_owner or n < next_owner then next_owner = n end
  end
  redis.call('HSET', K_ROOM, 'ow', next_owner)
  emit('room_updated', ',"changes":{"ownerPlayerId":' .. next_owner .. '}')
end
return {'OK'}

-- room_delete: the owner (or the server) closes the room; room_closed
-- (reason closed).
-- KEYS: prelude, with the indexes.
-- ARGV[7] caller userId ("" = the server: no membership or owner check)
-- Reply: {"OK", userId...: the room's members as it closed (their
--        room_closed notices)} | {"ROOM_NOT_FOUND"} | {"NOT_A_MEMBER"} | {"NOT_OWNER"}
local caller = ARGV[7]

if redis.call('EXISTS', K_ROOM) == 0 then return {'ROOM_NOT_FOUND'} end
if caller ~= '' then
  local cp = redis.call('HGET', K_USERS, caller)
  if not cp then return deny() end
  if redis.call('HGET', K_ROOM, 'ow') ~= cp then return {'NOT_OWNER'} end
end
return {'OK', unpack(close_room('closed'))}

-- room_join: adds a user to a room, by id or by invite code.
-- KEYS: prelude, with the indexes (playerCount moves the room in the fill
-- index, and out of the joinable ones when it fills up).
-- ARGV[7] userId  ARGV[8] name as a JSON string  ARGV[9] invite code ("" by id)
-- Reply: {"OK", playerId, room, players, users} | {"ROOM_NOT_FOUND"} |
--        {"ROOM_NOT_JOINABLE"} | {"ROOM_FULL"}
local uid, name_json, code = ARGV[7], ARGV[8], ARGV[9]

if redis.call('EXISTS', K_ROOM) == 0 then return {'ROOM_NOT_FOUND'} end
local pid = redis.call('HGET', K_USERS, uid)
if pid then return room_reply(tonumber(pid)) end

local r = redis.call('HMGET', K_ROOM, 'vi', 'cd', 'st', 'lk', 'pc', 'mx')
if code == '' and r[1] == 'private' then return {'ROOM_NOT_FOUND'} end
if code ~= '' and r[2] ~= code then return {'ROOM_NOT_FOUND'} end
if r[3] ~= 'waiting' or r[4] == '1' then return {'ROOM_NOT_JOINABLE'} end
if tonumber(r[5]) >= tonumber(r[6]) then return {'ROOM_FULL'} end
local before = placement()
local new_pid = add_player(uid, name_json)
reindex(before)
return room_reply(new_pid)

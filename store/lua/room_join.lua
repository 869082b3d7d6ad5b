-- room_join: adds a user to a room, by id or by invite code.
-- KEYS: prelude, with the indexes (playerCount moves the room in the fill
-- index, and out of the joinable ones when it fills up).
-- ARGV[7] userId  ARGV[8] name as a JSON string  ARGV[9] invite code ("" by id)
-- A user the room banned gets BANNED (after the checks that hide a
-- private room from those without its code).
-- Reply: {"OK", playerId, roomId} | {"ROOM_NOT_FOUND"} | {"BANNED"} |
--        {"ROOM_NOT_JOINABLE"} | {"ROOM_FULL"}
local uid, name_json, code = ARGV[7], ARGV[8], ARGV[9]

local p = placement()
if not p then return {'ROOM_NOT_FOUND'} end
local pid = redis.call('HGET', K_USERS, uid)
if pid then return {'OK', tonumber(pid), room_id} end

if code == '' and p.vi == 'private' then return {'ROOM_NOT_FOUND'} end
if code ~= '' and p.cd ~= code then return {'ROOM_NOT_FOUND'} end
if redis.call('SISMEMBER', K_BANS, uid) == 1 then return {'BANNED'} end
if p.st ~= 'waiting' or p.lk == '1' then return {'ROOM_NOT_JOINABLE'} end
if p.pc >= p.mx then return {'ROOM_FULL'} end
local new_pid = add_player(uid, name_json, p)
reindex(p, nil, with_count(p, p.pc + 1))
return {'OK', new_pid, room_id}

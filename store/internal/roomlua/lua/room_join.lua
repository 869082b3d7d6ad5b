-- room_join: adds a user to a room, by id or by invite code.
-- KEYS: prelude, with the indexes (playerCount moves the room in the fill
-- index, and out of the joinable ones when it fills up).
-- ARGV[7] userId  ARGV[8] name as a JSON string  ARGV[9] invite code ("" by id)
-- ARGV[10] "p": the server picked the room (a quick-join): a user the room
--   kicked (K_KICKED) gets BANNED too; else "" (quick_join.lua's own ARGV[10]
--   is a number, and its pick has passed over such rooms already)
-- A user the room banned gets BANNED (after the checks that hide a
-- private room from those without its code). A user with a seat reserved
-- (seats_reserve.lua) takes it: the room is never full for them, and a
-- private room needs no code.
-- Reply: {"OK", playerId, roomId[, "added": the user was not a member]} |
--        {"ROOM_NOT_FOUND"} | {"BANNED"} | {"ROOM_NOT_JOINABLE"} | {"ROOM_FULL"}
local uid, name_json, code, picked = ARGV[7], ARGV[8], ARGV[9], ARGV[10] == 'p'

local p = placement()
if not p then return {'ROOM_NOT_FOUND'} end
-- the seat is taken first, one call for a newcomer (the usual case), and
-- given back when the join is refused; a member gets its own playerId
if redis.call('HSETNX', K_USERS, uid, p.sq + 1) == 0 then
  return {'OK', tonumber(redis.call('HGET', K_USERS, uid)), room_id}
end
-- a reservation counts until it is taken or the janitor drops it expired
local reserved = p.rv > 0 and redis.call('HEXISTS', K_RESERVED, uid) == 1
local refusal
if code == '' and p.vi == 'private' and not reserved then refusal = 'ROOM_NOT_FOUND'
elseif code ~= '' and p.cd ~= code then refusal = 'ROOM_NOT_FOUND'
elseif p.bn ~= '0' and redis.call('SISMEMBER', K_BANS, uid) == 1 then refusal = 'BANNED'
elseif picked and redis.call('ZSCORE', K_KICKED, uid) then refusal = 'BANNED'
elseif p.st ~= 'waiting' or p.lk == '1' then refusal = 'ROOM_NOT_JOINABLE'
elseif not reserved and p.pc + p.rv >= p.mx then refusal = 'ROOM_FULL'
end
if refusal then
  redis.call('HDEL', K_USERS, uid)
  return {refusal}
end
local rv = nil
if reserved then
  redis.call('HDEL', K_RESERVED, uid)
  rv = p.rv - 1
end
local new_pid = add_player(uid, name_json, p, true, rv)
reindex(p, nil, with_count(p, p.pc + 1, rv))
return {'OK', new_pid, room_id, 'added'}

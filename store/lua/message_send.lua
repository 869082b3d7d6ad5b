-- message_send: a member (or the server, as player 0) sends a message to the
-- room, or only to the players in "to" (the sender always sees it too). The message event goes to the
-- event log like every event, and to the room's message log, capped apart
-- so history keeps the last messages whatever else happened.
-- KEYS: prelude, without status indexes.
-- ARGV[7] userId ("" = the server: no membership check, "from" is 0)
-- ARGV[8] type as a JSON string  ARGV[9] data (JSON)
-- ARGV[10] message log MAXLEN ~  ARGV[11..] recipient playerIds (none = all)
-- Reply: {"OK", version} | {"ROOM_NOT_FOUND"} | {"NOT_A_MEMBER"} | {"ROOM_FINISHED"} |
--        {"TO_NOT_MEMBER", playerId}
local uid, type_json, data, mlen = ARGV[7], ARGV[8], ARGV[9], ARGV[10]

local r = redis.call('HMGET', K_ROOM, 'vi', 'ver', 'st', 'lb', 'ln', 'lv')
if not r[1] then return {'ROOM_NOT_FOUND'} end
local pid = '0'
if uid ~= '' then
  pid = redis.call('HGET', K_USERS, uid)
  if not pid then return deny(r[1]) end
end
if r[3] == 'finished' then return {'ROOM_FINISHED'} end
know(r[2], r[4], r[5], r[6])
local to = {}
for i = 11, #ARGV do
  if redis.call('HEXISTS', K_PLAYERS, ARGV[i]) == 0 then return {'TO_NOT_MEMBER', ARGV[i]} end
  to[#to + 1] = ARGV[i]
end
local body = ',"message":{"from":' .. pid .. ',"type":' .. type_json .. ',"data":' .. data
if #to > 0 then body = body .. ',"to":[' .. table.concat(to, ',') .. ']' end
local v, ev = emit('message', body .. '}')
redis.call('XADD', K_MESSAGES, 'MAXLEN', '~', mlen, v .. '-0', 'd', ev)
return {'OK', v}

-- message_send: a member (or the server, as player 0) sends a message to the
-- room, or only to the players in "to" (the sender always sees it too). The message event goes to the
-- event log like every event, and to the room's message log, capped apart
-- so history keeps the last messages whatever else happened.
-- KEYS: prelude, without status indexes.
-- ARGV[7] userId ("" = the server: no membership check, "from" is 0)
-- ARGV[8] type as a JSON string  ARGV[9] data (JSON)
-- ARGV[10] message log MAXLEN ~
-- ARGV[11] key: "<Idempotency-Key> <userId>" ("" none)  ARGV[12] the message's digest
-- ARGV[13] how long the room remembers a key (ms)  ARGV[14] the most keys it remembers
-- ARGV[15] the message's messageId ("" none: a message without a key)
-- ARGV[16..] recipient playerIds (none = all)
-- A message sent with a key the room remembers is not sent again: the
-- reply is the first one's version, or KEY_REUSED when its digest differs.
-- The keys: K_ROOM:mkeys (hash key -> "<version> <digest>") and
-- K_ROOM:mkeyt (zset key -> when sent, ms), the oldest forgotten first;
-- deleted with the room (close_room), and expiring ARGV[13] after the last
-- keyed message whatever closes the room (a release of before them).
-- Reply: {"OK", version, the tag of its write} | {"ROOM_NOT_FOUND"} |
--        {"NOT_A_MEMBER"} | {"ROOM_FINISHED"} | {"TO_NOT_MEMBER", playerId} |
--        {"KEY_REUSED"}; a remembered key's tag is its log entry's ("" once
--        trimmed): with the version it names the write (a receipt, which
--        a replay of the key's answer checks, store/idempotency)
local uid, type_json, data, mlen = ARGV[7], ARGV[8], ARGV[9], ARGV[10]
local key, digest = ARGV[11], ARGV[12]
local K_MKEYS, K_MKEYT = K_ROOM .. ':mkeys', K_ROOM .. ':mkeyt'

local r = redis.call('HMGET', K_ROOM, 'vi', 'ver', 'st', 'lb', 'ln', 'lv')
if not r[1] then return {'ROOM_NOT_FOUND'} end
if key ~= '' then -- sent already, within the window: its version, whatever happened since
  -- (both keys read before any write: in a Cluster slot on the move, a
  -- key already gone fails the call here, not after the event)
  local seen, sent = redis.call('HGET', K_MKEYS, key), redis.call('ZSCORE', K_MKEYT, key)
  if seen and sent and tonumber(sent) > now - tonumber(ARGV[13]) then
    local v, d = string.match(seen, '^(%d+) (%S+)$')
    if d ~= digest then return {'KEY_REUSED'} end
    local e, g = redis.call('XRANGE', K_LOG, v .. '-0', v .. '-0')[1], ''
    for i = 1, e and #e[2] or 0, 2 do
      if e[2][i] == 'g' then g = e[2][i + 1] end
    end
    return {'OK', tonumber(v), g}
  end
end
local pid = '0'
if uid ~= '' then
  pid = redis.call('HGET', K_USERS, uid)
  if not pid then return deny(r[1]) end
end
if r[3] == 'finished' then return {'ROOM_FINISHED'} end
know(r[2], r[4], r[5], r[6])
local to = {}
for i = 16, #ARGV do
  if redis.call('HEXISTS', K_PLAYERS, ARGV[i]) == 0 then return {'TO_NOT_MEMBER', ARGV[i]} end
  to[#to + 1] = ARGV[i]
end
local body = ',"message":{"from":' .. pid .. ',"type":' .. type_json .. ',"data":' .. data
if #to > 0 then body = body .. ',"to":[' .. table.concat(to, ',') .. ']' end
if ARGV[15] ~= '' then body = body .. ',"messageId":"' .. ARGV[15] .. '"' end
local v, ev = emit('message', body .. '}')
redis.call('XADD', K_MESSAGES, 'MAXLEN', '~', mlen, v .. '-0', 'd', ev)
if key ~= '' then
  redis.call('HSET', K_MKEYS, key, v .. ' ' .. digest)
  redis.call('ZADD', K_MKEYT, now, key)
  -- forget the keys past the window or the cap, a few a call (each send
  -- adds one)
  local n = redis.call('ZCARD', K_MKEYT)
  local drop = math.max(n - tonumber(ARGV[14]), redis.call('ZCOUNT', K_MKEYT, '-inf', now - tonumber(ARGV[13])))
  if drop > 0 then
    local old = redis.call('ZRANGE', K_MKEYT, 0, math.min(drop, 16) - 1)
    redis.call('HDEL', K_MKEYS, unpack(old))
    redis.call('ZREM', K_MKEYT, unpack(old))
  end
  redis.call('PEXPIRE', K_MKEYS, ARGV[13])
  redis.call('PEXPIRE', K_MKEYT, ARGV[13])
end
return {'OK', v, tag}

-- Prelude prepended to every mutation script (see scripts.go).
--
-- Every mutation script gets the same KEYS, all built by keys.go from the
-- room's shard tag, so every key shares one hash slot:
--   KEYS[1]  room hash          KEYS[5]  room event log (stream)
--   KEYS[2]  room state hash    KEYS[6]  shard user index (zset "<userId>\t<roomId>")
--   KEYS[3]  players hash       KEYS[7]  shard invite codes (hash code -> roomId)
--   KEYS[4]  users hash         KEYS[8]  shard clock (string, last createdAt in µs)
--   KEYS[9..20] status indexes: waiting, playing, finished, each as
--               (all, mode, region, mode+region); only passed to scripts that
--               may change index membership.
-- and the same first ARGV:
--   ARGV[1] room id   ARGV[2] channel   ARGV[3] PUBLISH or SPUBLISH
--   ARGV[4] event tag ARGV[5] log MAXLEN ~   ARGV[6] TTL (s) of a closed room's log
-- Replies are arrays whose first element is "OK" or an error code.
local K_ROOM, K_STATE, K_PLAYERS, K_USERS = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local K_LOG, K_USERIDX, K_CODES, K_CLOCK = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local room_id, channel, pubcmd = ARGV[1], ARGV[2], ARGV[3]
local tag, maxlen, closed_ttl = ARGV[4], ARGV[5], ARGV[6]

local T = redis.call('TIME')
local now_us = tonumber(T[1]) * 1000000 + tonumber(T[2])
local now = math.floor(now_us / 1000)

-- num formats an integer-valued number without exponent, whatever the Lua.
local function num(n)
  return string.format('%.0f', n)
end

-- iso formats epoch milliseconds as RFC 3339 UTC, e.g. 2026-11-21T20:11:06.123Z
-- (days to civil date after H. Hinnant's algorithm).
local function iso(ms)
  local s = math.floor(ms / 1000)
  local msec = ms - s * 1000
  local days = math.floor(s / 86400)
  local rem = s - days * 86400
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return string.format('%04.0f-%02.0f-%02.0fT%02.0f:%02.0f:%02.0f.%03.0fZ', y, m, d,
    math.floor(rem / 3600), math.floor((rem % 3600) / 60), rem % 60, msec)
end

-- emit bumps the room version, appends the event to the log (entry id
-- "<version>-0") and publishes "<version> <tag> <json>". body holds the
-- event's own fields, each preceded by a comma. Returns the version.
local function emit(etype, body)
  local v = redis.call('HINCRBY', K_ROOM, 'ver', 1)
  redis.call('HSET', K_ROOM, 'up', num(now))
  local ev = '{"type":"' .. etype .. '","roomId":"' .. room_id .. '","version":' .. v ..
    ',"ts":"' .. iso(now) .. '"' .. body .. '}'
  redis.call('XADD', K_LOG, 'MAXLEN', '~', maxlen, v .. '-0', 'g', tag, 'd', ev)
  redis.call(pubcmd, channel, v .. ' ' .. tag .. ' ' .. ev)
  return v
end

local INDEX_BASE = {waiting = 9, playing = 13, finished = 17}

local function index_add(status, score)
  local base = INDEX_BASE[status]
  for i = 0, 3 do redis.call('ZADD', KEYS[base + i], score, room_id) end
end

local function index_rem(status)
  local base = INDEX_BASE[status]
  for i = 0, 3 do redis.call('ZREM', KEYS[base + i], room_id) end
end

-- reindex moves the room between status indexes when its (visibility,
-- status) changed: only public rooms are indexed.
local function reindex(old_vis, old_st, new_vis, new_st, score)
  if old_vis == new_vis and old_st == new_st then return end
  if old_vis == 'public' then index_rem(old_st) end
  if new_vis == 'public' then index_add(new_st, score) end
end

local function user_entry(uid)
  return uid .. '\t' .. room_id
end

-- deny is the answer to a caller who is not a member: private rooms do not
-- exist for them.
local function deny()
  if redis.call('HGET', K_ROOM, 'vi') == 'private' then return {'ROOM_NOT_FOUND'} end
  return {'NOT_A_MEMBER'}
end

local function room_reply(extra)
  return {'OK', extra, redis.call('HGETALL', K_ROOM), redis.call('HGETALL', K_PLAYERS),
    redis.call('HGETALL', K_USERS)}
end

-- add_player makes uid the next player (playerIds are never reused) and
-- emits player_joined. Returns the playerId.
local function add_player(uid, name_json)
  local pid = redis.call('HINCRBY', K_ROOM, 'sq', 1)
  local p = '{"playerId":' .. pid .. ',"name":' .. name_json .. ',"joinedAt":"' .. iso(now) .. '"}'
  redis.call('HSET', K_PLAYERS, pid, p)
  redis.call('HSET', K_USERS, uid, pid)
  redis.call('HINCRBY', K_ROOM, 'pc', 1)
  redis.call('ZADD', K_USERIDX, 0, user_entry(uid))
  emit('player_joined', ',"player":' .. string.sub(p, 1, -2) .. ',"connected":false}')
  return pid
end

-- close_room emits room_closed, removes the room from every index and
-- deletes it. The log stays for closed_ttl seconds so streams can read the
-- final event.
local function close_room(reason)
  local r = redis.call('HMGET', K_ROOM, 'vi', 'st', 'cd')
  emit('room_closed', ',"reason":"' .. reason .. '"')
  if r[1] == 'public' then index_rem(r[2]) end
  if r[3] then redis.call('HDEL', K_CODES, r[3]) end
  for _, uid in ipairs(redis.call('HKEYS', K_USERS)) do
    redis.call('ZREM', K_USERIDX, user_entry(uid))
  end
  redis.call('DEL', K_ROOM, K_STATE, K_PLAYERS, K_USERS)
  redis.call('EXPIRE', K_LOG, closed_ttl)
end

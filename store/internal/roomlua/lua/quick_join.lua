-- quick_join: picks the room a quick-join of one (mode, region) goes into
-- and joins it, in one script on the pair's home shard, so concurrent
-- callers never lose a race for the same room and never retry. Runs before
-- the prelude's begin() binds the keys and arguments: the call runs this
-- part, begin(), then room_join.lua's or room_create.lua's body
-- (scripts.go; a function of the library, as the other mutations), and
-- this part fills in the picked room's keys and id, so the prelude and
-- room_join then run as for a join of that room by id.
-- KEYS: the prelude's, with the indexes of the (mode, region), built for a
--   room id of "" (QuickJoinCall): every key that starts with KEYS[1] (the
--   room hash's name up to the id) is the picked room's once the id is
--   appended there. KEYS[28] the (mode, region)'s joinable index, KEYS[32]
--   its fill index, KEYS[35] the bans (all in the pair's home shard).
-- ARGV: the prelude's, with ARGV[1] "" and ARGV[2] the room channel's name
--   up to the id; ARGV[7] userId  ARGV[8] name as a JSON string  ARGV[9] ""
--   (room_join's); ARGV[10] n: 0 to take the fill order (fullest first,
--   then oldest), else ARGV[11 .. 10+n] the candidates to try in order
--   (the rooms of the fill order's top that match the caller's attribute
--   filters, read by the store beforehand);
--   ARGV[11+n] "" (never create), or the id of the room to create when
--   nothing is joined, followed by room_create's ARGV[7..] for it.
-- A room that banned or kicked the user (its K_KICKED, the room hash's
-- name + ":kicked") is passed over; a fill entry whose room is
-- gone (a fault or an old release left it) is removed from the room's
-- joinable and fill indexes at every level (KEYS[25..32]) and passed over
-- (candidates need not be: their attributes matched, so the room was
-- there, and its deletion took its entries); the walk of the fill order
-- stops after QJ_SCAN entries. When nothing is joined and ARGV[11+n] names a
-- room, that room is created (room_create.lua, the caller its owner) in the
-- same script: concurrent callers that found the last room full do not all
-- create rooms only to be refused but one.
-- Reply: room_join's {"OK", playerId, roomId} | room_create's {"OK",
--   playerId, roomId, "created"} or {"ID_TAKEN"} or {"CODE_TAKEN"} |
--   {"NONE"} (nothing to join, nothing to create) | {"NONE_BANNED"} (the
--   same, a room having been passed over for a ban or a kick) | {"TAKEN"} (every
--   candidate stopped being joinable, or the walk's budget went on gone
--   entries it dropped: read them again)
local QJ_SCAN = 256
local qj_base, qj_uid, qj_n = KEYS[1], ARGV[7], tonumber(ARGV[10])
local qj_new = ARGV[11 + qj_n]
local qj_bans = string.sub(KEYS[35], #qj_base + 1)
local qj_pick, qj_banned = nil, false

-- qj_gone drops the entries of a room whose hash is gone (member: its
-- fill member) and says so.
local function qj_gone(id, member)
  if redis.call('EXISTS', qj_base .. id) == 1 then return false end
  for i = 25, 28 do redis.call('ZREM', KEYS[i], id) end
  for i = 29, 32 do redis.call('ZREM', KEYS[i], member) end
  return true
end

local function qj_allowed(id)
  if redis.call('SISMEMBER', qj_base .. id .. qj_bans, qj_uid) == 1 or
      redis.call('ZSCORE', qj_base .. id .. ':kicked', qj_uid) then
    qj_banned = true
    return false
  end
  return true
end

if qj_n == 0 then
  local off, walked, dropped, ended = 0, 0, 0, false
  while not qj_pick and walked < QJ_SCAN do
    local top = redis.call('ZRANGE', KEYS[32], '-', '+', 'BYLEX', 'LIMIT', off, 16)
    walked = walked + #top
    for _, m in ipairs(top) do
      local id = string.match(m, '([^|]*)$')
      if qj_gone(id, m) then
        off, dropped = off - 1, dropped + 1 -- the entries after it moved up
      elseif qj_allowed(id) then
        qj_pick = id
        break
      end
    end
    if #top < 16 then ended = true break end
    off = off + 16
  end
  -- the walk's budget went on gone entries (now dropped) before the
  -- index ended: read again rather than say there is nothing to join
  if not qj_pick and dropped > 0 and not ended then return {'TAKEN'} end
else
  for i = 11, 10 + qj_n do
    if redis.call('ZSCORE', KEYS[28], ARGV[i]) and qj_allowed(ARGV[i]) then
      qj_pick = ARGV[i]
      break
    end
  end
  if not qj_pick and not qj_banned then return {'TAKEN'} end
end
local qj_create = false
if not qj_pick then
  if qj_new == '' then return {qj_banned and 'NONE_BANNED' or 'NONE'} end
  -- room_create's layout: the prelude's ARGV, then its own from ARGV[12+n]
  qj_create, qj_pick = true, qj_new
  local from, len = 12 + qj_n, #ARGV
  for i = from, len do ARGV[7 + i - from] = ARGV[i] end
  for i = len, 7 + len - from + 1, -1 do ARGV[i] = nil end
end

for i = 1, #KEYS do
  if string.sub(KEYS[i], 1, #qj_base) == qj_base then
    KEYS[i] = qj_base .. qj_pick .. string.sub(KEYS[i], #qj_base + 1)
  end
end
ARGV[1], ARGV[2] = qj_pick, ARGV[2] .. qj_pick

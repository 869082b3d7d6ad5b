-- room_create: stores a new room with its creator as owner, player 1.
-- KEYS: prelude, with the indexes.
-- ARGV[7] name  ARGV[8] mode  ARGV[9] region  ARGV[10] visibility
-- ARGV[11] maxPlayers  ARGV[12] statePolicy  ARGV[13] attributes JSON
-- ARGV[14] invite code ("" for public)  ARGV[15] creator userId
-- ARGV[16] creator name as a JSON string  ARGV[17] state bytes ("sb"; its
-- keys, "sk" counted at stateVersion "kv" 0, are the pairs of ARGV[20..])
-- ARGV[18] "1": only when no joinable room of the same mode and region
-- exists (quick-join; gone rooms' entries at the fill index's head are
-- dropped, up to 16, and do not count); "k<digest>": a keyed create
-- (rooms.NewRoom.Key), the digest of its creator, key and body: the room
-- the shard's create keys (K_CKEYS) name for it, when the creator is in
-- it, is answered {"OK", playerId, "found", roomId} and nothing is made
-- (the create run again after its answer was lost); else the new room is
-- recorded there for it (field "ck" of the room hash; close_room drops the
-- entry); else ""
-- ARGV[19] when the janitor first looks at the room: ms from now, or "inf"
-- ARGV[20..] state key, value pairs
-- Reply: {"OK", 1} | {"OK", playerId, "found", roomId} | {"ID_TAKEN"} |
--        {"CODE_TAKEN"} | {"JOINABLE_EXISTS"}
local name, mode, region, vis = ARGV[7], ARGV[8], ARGV[9], ARGV[10]
local max, policy, attrs, code = ARGV[11], ARGV[12], ARGV[13], ARGV[14]
local uid, name_json, state_bytes, only_if_none = ARGV[15], ARGV[16], ARGV[17], ARGV[18]
local first_check = ARGV[19]
local ck = string.match(only_if_none, '^k(.+)$')

-- a keyed create's first run's room, while its creator is in it
if ck then
  local prev = redis.call('HGET', K_CKEYS, ck)
  local pid = prev and redis.call('HGET', string.sub(K_ROOM, 1, #K_ROOM - #room_id) .. prev .. ':users', uid)
  if pid then return {'OK', tonumber(pid), 'found', prev} end
end

-- an id is never reused: a closed room's log, kept a while for streams
-- to read its end, keeps the id taken (a match room's repair after the
-- room closed would start a second room at version 0 on its log)
if redis.call('EXISTS', K_ROOM, K_LOG) > 0 then return {'ID_TAKEN'} end
-- the fill index of this mode and region holds every joinable room of it;
-- a head entry whose room is gone (a fault or an old release left it) is
-- removed from the room's joinable and fill indexes (as quick_join.lua
-- does), up to 16 a call, and not taken for a joinable room
if only_if_none == '1' then
  local base = string.sub(K_ROOM, 1, #K_ROOM - #room_id)
  for i = 1, 17 do
    local head = redis.call('ZRANGE', KEYS[FILL_BASE + 3], 0, 0)[1]
    if not head then break end
    local id = string.match(head, '([^|]*)$')
    if i == 17 or redis.call('EXISTS', base .. id) == 1 then return {'JOINABLE_EXISTS'} end
    for j = 0, 3 do
      redis.call('ZREM', KEYS[JOINABLE_BASE + j], id)
      redis.call('ZREM', KEYS[FILL_BASE + j], head)
    end
  end
end
if code ~= '' and redis.call('HSETNX', K_CODES, code, room_id) == 0 then return {'CODE_TAKEN'} end

-- createdAt in µs, strictly increasing within the shard: the index score,
-- unique per shard so cursors can resume exactly.
local created = now_us
local last = tonumber(redis.call('GET', K_CLOCK) or '0')
if created <= last then created = last + 1 end
redis.call('SET', K_CLOCK, num(created))

redis.call('HSET', K_ROOM, 'n', name, 'm', mode, 'r', region, 'vi', vis, 'st', 'waiting',
  'lk', '0', 'mx', max, 'pc', '0', 'ow', '1', 'sq', '0', 'ver', '0', 'sv', '0', 'po', policy, 'bn', '0',
  'at', attrs, 'cr', num(created), 'up', num(now), 'sb', state_bytes,
  'sk', tostring((#ARGV - 19) / 2), 'kv', '0')
if code ~= '' then redis.call('HSET', K_ROOM, 'cd', code) end
if ck then
  redis.call('HSET', K_ROOM, 'ck', ck)
  redis.call('HSET', K_CKEYS, ck, room_id)
end
known_ver, known_lb, known_ln = 0, 0, 0 -- a new room (ids are never reused, above): an empty log
if #ARGV > 19 then redis.call('HSET', K_STATE, unpack(ARGV, 20)) end
local pid = add_player(uid, name_json, {sq = 0, pc = 0, cr = num(created)})
reindex(nil)
if first_check == 'inf' then
  redis.call('ZADD', K_ROOMS_DUE, '+inf', room_id)
else
  redis.call('ZADD', K_ROOMS_DUE, now + tonumber(first_check), room_id)
end
return {'OK', pid}

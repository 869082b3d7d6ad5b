-- room_update: the owner (or the server) changes name, status, locked, maxPlayers,
-- visibility or attributes. Only fields whose value changes are written and
-- reported in one room_updated event; no change, no event.
-- KEYS: prelude, with the indexes.
-- ARGV[7] caller userId ("" = the server: no membership or owner check)
-- ARGV[8] name ("" = unchanged)  ARGV[9] name as JSON
-- ARGV[10] status ("" = unchanged)  ARGV[11] locked ("", "0", "1")
-- ARGV[12] maxPlayers ("" = unchanged)  ARGV[13] visibility ("" = unchanged)
-- ARGV[14] attributes JSON ("" = unchanged)  ARGV[15] new invite code, used
-- when the room becomes private
-- A finished room is read-only until the janitor closes it: any change but
-- a status change (INVALID_TRANSITION) is ROOM_FINISHED. Finishing records
-- when ("fa", ms) and asks the janitor to look at the room now, so it
-- schedules the close after the retention.
-- Reply: {"OK", 0} | {"ROOM_NOT_FOUND"} | {"NOT_A_MEMBER"} |
--        {"NOT_OWNER"} | {"INVALID_TRANSITION"} | {"MAX_BELOW_COUNT"} |
--        {"ROOM_FINISHED"} | {"CODE_TAKEN"}
local caller, name, name_json, status = ARGV[7], ARGV[8], ARGV[9], ARGV[10]
local locked, max, vis, attrs, new_code = ARGV[11], ARGV[12], ARGV[13], ARGV[14], ARGV[15]

local ALLOWED = {waiting = {playing = true, finished = true}, playing = {waiting = true, finished = true}}

local before = placement()
if not before then return {'ROOM_NOT_FOUND'} end
if caller ~= '' then
  local cp = redis.call('HGET', K_USERS, caller)
  if not cp then return deny(before.vi) end
  if before.ow ~= cp then return {'NOT_OWNER'} end
end
local r = redis.call('HMGET', K_ROOM, 'n', 'at', 'mx')
local cur = {n = r[1], at = r[2], mx = r[3], st = before.st, lk = before.lk, vi = before.vi,
  pc = before.pc, cd = before.cd}

if status ~= '' and status ~= cur.st and not (ALLOWED[cur.st] and ALLOWED[cur.st][status]) then
  return {'INVALID_TRANSITION'}
end
if cur.st == 'finished' then
  if (name ~= '' and name ~= cur.n) or (locked ~= '' and locked ~= cur.lk) or
      (max ~= '' and max ~= cur.mx) or (vis ~= '' and vis ~= cur.vi) or (attrs ~= '' and attrs ~= cur.at) then
    return {'ROOM_FINISHED'}
  end
  return {'OK', 0}
end
if max ~= '' and tonumber(max) < tonumber(cur.pc) + before.rv then return {'MAX_BELOW_COUNT'} end
local going_private = vis == 'private' and cur.vi ~= 'private'
if going_private and redis.call('HSETNX', K_CODES, new_code, room_id) == 0 then
  return {'CODE_TAKEN'}
end

local changes = {}
local function set(field, value, json)
  redis.call('HSET', K_ROOM, field, value)
  changes[#changes + 1] = json
end
if name ~= '' and name ~= cur.n then set('n', name, '"name":' .. name_json) end
if status ~= '' and status ~= cur.st then
  set('st', status, '"status":"' .. status .. '"')
  if status == 'finished' then
    redis.call('HSET', K_ROOM, 'fa', num(now))
    redis.call('ZADD', K_ROOMS_DUE, now, room_id)
  end
end
if locked ~= '' and locked ~= cur.lk then
  set('lk', locked, '"locked":' .. (locked == '1' and 'true' or 'false'))
end
if max ~= '' and max ~= cur.mx then set('mx', max, '"maxPlayers":' .. max) end
if attrs ~= '' and attrs ~= cur.at then set('at', attrs, '"attributes":' .. attrs) end
if vis ~= '' and vis ~= cur.vi then
  set('vi', vis, '"visibility":"' .. vis .. '"')
  if going_private then
    set('cd', new_code, '"inviteCode":"' .. new_code .. '"')
  else
    if cur.cd then redis.call('HDEL', K_CODES, cur.cd) end
    redis.call('HDEL', K_ROOM, 'cd')
    changes[#changes + 1] = '"inviteCode":null'
  end
end
if #changes == 0 then return {'OK', 0} end

emit('room_updated', ',"changes":{' .. table.concat(changes, ',') .. '}')
reindex(before)
return {'OK', 0}

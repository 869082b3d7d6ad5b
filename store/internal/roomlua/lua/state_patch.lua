-- state_patch: a member (or the server) merge-patches the room state; one
-- state event ("by": the member's playerId, 0 for the server).
-- KEYS: prelude, without status indexes.
-- ARGV[7] caller userId ("" = the server: no membership check, any key)
-- ARGV[8] If-Match stateVersion (-1 any, -2 never)
-- ARGV[9] max keys  ARGV[10] max bytes (keys + values)  ARGV[11] n, the number of sets
-- ARGV[12 .. 11+2n] key, JSON value pairs to set; the rest: keys to delete
-- Reply: {"OK", version, stateVersion} | {"ROOM_NOT_FOUND"} | {"NOT_A_MEMBER"} | {"ROOM_FINISHED"} |
--        {"STATE_KEY_FORBIDDEN"} | {"VERSION_MISMATCH"} | {"PAYLOAD_TOO_LARGE"}
local caller, if_match = ARGV[7], tonumber(ARGV[8])
local max_keys, max_bytes, nset = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local first_del = 12 + 2 * nset

local r = redis.call('HMGET', K_ROOM, 'ver', 'sv', 'po', 'ow', 'sb', 'vi', 'st', 'lb', 'ln', 'lv', 'sk', 'kv')
if not r[6] then return {'ROOM_NOT_FOUND'} end
local pid = '0'
if caller ~= '' then
  pid = redis.call('HGET', K_USERS, caller)
  if not pid then return deny(r[6]) end
end
if r[7] == 'finished' then return {'ROOM_FINISHED'} end
know(r[1], r[8], r[9], r[10])

if caller ~= '' and r[3] == 'owner' and r[4] ~= pid then
  local prefix = 'player_' .. pid .. '_'
  for i = 12, #ARGV, 1 do
    local is_key = i >= first_del or (i - 12) % 2 == 0
    if is_key and string.sub(ARGV[i], 1, #prefix) ~= prefix then return {'STATE_KEY_FORBIDDEN'} end
  end
end
if if_match ~= -1 and if_match ~= tonumber(r[2]) then return {'VERSION_MISMATCH'} end
if #ARGV < 12 then return {'OK', tonumber(r[1]), tonumber(r[2])} end

-- the state's keys and bytes, as the room hash counts them ("sk", "sb");
-- "sk" holds at the stateVersion it was counted at ("kv"): a room created
-- before them, or patched since by an older release (which moves "sv"
-- alone), has its keys counted
local keys, bytes = r[12] == r[2] and tonumber(r[11]) or redis.call('HLEN', K_STATE), tonumber(r[5])
local set, sets, dels = {}, {}, {}
for i = 12, first_del - 1, 2 do
  local k, v = ARGV[i], ARGV[i + 1]
  local old = redis.call('HSTRLEN', K_STATE, k)
  if old > 0 then bytes = bytes - old - #k else keys = keys + 1 end
  bytes = bytes + #k + #v
  set[#set + 1], set[#set + 2] = k, v
  sets[#sets + 1] = '"' .. k .. '":' .. v
end
for i = first_del, #ARGV do
  local k = ARGV[i]
  local old = redis.call('HSTRLEN', K_STATE, k)
  if old > 0 then bytes, keys = bytes - old - #k, keys - 1 end
  dels[#dels + 1] = '"' .. k .. '"'
end
if keys > max_keys or bytes > max_bytes then return {'PAYLOAD_TOO_LARGE'} end

if #set > 0 then redis.call('HSET', K_STATE, unpack(set)) end
if first_del <= #ARGV then redis.call('HDEL', K_STATE, unpack(ARGV, first_del)) end
local sv = tonumber(r[2]) + 1
local v = emit('state', ',"by":' .. pid .. ',"set":{' .. table.concat(sets, ',') ..
  '},"del":[' .. table.concat(dels, ',') .. '],"stateVersion":' .. sv, 'sb', bytes, 'sk', keys, 'kv', sv, 'sv', sv)
return {'OK', v, sv}

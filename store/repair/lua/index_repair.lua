-- index_repair: the repair walk's look at entries of one index key: each
-- entry whose room is gone, or whose room does not belong in this key as it
-- is now (status, visibility, joinability, mode, region, exact fill member,
-- createdAt score), is removed. A room missing from a key it belongs in is
-- room_repair.lua's; a room found here that is missing from the lifecycle
-- schedule is scheduled now (so the room walk sees it).
-- KEYS[1] the index key  KEYS[2] shard lifecycle schedule
-- KEYS[3..] the hash of each entry's room (same shard)
-- ARGV[1] kind: "waiting", "playing", "finished", "joinable" or "fill"
-- ARGV[2] the key's mode ("" any)  ARGV[3] the key's region ("" any)
-- ARGV[4..] the entries (room ids; fill members for "fill")
-- Reply: {entries removed, rooms scheduled}
-- FILL_SEATS is rooms.MaxPlayersLimit: Go writes it in (layout.FillLua).
local FILL_SEATS = 100
local key, kind, mode, region = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local removed, scheduled = 0, 0
for i = 4, #ARGV do
  local member = ARGV[i]
  local id = kind == 'fill' and string.match(member, '|([^|]+)$') or member
  local r = redis.call('HMGET', KEYS[i - 1], 'vi', 'st', 'lk', 'pc', 'mx', 'cr', 'm', 'r', 'rv')
  if r[1] and not redis.call('ZSCORE', KEYS[2], id) then
    redis.call('ZADD', KEYS[2], now, id)
    scheduled = scheduled + 1
  end
  local ok = r[1] == 'public' and (mode == '' or r[7] == mode) and (region == '' or r[8] == region)
  if ok then
    -- joinable and its fill member as prelude.lua's joinable and fill_member
    local taken = tonumber(r[4]) + (tonumber(r[9]) or 0)
    local open = r[2] == 'waiting' and r[3] ~= '1' and taken < tonumber(r[5])
    local score = redis.call('ZSCORE', key, member)
    if kind == 'fill' then
      ok = open and member == string.format('%03d', FILL_SEATS - taken) .. '|' ..
        string.rep('0', 17 - #r[6]) .. r[6] .. '|' .. id
    elseif kind == 'joinable' then
      ok = open and score and tonumber(score) == tonumber(r[6])
    else
      ok = r[2] == kind and score and tonumber(score) == tonumber(r[6])
    end
  end
  if not ok and redis.call('ZREM', key, member) == 1 then removed = removed + 1 end
end
return {removed, scheduled}

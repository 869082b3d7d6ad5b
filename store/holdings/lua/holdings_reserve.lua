-- holdings_reserve: reserves a room in a user's holdings before the room
-- script that makes the user a member (create, join), so the rooms one user
-- owns and is in at once stay within their quotas however many of the
-- user's requests run at once, on however many instances: every reservation
-- of the user goes through this one key, in the user's own slot.
-- No prelude.
-- KEYS[1] the user's holdings (hash: "#" -> "1" marks the key as built
--         from every shard, "#" -> "p:<µs>" as built from some only (a
--         Cluster master down: its rooms missing), last read at <µs>;
--         roomId -> "<o|m>:<µs of the last reservation>", o: owned, then
--         "^" when that reservation re-stamped a room held already and its
--         join has not settled it yet, then the notes of holdings_release:
--         "~<µs>"..., "-<µs>"...)
-- ARGV[1] room id, or "": only check that the user may take one more room
--         as role (the same answers; nothing reserved, but a cold key is
--         built from the seed)
-- ARGV[2] role: "o" (the user creates it) or "m"
-- ARGV[3] rooms owned at most (0: no limit)  ARGV[4] rooms joined at most
-- ARGV[5] the key's TTL (ms)
-- ARGV[6] "1": a record (the room script ran: the user is in the room, or
--         may be), not a reservation before it; else ""
-- ARGV[7] "seed" when ARGV[9..] follow, read from every shard; "part"
--         when they follow read from some shards only; else ""
-- ARGV[8] how long (µs) a key built from some shards only is counted as
--         it is: past that, a reservation that checks a limit asks for
--         the rooms again
-- ARGV[9..] roomId, role pairs the user holds, read from the rooms, to
--           build a missing key from, or to add to a key built from some
--           shards only (the rooms it lacks; its entries are kept: they
--           hold reservations made since)
-- Reply: {"OK", value written, "1" new | "0" held before[, the value before:
--        held before]} | {"COLD"} (no key: read the user's rooms and call
--        again with the seed) | {"PARTIAL"} (a key built from some shards
--        only, read over ARGV[8] ago, and a limit to check: the same) |
--        {"OWNED_ROOMS_LIMIT", now µs, roomId, value, ...} |
--        {"JOINED_ROOMS_LIMIT", now µs, roomId, value, ...}
local key, room, role = KEYS[1], ARGV[1], ARGV[2]
local max_owned, max_joined, ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local T = redis.call('TIME')
local now = T[1] .. string.format('%06d', tonumber(T[2]))

local seed, mark = ARGV[7], redis.call('HGET', key, '#')
-- a key built from some shards only: the rooms read later added to it
-- (none dropped: it may hold reservations made since), marked whole once
-- every shard was read
local partial = mark and mark ~= '1'
if redis.call('EXISTS', key) == 0 or (partial and seed ~= '') then
  if seed == '' then return {'COLD'} end
  redis.call('HSET', key, '#', seed == 'seed' and '1' or ('p:' .. now))
  for i = 9, #ARGV - 1, 2 do redis.call('HSETNX', key, ARGV[i], ARGV[i + 1] .. ':' .. now) end
  -- at once: a refusal below returns before the other PEXPIREs
  redis.call('PEXPIRE', key, ttl)
end

local cur = room ~= '' and redis.call('HGET', key, room)
if cur then
  local r = string.sub(cur, 1, 1)
  if role == 'o' then r = 'o' end
  local v = r .. ':' .. now
  -- a join in flight of a room held already: its Release or Record
  -- settles it (holdings_release: a leave's correction notes it, not drops)
  if ARGV[6] ~= '1' then v = v .. '^' end
  redis.call('HSET', key, room, v)
  redis.call('PEXPIRE', key, ttl)
  return {'OK', v, '0', cur}
end

-- counted as it is for a while (a master down fails every read of it)
if partial and seed == '' and (max_owned > 0 or max_joined > 0)
    and tonumber(now) - tonumber(string.match(mark, '^p:(%d+)$') or '0') >= tonumber(ARGV[8]) then
  return {'PARTIAL'}
end
local all = redis.call('HGETALL', key)
local joined, owned = 0, 0
for i = 1, #all, 2 do
  if all[i] ~= '#' then
    joined = joined + 1
    if string.sub(all[i + 1], 1, 1) == 'o' then owned = owned + 1 end
  end
end
local over
if role == 'o' and max_owned > 0 and owned >= max_owned then
  over = 'OWNED_ROOMS_LIMIT'
elseif max_joined > 0 and joined >= max_joined then
  over = 'JOINED_ROOMS_LIMIT'
end
if over then
  local out = {over, now}
  for i = 1, #all do out[#out + 1] = all[i] end
  return out
end
if room == '' then return {'OK', '', '0'} end
local v = role .. ':' .. now
redis.call('HSET', key, room, v)
redis.call('PEXPIRE', key, ttl)
return {'OK', v, '1'}

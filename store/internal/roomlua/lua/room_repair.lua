-- room_repair: the repair walk's look at one room of the shard's lifecycle
-- schedule. Puts the room in exactly the status and joinable indexes its
-- placement calls for (with its createdAt score) and its exact fill member
-- in the fill indexes; lists it under each of its users in the user index;
-- maps its invite code to it; keeps its presence due time no later than its
-- earliest presence entry. A room that is gone leaves the schedules.
-- Stale fill members of other player counts and entries in keys of other
-- modes or regions are the index walk's (index_repair.lua).
-- KEYS: prelude, with the indexes and the schedule.
-- Reply: {"OK", kind, kind, ...}: one "index", "user_index", "code" or
--        "schedule" per entry repaired
local fixed = {'OK'}
local function fix(kind) fixed[#fixed + 1] = kind end

local p = placement()
if not p then
  if redis.call('ZREM', K_ROOMS_DUE, room_id) + redis.call('ZREM', K_DUE, room_id) > 0 then fix('schedule') end
  return fixed
end

local function want_in(key, want, score, member)
  local got = redis.call('ZSCORE', key, member)
  if want and (not got or tonumber(got) ~= tonumber(score)) then
    redis.call('ZADD', key, score, member)
    fix('index')
  elseif not want and got then
    redis.call('ZREM', key, member)
    fix('index')
  end
end
for st, base in pairs(INDEX_BASE) do
  for i = 0, 3 do want_in(KEYS[base + i], p.vi == 'public' and p.st == st, p.cr, room_id) end
end
local j = joinable(p)
for i = 0, 3 do
  want_in(KEYS[JOINABLE_BASE + i], j, p.cr, room_id)
  want_in(KEYS[FILL_BASE + i], j, 0, fill_member(p))
end

for _, uid in ipairs(redis.call('HKEYS', K_USERS)) do
  local listed = false
  for id in string.gmatch(redis.call('HGET', K_USERIDX, uid) or '', '%S+') do
    if id == room_id then listed = true end
  end
  if not listed then
    index_user(uid)
    fix('user_index')
  end
end

if p.cd and redis.call('HGET', K_CODES, p.cd) ~= room_id then
  redis.call('HSET', K_CODES, p.cd, room_id)
  fix('code')
end

local first = redis.call('ZRANGE', K_PRESENCE, 0, 0, 'WITHSCORES')
local due = redis.call('ZSCORE', K_DUE, room_id)
if (first[1] and (not due or tonumber(due) > tonumber(first[2]))) or (not first[1] and due) then
  reschedule()
  fix('schedule')
end
return fixed

-- webhook_due: moves the failed deliveries whose next try is due back into
-- the deliveries stream, and off a recount that walked them: one at or
-- before the walk's retries cursor, or any once the walk has passed every
-- retry, takes one off its endpoint's walked retries (webhook_recount.lua;
-- its new delivery is added at the stream's end, where the walk reaches
-- it later). One shard's keys:
--   KEYS[1] retries (zset, score: due ms)   KEYS[2] deliveries
--   KEYS[3] recount (hash)
--   ARGV[1] now (ms)   ARGV[2] at most this many
-- Returns the number moved.

-- lessEq says whether string a sorts at or before b byte by byte, as a
-- zset orders the members of one score (Lua's < on strings follows the
-- server's locale).
local function lessEq(a, b)
  local n = math.min(#a, #b)
  local i = 1
  while i + 63 <= n and string.sub(a, i, i + 63) == string.sub(b, i, i + 63) do i = i + 64 end
  while i <= n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
    i = i + 1
  end
  return #a <= #b
end
local r = redis.call('HGET', KEYS[3], '#r')
local rs, rm
if r == '1' then
  rm = redis.call('HGET', KEYS[3], '#rm')
  if rm then rs = tonumber(redis.call('HGET', KEYS[3], '#rs')) end
end
-- walked says whether the retry m scored sc is counted by the recount's walk.
local function walked(sc, m)
  if r == 'done' then return true end
  if not rm then return false end
  sc = tonumber(sc)
  if sc ~= rs then return sc < rs end
  return lessEq(m, rm)
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[2])
for i = 1, #due, 2 do
  local m = due[i]
  local d = cjson.decode(m)
  redis.call('XADD', KEYS[2], '*', 'e', d.e, 'm', d.m, 't', d.t, 'd', d.d, 'n', d.n)
  redis.call('ZREM', KEYS[1], m)
  if walked(due[i + 1], m) then redis.call('HINCRBY', KEYS[3], 'r:' .. d.e, -1) end
end
return #due / 2

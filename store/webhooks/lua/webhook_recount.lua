-- webhook_recount: one step of the recount of the shard's backlog hash
-- from what its deliveries stream and retries hold, so that a count gone
-- astray (a delivery deleted by hand, one settled by an instance older
-- than the count, one written before it) is repaired on a shard that
-- never drains. Every instance's round runs a step; the first starts a
-- recount once the last one's pause is over (the recount hash expired).
-- The stream is walked oldest first, ARGV[1] entries a step at most, into
-- the recount hash ('e:' .. endpoint -> its entries walked, '#s' the last
-- entry walked): an entry added meanwhile comes after the walk's position
-- (a stream's ids only grow) and is walked later, and the settle and fail
-- scripts take an entry they remove at or before it off the recount
-- (webhook_settle.lua, webhook_fail.lua). The step that reaches the
-- stream's end counts the retries, whole (about 3 µs a retry: 30 ms for
-- 10 000), and replaces the backlog hash with the sums (no field at 0, no
-- hash when none), atomically; the recount hash then holds only '#done'
-- until the pause ends. A recount starts with a walk when the counts do
-- not add up to the deliveries and retries held, so that cost is paid
-- once a count has gone astray, not every pause; and also every ARGV[4]th
-- recount whose counts add up (KEYS[5] counts them), as counts gone
-- astray one way for an endpoint and the other way for another add up:
-- that drift is repaired within ARGV[4] pauses, at the cost of a walk
-- (about 3 µs a delivery) that often. One shard's keys:
--   KEYS[1] deliveries   KEYS[2] retries (zset)   KEYS[3] backlog (hash)
--   KEYS[4] recount (hash)
--   KEYS[5] recounts whose totals added up since the last walk (a
--           number, expiring ARGV[5] ms after the last one; deleted when
--           a walk starts)
--   ARGV[1] at most this many stream entries a step
--   ARGV[2] a walk's expiry after its last step (ms; another starts then)
--   ARGV[3] the pause after a recount (ms)
--   ARGV[4] a recount walks even when the totals add up every this many
--   ARGV[5] KEYS[5]'s expiry (ms)
-- Returns 1: the walk goes on; 0: this step ended it, the backlog
-- replaced; -1: in the pause, nothing done.
local s = redis.call('HGET', KEYS[4], '#s')
if not s and redis.call('EXISTS', KEYS[4]) == 1 then return -1 end
-- a write that changes nothing and that Redis does not refuse out of
-- memory (maxmemory, noeviction): a plain script's writes after it go
-- through, so the recount runs in a full Redis too (it writes a field per
-- endpoint, and replaces the backlog hash with one of its size), where a
-- refused step was a warning every round of every instance
redis.call('HDEL', KEYS[4], '#none')
if not s then
  -- counts that add up to what the deliveries and retries hold are taken
  -- as right but every ARGV[4]th time (a count gone astray one way and
  -- another the other way at once add up): no walk, the pause
  local total = 0
  for _, c in ipairs(redis.call('HVALS', KEYS[3])) do total = total + tonumber(c) end
  if total == redis.call('XLEN', KEYS[1]) + redis.call('ZCARD', KEYS[2]) then
    local n = redis.call('INCR', KEYS[5])
    if n < tonumber(ARGV[4]) then
      redis.call('PEXPIRE', KEYS[5], ARGV[5])
      redis.call('HSET', KEYS[4], '#done', 1)
      redis.call('PEXPIRE', KEYS[4], ARGV[3])
      return 0
    end
  end
  redis.call('DEL', KEYS[5])
  s = '0-0'
end
local es = redis.call('XRANGE', KEYS[1], '(' .. s, '+', 'COUNT', ARGV[1])
for _, e in ipairs(es) do
  local f = e[2]
  for i = 1, #f, 2 do
    if f[i] == 'e' then redis.call('HINCRBY', KEYS[4], 'e:' .. f[i + 1], 1) end
  end
end
if #es == tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[4], '#s', es[#es][1])
  redis.call('PEXPIRE', KEYS[4], ARGV[2])
  return 1
end
local n = {}
local walked = redis.call('HGETALL', KEYS[4])
for i = 1, #walked, 2 do
  if string.sub(walked[i], 1, 2) == 'e:' then
    local ep = string.sub(walked[i], 3)
    n[ep] = (n[ep] or 0) + tonumber(walked[i + 1])
  end
end
for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local ep = cjson.decode(m).e
  n[ep] = (n[ep] or 0) + 1
end
redis.call('DEL', KEYS[3], KEYS[4])
for ep, c in pairs(n) do
  if c > 0 then redis.call('HSET', KEYS[3], ep, c) end
end
redis.call('HSET', KEYS[4], '#done', 1)
redis.call('PEXPIRE', KEYS[4], ARGV[3])
return 0

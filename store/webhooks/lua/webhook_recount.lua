-- webhook_recount: one step of the recount of the shard's backlog hash
-- from what its retries and deliveries stream hold, so that a count gone
-- astray (a delivery deleted by hand, one settled by an instance older
-- than the count, one written before it) is repaired on a shard that
-- never drains. Every instance's round runs a step; the first starts a
-- recount once the last one's pause is over (the recount hash expired).
--
-- A walk reads ARGV[1] entries a step at most, and about ARGV[6] bytes,
-- whatever the backlog (a script blocks every client of the shard's
-- Redis while it runs): first
-- the retries, in the zset's order (score, then member bytes), then the
-- deliveries stream, oldest first, into the recount hash ('r:' ..
-- endpoint -> its retries walked, 'e:' .. endpoint -> its deliveries
-- walked). The step that reaches the stream's end replaces the backlog
-- hash with the sums, atomically. Each sum is exact at that moment: what
-- moves while the walk proceeds is counted by the script that moves it,
-- against the walk's cursor:
--   - the retries, while they are walked ('#r' 1; '#rs', '#rm' the score
--     and member of the last retry walked, none before the first step):
--     a retry added (webhook_fail.lua) or removed (webhook_due.lua) at or
--     before the cursor adds or takes one off its endpoint's 'r:', one
--     after it is walked later; the cursor's member itself may have left
--     (due): the step puts it back for the time of a ZRANK (ZADD NX, ZREM
--     after), so it resumes right after it.
--   - once every retry is walked ('#r' done; '#s' the last delivery
--     walked, '0-0' at first), every retry counts as walked: a retry
--     added adds one, a retry moved back to the deliveries takes one off
--     (its new delivery is added at the stream's end, walked later).
--   - the deliveries: an entry added comes after the walk's position (a
--     stream's ids only grow) and is walked later, and the settle and
--     fail scripts take an entry they remove at or before it off its
--     'e:' (webhook_settle.lua, webhook_fail.lua). While the retries are
--     walked no delivery is walked yet ('#s' absent): nothing to adjust.
-- The recount hash then holds only '#done' until the pause ends.
--
-- A recount starts with a walk when the counts do not add up to the
-- deliveries and retries held, so that cost is paid once a count has gone
-- astray, not every pause; and also every ARGV[4]th recount whose counts
-- add up (KEYS[5] counts them), as counts gone astray one way for an
-- endpoint and the other way for another add up: that drift is repaired
-- within ARGV[4] pauses, at the cost of a walk (about 3 µs an entry) that
-- often. KEYS[5] is deleted by the step that ends a walk, not by the one
-- that starts it: a walk every instance left (the recount hash expired
-- mid-walk) does not lose its turn, the next recount walks again.
--
-- A walk left by an older version ('#s' without '#r': its last step
-- counted the retries whole) starts again as a walk of this one.
-- One shard's keys:
--   KEYS[1] deliveries   KEYS[2] retries (zset)   KEYS[3] backlog (hash)
--   KEYS[4] recount (hash)
--   KEYS[5] recounts whose totals added up since the last walk (a
--           number, expiring ARGV[5] ms after the last one; deleted when
--           a walk ends)
--   ARGV[1] at most this many entries (retries and deliveries) a step
--   ARGV[2] a walk's expiry after its last step (ms; another starts then)
--   ARGV[3] the pause after a recount (ms)
--   ARGV[4] a recount walks even when the totals add up every this many
--   ARGV[5] KEYS[5]'s expiry (ms)
--   ARGV[6] a step stops once it has read this many bytes of entries
--           (members, field values; it reads 16 entries at a time)
-- Returns {1, entries read}: the walk goes on; {0, entries read}: this
-- step ended it, the backlog replaced (or found adding up: no walk);
-- {-1, 0}: in the pause, nothing done.
local dels, retries, backlog, rc, checks = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local step, walkTTL, pause = tonumber(ARGV[1]), ARGV[2], ARGV[3]
-- the walk's state in one read: the embedded store may expire the hash
-- between two calls, and a '#r' read without its '#s' or '#rs' then made
-- a step fail (a concatenation with false)
local state = redis.call('HMGET', rc, '#r', '#s', '#rm', '#rs', '#done')
local r, s, rm, rs = state[1], state[2], state[3], state[4]
-- the pause is the hash holding '#done'; one holding none of '#r', '#s'
-- and '#done' is a leftover, dropped below (with the check's DEL, or the
-- walk's): the embedded store (miniredis) expires a key between two calls
-- of a script, so a walk's hash that expired while a move wrote to it
-- leaves that move's counts in a hash of their own, with no expiry
-- (Redis's clock stands still while a script runs)
if not r and not s and state[5] then return {-1, 0} end
-- a write that changes nothing and that Redis does not refuse out of
-- memory (maxmemory, noeviction): a plain script's writes after it go
-- through, so the recount runs in a full Redis too (it writes a field per
-- endpoint, and replaces the backlog hash with one of its size), where a
-- refused step was a warning every round of every instance
redis.call('HDEL', rc, '#none')
if not r then
  if not s then
    -- counts that add up to what the deliveries and retries hold are
    -- taken as right but every ARGV[4]th time (a count gone astray one
    -- way and another the other way at once add up): no walk, the pause
    local total = 0
    for _, c in ipairs(redis.call('HVALS', backlog)) do total = total + tonumber(c) end
    if total == redis.call('XLEN', dels) + redis.call('ZCARD', retries) then
      local n = redis.call('INCR', checks)
      redis.call('PEXPIRE', checks, ARGV[5])
      if n < tonumber(ARGV[4]) then
        redis.call('DEL', rc) -- a leftover, if any (above)
        redis.call('HSET', rc, '#done', 1)
        redis.call('PEXPIRE', rc, pause)
        return {0, 0}
      end
    end
  end
  redis.call('DEL', rc) -- an older version's walk, if any, starts again
  redis.call('HSET', rc, '#r', 1)
  r, rm = '1', nil
elseif (r == 'done' and not s) or (rm and not rs) then
  -- a walk's hash that expired between a move's two writes (the embedded
  -- store, above), then written to again: the walk starts again
  redis.call('DEL', rc)
  return {1, 0}
end
-- add counts into the recount hash once per endpoint, not per entry
local function add(prefix, counts)
  for ep, c in pairs(counts) do redis.call('HINCRBY', rc, prefix .. ep, c) end
end
-- a step reads in chunks of 16 entries and stops once it has read
-- ARGV[6] bytes (or ARGV[1] entries): its time follows the bytes (an
-- entry holds its event, up to some 80 KiB), not only the entries
local chunk, maxBytes = 16, tonumber(ARGV[6])
local read, bytes = 0, 0
if r == '1' then
  local from = 0
  if rm then
    -- the cursor's retry back for a ZRANK if it left (due), and out again
    -- (the ranks after it then one lower)
    local added = redis.call('ZADD', retries, 'NX', rs, rm)
    from = redis.call('ZRANK', retries, rm) + 1 - added
    if added == 1 then redis.call('ZREM', retries, rm) end
  end
  local counts, lastM, lastS = {}, nil, nil
  local ended = false
  while read < step and bytes < maxBytes do
    local n = math.min(chunk, step - read)
    local ms = redis.call('ZRANGE', retries, from, from + n - 1, 'WITHSCORES')
    for i = 1, #ms, 2 do
      local ep = cjson.decode(ms[i]).e
      counts[ep] = (counts[ep] or 0) + 1
      bytes = bytes + #ms[i]
    end
    read = read + #ms / 2
    if #ms > 0 then lastM, lastS = ms[#ms - 1], ms[#ms] end
    if #ms / 2 < n then
      ended = true
      break
    end
    from = from + n
  end
  add('r:', counts)
  if not ended then
    redis.call('HSET', rc, '#rs', lastS, '#rm', lastM)
    redis.call('PEXPIRE', rc, walkTTL)
    return {1, read}
  end
  -- every retry walked: the deliveries, with what is left of the step;
  -- unless the walk's hash expired during this step (below)
  if not redis.call('HGET', rc, '#r') then
    redis.call('DEL', rc)
    return {1, read}
  end
  redis.call('HDEL', rc, '#rs', '#rm')
  redis.call('HSET', rc, '#r', 'done', '#s', '0-0')
  s = '0-0'
end
local counts = {}
local ended = false
while read < step and bytes < maxBytes do
  local n = math.min(chunk, step - read)
  local es = redis.call('XRANGE', dels, '(' .. s, '+', 'COUNT', n)
  for _, e in ipairs(es) do
    local f = e[2]
    for i = 1, #f, 2 do
      if f[i] == 'e' then counts[f[i + 1]] = (counts[f[i + 1]] or 0) + 1 end
      bytes = bytes + #f[i + 1]
    end
  end
  read = read + #es
  if #es > 0 then s = es[#es][1] end
  if #es < n then
    ended = true
    break
  end
end
add('e:', counts)
if not ended then
  redis.call('HSET', rc, '#s', s)
  redis.call('PEXPIRE', rc, walkTTL)
  return {1, read}
end
local n = {}
local whole = false
local walked = redis.call('HGETALL', rc)
for i = 1, #walked, 2 do
  local kind = string.sub(walked[i], 1, 2)
  if kind == 'e:' or kind == 'r:' then
    local ep = string.sub(walked[i], 3)
    n[ep] = (n[ep] or 0) + tonumber(walked[i + 1])
  elseif walked[i] == '#r' then
    whole = true
  end
end
if not whole then
  -- the walk's hash expired during this step (the embedded store expires
  -- a key between two calls of a script): the counts found are this
  -- step's alone; they replace nothing, and the next step starts again
  redis.call('DEL', rc)
  return {1, read}
end
redis.call('DEL', backlog, rc, checks)
for ep, c in pairs(n) do
  if c > 0 then redis.call('HSET', backlog, ep, c) end
end
redis.call('HSET', rc, '#done', 1)
redis.call('PEXPIRE', rc, pause)
return {0, read}

-- prelude: put before the webhook scripts that move deliveries and retries
-- or add dead letters: what they ask of a recount's walk
-- (webhook_recount.lua), and the dead letters' cap (deadLetter).

-- idWalked says whether stream entry id a is at or before id b (a
-- delivery the walk has passed when b is its last walked, '#s').
local function idWalked(a, b)
  local a1, a2 = string.match(a, '^(%d+)-(%d+)$')
  local b1, b2 = string.match(b, '^(%d+)-(%d+)$')
  a1, b1 = tonumber(a1), tonumber(b1)
  return a1 < b1 or (a1 == b1 and tonumber(a2) <= tonumber(b2))
end

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

-- retryWalker reads the walk of recount (its hash) once and returns
-- walked(sc, m): whether the retry m scored sc is counted by it: every
-- retry once the walk passed them all ('#r' done), else those at or before
-- its retries cursor ('#rs', '#rm': score, then member).
-- (One read: the embedded store may expire the hash between two calls.)
local function retryWalker(recount)
  local w = redis.call('HMGET', recount, '#r', '#rm', '#rs')
  local r, rm, rs = w[1], w[2], tonumber(w[3])
  return function(sc, m)
    if r == 'done' then return true end
    if r ~= '1' or not rm or not rs then return false end
    sc = tonumber(sc)
    if sc ~= rs then return sc < rs end
    return lessEq(m, rm)
  end
end

-- deadLetter adds a dead letter of fields (a flat list) to stream key,
-- capped by cap, "<count> <bytes>" ("<count>" alone from a release
-- before the bytes): a letter of S bytes trims the stream to bytes / S
-- letters (one at least) when that is fewer than count, exactly (a big
-- event's letters are few), else to count, approximately (MAXLEN ~). So
-- the letters of events of one size hold about bytes; of sizes that
-- shrink letter after letter, a few times that at most.
local function deadLetter(key, cap, fields)
  local count, bytes = string.match(cap, '^(%d+) ?(%d*)$')
  count = tonumber(count)
  local size = 0
  for i = 1, #fields do size = size + #tostring(fields[i]) end
  local fit = count
  if bytes ~= '' then fit = math.max(1, math.floor(tonumber(bytes) / math.max(size, 1))) end
  if fit < count then
    redis.call('XADD', key, 'MAXLEN', fit, '*', unpack(fields))
  else
    redis.call('XADD', key, 'MAXLEN', '~', count, '*', unpack(fields))
  end
end

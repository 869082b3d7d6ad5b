-- ticket_pass: one matcher pass over a mode's queue, in the mode's slot
-- (matchmaking.Group is the same grouping in Go; a differential test
-- holds them together). No prelude. A ticket sharing a user with one
-- before it in the page's rating order (a claim lost in a failover,
-- beside a ticket queued before ticket_create recorded users' active
-- tickets) is left out of the pass, backfill and walk alike.
-- 1. The schedule: searching tickets past their expiry leave the queue
--    as expired; final tickets past their grace are dropped.
-- 2. Backfill (ARGV[16] not ""): each open room of KEYS[5], by id from
--    one that turns with the clock, while the rooms have spent at most
--    half the pass's steps (below; each ticket a room looks at is one,
--    the first room offered whatever they cost), takes
--    the tickets, in rating order, that fit its free seats, have its
--    match's eq key, are open in its region, whose window holds its
--    match's rating, and that are not barred from it (their state's "nb":
--    the room refused their users, ticket_requeue); such a group is a
--    match with the room's id. A ticket MAX_BARRED rooms refused (its
--    "nb" full) is backfilled no more, only matched anew by the walk: the
--    list keeps no more rooms, and were the oldest dropped for a new one,
--    a user refused by more rooms than that (banned by each) would be
--    offered them again in turn, refused each round, and, backfill coming
--    first, never reach the walk while they had free seats.
-- 3. The walk: ARGV[11] tickets in rating order (ties by id) from
--    ARGV[17] on (a page: a large queue is walked a page a pass, the next
--    page starting a window's width before this one ends, so groups
--    across the edge are still found; after the last page the walk starts
--    again from the lowest rating);
--    each not yet grouped anchors a try in each region open to it (its
--    first at once, the next after each fallback wait), in preference
--    order: the tickets after it join while the spread from the anchor is
--    within every picked ticket's window (start + step per whole "every"
--    waited, at most max) and their own, when they have the anchor's eq
--    key, are open in the region, and fit a team (best fit: the least room
--    that holds the whole party); a try that falls short searches the
--    anchor's candidates for a subset that makes a match, within ARGV[19]
--    nodes. The pass's work is bounded (matchmaking.PassBudget): a try
--    is a step, each ticket its walk looks at one, each search node one,
--    a search's table of sums one every 8 cells;
--    before each anchor the pass checks its steps, and once ARGV[20] are
--    spent it is cut there: the next pass starts at that anchor (its
--    reply's cursor), so one script holds Redis a bounded time whatever
--    the queue's shape. A try with at least
--    ARGV[4] players is a match: its tickets are marked matched (match id, region, team) in
--    this script, leave the queue, and the match is recorded as pending
--    until Go has made its room (ticket_assign).
-- KEYS[1] tickets  KEYS[2] the mode's schedule  KEYS[3] the mode's queue
--         (see ticket_create)  KEYS[4] pending matches (hash match id →
--         JSON {id, mode, region, at, rating, eq, room (a backfill's),
--         tickets: [{id, users, team, cr}]})
-- KEYS[5] the mode's backfill rooms (hash room id → JSON {region, rating,
--         eq, free})
-- ARGV[1] teams  ARGV[2] players per team at most  ARGV[3] players of a
-- full match  ARGV[4] players a match needs  ARGV[5] window start
-- ARGV[6] window step  ARGV[7] window every, ms  ARGV[8] window max
-- ARGV[9] region fallback wait, ms (0: all at once)  ARGV[10] grace, ms
-- ARGV[11] tickets walked at most  ARGV[12] match id prefix (a match is
-- prefix .. n)  ARGV[13] mode  ARGV[14] schedule entries handled at most
-- ARGV[15] now, ms ("": Redis TIME; tests fix it)
-- ARGV[16] the TTL of KEYS[5], ms: backfill its rooms first, and keep it
--          that long after this pass ("": the mode does not backfill)
-- ARGV[17] where the walk starts: a rating, "(rating" (after it), ""
--          (the lowest), or "rating id" (a cursor, a cut pass's or after
--          a full page narrower than a window: at ticket id, or from its
--          rating when it left the queue)
-- ARGV[18] the most rooms a ticket is barred from (ticket_requeue's
--          ARGV[5]): a ticket with so many is backfilled no more
-- ARGV[19] the search's nodes a try at most  ARGV[20] the pass's steps
--          (tries, tickets walked, search nodes) before it is cut
-- Reply: {"OK", expired count, where the next pass starts ("": from the
--        lowest), the ticket the pass was cut at ("": not cut), the
--        tickets (any status) and pending matches the mode has after the
--        pass, match JSON...}; out of memory (Redis full) {"OK", 0,
--        ARGV[17], "", 1}: only final tickets past their grace were
--        dropped
local tickets, sched, queue, pending, backfill = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local teams, cap, size, needed = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local wstart, wstep, wevery, wmax = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local fallback, grace, limit = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local prefix, mode, sweep = ARGV[12], ARGV[13], tonumber(ARGV[14])
local now
if ARGV[15] ~= '' then
  now = tonumber(ARGV[15])
else
  local T = redis.call('TIME')
  now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
end

-- Out of memory (maxmemory, noeviction) Redis refuses a script's write
-- only while the script has changed nothing yet, and only a write that
-- may grow memory: a final ticket dropped (HDEL) or the backfill's expiry
-- moved first, the matches' records would then be written past maxmemory.
-- A ZADD XX of no member changes nothing and is refused out of memory:
-- full, the pass only drops final tickets (memory back) and matches none.
local probe = redis.pcall('ZADD', sched, 'XX', 0, '')
local full = type(probe) == 'table' and probe.err ~= nil
if full and string.sub(probe.err, 1, 3) ~= 'OOM' then return probe end

-- 1. the schedule
local expired = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', sched, '-inf', now, 'LIMIT', 0, sweep)) do
  local s = redis.call('HGET', tickets, id .. ':s')
  local st = s and cjson.decode(s)
  if st and st.st == 'searching' then
    if not full then -- full: expired by a later pass, with memory to spare
      st.st, st.fin = 'expired', now
      redis.call('HSET', tickets, id .. ':s', cjson.encode(st))
      redis.call('ZREM', queue, id)
      redis.call('ZADD', sched, now + grace, id)
      expired = expired + 1
    end
  else
    -- its users' active-ticket fields go with it, those that name it
    local g = redis.call('HGET', tickets, id .. ':g')
    local users = g and cjson.decode(g).users
    if type(users) == 'table' then
      for _, u in ipairs(users) do
        if redis.call('HGET', tickets, 'u:' .. u) == id then redis.call('HDEL', tickets, 'u:' .. u) end
      end
    end
    redis.call('HDEL', tickets, id, id .. ':g', id .. ':s')
    redis.call('ZREM', sched, id)
  end
end
if full then return {'OK', 0, ARGV[17], '', 1} end

local function window(waited)
  if wstep <= 0 or wevery <= 0 or waited <= 0 then return wstart end
  return math.min(wstart + wstep * math.floor(waited / wevery), wmax)
end
local function opened(e, waited)
  if fallback <= 0 then return #e.regions end
  return math.min(1 + math.floor(waited / fallback), #e.regions)
end
local function open_in(e, reg, waited)
  for k = 1, opened(e, waited) do
    if e.regions[k] == reg then return true end
  end
  return false
end
local MAX_BARRED = tonumber(ARGV[18])
local function barred(st, room)
  if not st.nb then return false end
  if #st.nb >= MAX_BARRED then return true end -- from every room
  for _, id in ipairs(st.nb) do
    if id == room then return true end
  end
  return false
end
local function best_fit(free, n)
  local best = -1
  for t = 1, #free do
    if free[t] >= n and (best < 0 or free[t] < free[best]) then best = t end
  end
  return best
end

local es = {}
local from, raw = ARGV[17], nil
local at_rating, at_id = string.match(from, '^(%S+) (%S+)$')
if at_id then
  local rank = redis.call('ZRANK', queue, at_id)
  if rank then
    raw = redis.call('ZRANGE', queue, rank, rank + limit - 1, 'WITHSCORES')
  else
    from = at_rating -- it left the queue: from its rating (ties before it again)
  end
end
if not raw then
  if from == '' then from = '-inf' end
  raw = redis.call('ZRANGEBYSCORE', queue, from, '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
end
-- a full page: the next starts a window's width before this one ends,
-- or, when the page is narrower than a window, at its last ticket (a
-- cursor: after its rating, the tickets of that rating past the page,
-- ties in id order, would never be walked)
local next_page, next_at = '', false
local page_first, page_last = tonumber(raw[2]), tonumber(raw[#raw])
if #raw / 2 >= limit then
  if page_last - wmax > page_first then
    next_page = string.format('%.17g', page_last - wmax)
  else
    next_page, next_at = string.format('%.17g', page_last) .. ' ' .. raw[#raw - 1], true
  end
end
-- the page's tickets are read as the pass reaches them: has(n) reads
-- them until es holds n (a cut pass reads no further than its last
-- try's window); false when the page has no more. A ticket sharing a
-- user with one read before it is left out of the pass (a user has one
-- active ticket, its claim, but a claim lost in a failover lets its user
-- queue another: no match, nor two of one pass, holds a user twice;
-- matchmaking.Group likewise)
local raw_at, seen = 1, {}
local function has(n)
  while #es < n and raw_at <= #raw do
    local id = raw[raw_at]
    local r = redis.call('HMGET', tickets, id .. ':g', id .. ':s')
    local st = r[2] and cjson.decode(r[2])
    if not r[1] or not st or st.st ~= 'searching' then
      redis.call('ZREM', queue, id) -- no record, or final: never matched
    elseif st.ex > now then
      local g = cjson.decode(r[1])
      local users = type(g.users) == 'table' and g.users or {}
      local again = false
      for _, u in ipairs(users) do
        if seen[u] then again = true break end
      end
      if not again then
        for _, u in ipairs(users) do seen[u] = true end
        es[#es + 1] = {id = id, rating = tonumber(raw[raw_at + 1]), size = g.size, regions = g.regions,
          eq = g.eq, users = g.users, st = st}
      end
    end
    raw_at = raw_at + 2
  end
  return #es >= n
end

local used, matches = {}, {}
-- the pass's steps left (ARGV[20]; backfill, walk and search take theirs)
local work = tonumber(ARGV[20])

-- 2. backfill
if ARGV[16] ~= '' then
  -- the rooms stay recorded while the mode has passes, however long
  -- they go unchanged (full rooms of long matches)
  redis.call('PEXPIRE', backfill, tonumber(ARGV[16]))
  has(math.huge) -- every ticket of the page is offered to the rooms
  local raw_rooms = redis.call('HGETALL', backfill)
  local open_rooms = {}
  for i = 1, #raw_rooms, 2 do open_rooms[#open_rooms + 1] = {id = raw_rooms[i], r = cjson.decode(raw_rooms[i + 1])} end
  table.sort(open_rooms, function(x, y) return x.id < y.id end)
  -- each ticket a room looks at is a step; once the rooms have spent
  -- half the pass's steps no more are offered (the first always is; the
  -- walk has the rest, and tries one anchor at least whatever is left).
  -- They are offered from a room that turns with the clock, so the rooms
  -- left out are not always the same. A room looks only at the tickets
  -- within the widest window of its rating: no ticket further is in its
  -- window.
  local keep, widest = work - math.floor(work / 2), math.max(wstart, wmax)
  local first = #open_rooms > 0 and now % #open_rooms or 0
  for k = 1, #open_rooms do
    if k > 1 and work <= keep then break end
    local room = open_rooms[(first + k - 1) % #open_rooms + 1]
    local r = room.r
    local picked, tms = {}, {}
    local lo, hi = 1, #es + 1 -- lo: the first ticket within widest below the room's rating
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if es[mid].rating < r.rating - widest then lo = mid + 1 else hi = mid end
    end
    for i = lo, #es do
      if r.free <= 0 or es[i].rating > r.rating + widest then break end
      work = work - 1
      local e = es[i]
      if not used[i] and e.eq == r.eq and e.size <= r.free and not barred(e.st, room.id) then
        local waited = now - e.st.cr
        if math.abs(e.rating - r.rating) <= window(waited) and open_in(e, r.region, waited) then
          used[i] = true
          picked[#picked + 1], tms[#tms + 1] = i, 1
          r.free = r.free - e.size
        end
      end
    end
    if #picked > 0 then
      matches[#matches + 1] = {reg = r.region, picked = picked, teams = tms, room = room.id}
      -- a room filled stays, with no free seat, for the matcher's refresh
      -- to find a seat freed later (a player left, a hold lapsed)
      redis.call('HSET', backfill, room.id, cjson.encode(r))
    end
  end
end

-- 3. the walk. walk is one try from anchor i in region reg (a the
-- anchor, wa its window): the tickets after the anchor join in rating
-- order while the spread from the anchor is within every picked ticket's
-- window, when they have its eq key, are open in the region, and fit a
-- team (best fit). Returns the picked tickets and their teams, or, when
-- the try falls short, nil and the anchor's candidates: every ticket
-- after it within wa of its eq key, open in the region, whose own window
-- holds its spread (matchmaking.Rules.walk is the same in Go).
local function candidate(a, e, j, reg)
  local waited = now - e.st.cr
  local spread, w = e.rating - a.rating, window(waited)
  if e.eq == a.eq and spread <= w and open_in(e, reg, waited) then
    return {j = j, spread = spread, w = w}
  end
  return nil
end

local function walk(i, a, wa, reg)
  local free = {}
  for t = 1, teams do free[t] = cap end
  local t = best_fit(free, a.size)
  if t < 0 then return nil, nil, {} end
  free[t] = free[t] - a.size
  local picked, tms, cands = {i}, {t}, {}
  local total, minw = a.size, wa
  local j = i + 1
  while total < size and has(j) do
    work = work - 1
    if not used[j] then
      if es[j].rating - a.rating > minw then break end
      local c = candidate(a, es[j], j, reg)
      if c then
        cands[#cands + 1] = c
        local u = best_fit(free, es[j].size)
        if u > 0 then
          free[u] = free[u] - es[j].size
          picked[#picked + 1], tms[#tms + 1] = j, u
          total = total + es[j].size
          minw = math.min(minw, c.w)
        end
      end
    end
    j = j + 1
  end
  if total >= needed then return picked, tms end
  while has(j) do
    work = work - 1
    if not used[j] then
      if es[j].rating - a.rating > wa then break end
      local c = candidate(a, es[j], j, reg)
      if c then cands[#cands + 1] = c end
    end
    j = j + 1
  end
  return nil, nil, cands
end

-- search: when the walk falls short, a depth-first search of the
-- candidates for a subset that makes a match with the anchor: each
-- candidate, in rating order, is first taken (into the best-fit team,
-- then each other team it fits whose free seats differ from every team
-- tried: those are interchangeable), then skipped; a candidate past a
-- taken one's window ends the branch, and so does a branch whose
-- candidates left hold too few players or none that fits a team, or
-- (every team full) no parties that add up to some team's free seats. Its
-- first match is the walk's whenever the walk makes one. A node is a
-- candidate considered at one depth: at most ARGV[19] a try, each a step
-- of the pass's (matchmaking.Rules.search is the same in Go).
local try_nodes = tonumber(ARGV[19])

local function search(i, a, wa, cands)
  local n, c1 = #cands, cap + 1
  local sum, least = {}, {}
  sum[n + 1], least[n + 1] = 0, c1
  for k = n, 1, -1 do
    local sz = es[cands[k].j].size
    sum[k], least[k] = sum[k + 1] + sz, math.min(least[k + 1], sz)
  end
  if a.size + sum[1] < needed then return nil end -- too few players: not a node
  -- every team full: reach[(k - 1) * c1 + f + 1] is whether parties of
  -- the candidates from k on add up to f players; the table is steps
  -- too, one every 8 cells (matchmaking.Rules.setupSteps)
  local reach = size == needed and {} or nil
  if reach then
    work = work - math.floor((n * c1 + 7) / 8)
    for f = 0, cap do reach[n * c1 + f + 1] = f == 0 end
    for k = n, 1, -1 do
      local sz = es[cands[k].j].size
      for f = 0, cap do
        reach[(k - 1) * c1 + f + 1] = reach[k * c1 + f + 1] or (f >= sz and reach[k * c1 + f - sz + 1])
      end
    end
  end
  local free = {}
  for t = 1, teams do free[t] = cap end
  local t0 = best_fit(free, a.size)
  if t0 < 0 then return nil end
  free[t0] = free[t0] - a.size
  local picked, tms = {i}, {t0}
  local nodes, out = try_nodes, false
  local function max_free()
    local m = 0
    for t = 1, teams do if free[t] > m then m = free[t] end end
    return m
  end
  local function fillable(k)
    if not reach then return true end
    for t = 1, teams do
      if not reach[(k - 1) * c1 + free[t] + 1] then return false end
    end
    return true
  end
  local function tried(upto, f)
    for t = 1, upto - 1 do if free[t] == f then return true end end
    return false
  end
  local function from(k, total, minw)
    if total >= size then return true end
    while true do
      if nodes <= 0 then
        out = true
        return false
      end
      nodes, work = nodes - 1, work - 1
      if k > n or cands[k].spread > minw or total + sum[k] < needed or least[k] > max_free() or
          not fillable(k) then
        return total >= needed
      end
      local c = cands[k]
      local sz = es[c.j].size
      local u = best_fit(free, sz)
      if u > 0 then
        for t = 0, teams do
          local team = u
          if t > 0 then
            if t == u or free[t] < sz or free[t] == free[u] or tried(t, free[t]) then
              team = nil
            else
              team = t
            end
          end
          if team then
            free[team] = free[team] - sz
            picked[#picked + 1], tms[#tms + 1] = c.j, team
            if from(k + 1, total + sz, math.min(minw, c.w)) then return true end
            free[team] = free[team] + sz
            picked[#picked], tms[#tms] = nil, nil
            if out then return false end
          end
        end
      end
      k = k + 1
    end
  end
  if from(1, a.size, wa) then return picked, tms end
  return nil
end

local cut = nil -- the anchor before which the steps ran out
local tried = false -- an anchor was: a pass tries one whatever the backfill spent
local i = 1
while has(i) do
  if not used[i] then
    if work <= 0 and tried then
      cut = i
      break
    end
    tried = true
    local a = es[i]
    local wa = window(now - a.st.cr)
    for k = 1, opened(a, now - a.st.cr) do
      local reg = a.regions[k]
      work = work - 1
      local picked, tms, cands = walk(i, a, wa, reg)
      if not picked then picked, tms = search(i, a, wa, cands) end
      if picked then
        for _, p in ipairs(picked) do used[p] = true end
        matches[#matches + 1] = {reg = reg, picked = picked, teams = tms}
        break
      end
    end
  end
  i = i + 1
end

-- where the next pass starts: a cut one at the anchor it did not try
-- (the tries before it had their whole windows), but when the anchor is
-- within a window's width of a full page's end (the page's next start is
-- before it: the tries from there on had their windows cut by the page's
-- end); else the next page, or the lowest
local next_from, cut_id = next_page, ''
if cut then
  cut_id = es[cut].id
  if next_page == '' or next_at or es[cut].rating <= page_last - wmax then
    next_from = string.format('%.17g', es[cut].rating) .. ' ' .. cut_id
  end
end
local out = {'OK', expired, next_from, cut_id, 0}
for m, g in ipairs(matches) do
  local mid = prefix .. m
  local list = {}
  local sum, n = 0, 0
  for k, p in ipairs(g.picked) do
    local e = es[p]
    sum, n = sum + e.rating * e.size, n + e.size
    local st = e.st
    st.st, st.mid, st.reg, st.tm, st.mat = 'matched', mid, g.reg, g.teams[k] - 1, now
    redis.call('HSET', tickets, e.id .. ':s', cjson.encode(st))
    redis.call('ZREM', queue, e.id)
    redis.call('ZADD', sched, now + grace, e.id)
    list[k] = {id = e.id, users = e.users, team = g.teams[k] - 1, cr = st.cr}
  end
  local rec = cjson.encode({id = mid, mode = mode, region = g.reg, at = now, tickets = list,
    rating = sum / n, eq = es[g.picked[1]].eq, room = g.room or ''})
  redis.call('HSET', pending, mid, rec)
  out[#out + 1] = rec
end
-- what the mode has left: a mode with none leaves the list of modes
-- (modes_forget.lua), one with any stays, however old its last ticket
out[5] = redis.call('ZCARD', sched) + redis.call('HLEN', pending)
return out

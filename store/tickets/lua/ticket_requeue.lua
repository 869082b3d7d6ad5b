-- ticket_requeue: a backfill whose room could not take its tickets (full,
-- started, closed, or refusing some of its users), or the tickets of a
-- match whose room, found again by a repair, refused their users: they go
-- back in the queue, searching as before (or expired, past their TTL),
-- the pending record goes (or, keeping the match's other tickets, loses
-- these), and the room is kept among the backfill rooms with no free seat
-- until the next refresh; in the mode's slot. No prelude.
-- A ticket whose cancel came while it was matched (ticket_cancel's "cx")
-- ends cancelled instead (expired past its TTL).
-- A ticket whose users the room refused (banned, in it or holding a seat
-- of it already) is
-- barred from it: its state's "nb" lists the rooms no pass offers it
-- (MAX_BARRED at most: ticket_pass backfills a ticket whose list is full
-- no more, so it never grows past; the oldest would go first).
-- KEYS[1] tickets  KEYS[2] the mode's schedule  KEYS[3] the mode's queue
-- KEYS[4] pending matches  KEYS[5] the mode's backfill rooms (see
--         ticket_pass)
-- ARGV[1] match id  ARGV[2] room id  ARGV[3] grace, ms
-- ARGV[4] how many of the ticket ids, the first ones, are barred from the
--         room
-- ARGV[5] the most rooms a ticket is barred from (MAX_BARRED)
-- ARGV[6..] the ids of the match's tickets to requeue (all of a backfill's)
-- Reply: {"OK", tickets requeued, the ids of the tickets taken off the
-- match (searching again, or ended)...} | {"TOLD"}: a completion began
-- telling the match's users (ticket_commit): the match stands, nothing
-- changed
local tickets, sched, queue, pending, backfill = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local mid, room, barred = ARGV[1], ARGV[2], tonumber(ARGV[4])
local rec = redis.call('HGET', pending, mid)
local m = rec and cjson.decode(rec)
if m and m.told then return {'TOLD'} end
local MAX_BARRED = tonumber(ARGV[5])
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local n, back = 0, {}
for i = 6, #ARGV do
  local id = ARGV[i]
  local r = redis.call('HMGET', tickets, id .. ':g', id .. ':s')
  local st = r[2] and cjson.decode(r[2])
  if r[1] and st and st.st == 'matched' and st.mid == mid and (st.rm or '') == '' then
    st.mid, st.reg, st.tm, st.mat = nil, nil, nil, nil
    if i - 5 <= barred and room ~= '' then
      local nb = st.nb or {}
      nb[#nb + 1] = room
      if #nb > MAX_BARRED then table.remove(nb, 1) end
      st.nb = nb
    end
    if st.ex > now and not st.cx then
      st.st = 'searching'
      redis.call('ZADD', queue, cjson.decode(r[1]).rating, id)
      redis.call('ZADD', sched, st.ex, id)
      n = n + 1
    else
      st.st, st.fin = 'expired', now
      if st.ex > now then st.st = 'cancelled' end
      redis.call('ZADD', sched, now + tonumber(ARGV[3]), id)
    end
    redis.call('HSET', tickets, id .. ':s', cjson.encode(st))
    back[#back + 1] = id
  end
end
-- the pending record keeps the tickets not requeued (a match room that
-- refused some: the others' match goes on, and a crash before they are
-- told leaves it to a repair), and goes with the last
if m then
  local gone, left = {}, {}
  for i = 6, #ARGV do gone[ARGV[i]] = true end
  for _, t in ipairs(m.tickets) do
    if not gone[t.id] then left[#left + 1] = t end
  end
  if #left == 0 then
    redis.call('HDEL', pending, mid)
  else
    m.tickets = left
    redis.call('HSET', pending, mid, cjson.encode(m))
  end
end
-- the room could not take them (full, started or gone): it stays with no
-- free seat, not offered again until the matcher's next refresh reads
-- what it can take (a room started or gone is dropped then)
local raw = redis.call('HGET', backfill, room)
if raw then
  local r = cjson.decode(raw)
  r.free = 0
  redis.call('HSET', backfill, room, cjson.encode(r))
end
return {'OK', n, unpack(back)}

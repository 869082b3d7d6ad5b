-- ticket_create: queues a ticket (tickets.go) in its mode's slot, and
-- lists the mode there until the ticket's grace could end: a failover
-- keeps the two or loses them together. No prelude.
-- KEYS[1] tickets (hash: <id> the ticket as created (JSON, Go's),
--         <id>:g what the pass groups by (JSON: size, regions, eq,
--         users), <id>:s its state (JSON: st, cr, ex, and fin, mid, reg,
--         tm, mat, rm as it goes))
-- KEYS[2] the mode's schedule (zset id → ms: a searching ticket's expiry,
--         a final one's end of grace)
-- KEYS[3] the mode's queue (zset id → rating)
-- KEYS[4] the modes of the slot's shard (zset mode → ms)
-- ARGV[1] id  ARGV[2] ticket JSON  ARGV[3] group JSON  ARGV[4] rating
-- ARGV[5] TTL, ms  ARGV[6] the most tickets the mode's queue holds
-- ARGV[7] mode  ARGV[8] grace, ms (the mode listed until expiry + grace,
-- or later: GT)
-- Reply: {"OK", created ms, expires ms} | {"QUEUE_FULL"} | {"EXISTS"} (a
-- ticket of that id is kept, in any status: a keyed create run again; it
-- is left as it is) | {"ACTIVE", userId, the user's active ticket}
-- Each user's active ticket among the shard's modes is a field u:<userId>
-- of KEYS[1], written with the ticket: a second line behind the claim in
-- the user's slot (matchmaking.Queue.Claim), which a failover of that
-- slot's master may lose while the ticket stands here. A user whose
-- ticket it names is searching, or matched and not yet given its room,
-- and not past its expiry (as matchmaking.Service's final: a ticket past
-- it is replaced before a pass marks it), is refused; the field goes with
-- its ticket's fields (ticket_pass's sweep).
local tickets, sched, queue = KEYS[1], KEYS[2], KEYS[3]
local id = ARGV[1]
if redis.call('HEXISTS', tickets, id) == 1 then return {'EXISTS'} end
if redis.call('ZCARD', queue) >= tonumber(ARGV[6]) then return {'QUEUE_FULL'} end
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local users = cjson.decode(ARGV[3]).users
if type(users) ~= 'table' then users = {} end
for _, u in ipairs(users) do
  local other = redis.call('HGET', tickets, 'u:' .. u)
  local s = other and redis.call('HGET', tickets, other .. ':s')
  if s then
    local st = cjson.decode(s)
    local active = st.st == 'searching' or st.st == 'matched' and (type(st.rm) ~= 'string' or st.rm == '')
    if active and (tonumber(st.ex) or 0) > now then
      return {'ACTIVE', u, other}
    end
  end
end
local ex = now + tonumber(ARGV[5])
redis.call('HSET', tickets, id, ARGV[2], id .. ':g', ARGV[3],
  id .. ':s', cjson.encode({st = 'searching', cr = now, ex = ex}))
for _, u in ipairs(users) do redis.call('HSET', tickets, 'u:' .. u, id) end
redis.call('ZADD', queue, ARGV[4], id)
redis.call('ZADD', sched, ex, id)
redis.call('ZADD', KEYS[4], 'GT', ex + tonumber(ARGV[8]), ARGV[7])
return {'OK', string.format('%d', now), string.format('%d', ex)}

-- ticket_cancel: a searching ticket leaves its queue as cancelled
-- (expired when its TTL passed already), in its mode's slot. No prelude.
-- A ticket matched whose room is not known yet stays matched (FINAL
-- matched), marked "cx": should its match go back to the queue
-- (ticket_requeue), it ends cancelled rather than searching again.
-- KEYS[1] tickets  KEYS[2] the mode's schedule  KEYS[3] the mode's queue
--         (see ticket_create)
-- ARGV[1] id  ARGV[2] grace, ms: how long a final ticket stays readable
-- Reply: {"OK"} | {"NOT_FOUND"} | {"FINAL", status}
local tickets, sched, queue = KEYS[1], KEYS[2], KEYS[3]
local id = ARGV[1]
local s = redis.call('HGET', tickets, id .. ':s')
if not s then return {'NOT_FOUND'} end
local st = cjson.decode(s)
if st.st == 'matched' and (st.rm or '') == '' and not st.cx then
  st.cx = 1
  redis.call('HSET', tickets, id .. ':s', cjson.encode(st))
end
if st.st ~= 'searching' then return {'FINAL', st.st} end
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
st.st = 'cancelled'
if st.ex <= now then st.st = 'expired' end
st.fin = now
redis.call('HSET', tickets, id .. ':s', cjson.encode(st))
redis.call('ZREM', queue, id)
redis.call('ZADD', sched, now + tonumber(ARGV[2]), id)
if st.st == 'expired' then return {'FINAL', 'expired'} end
return {'OK'}

-- janitor_lease: an instance takes a shard's janitor lease for a visit
-- (SET NX PX: one instance per shard per interval), and learns which of
-- its tasks have work. No prelude.
-- KEYS[1] the shard's janitor lease (string: holder's instance id)
-- KEYS[2] the shard's presence schedule (zset; only written with a ZREM
--         of no member)
-- KEYS[3..] the tasks' due keys (janitor.Task.Due), in the tasks' order
-- ARGV[1] instance id  ARGV[2] lease (ms)  ARGV[3] now (ms, the instance's
--         clock, as the tasks read their keys)
-- ARGV[4] "r": a lease the instance holds already is renewed (a visit
--         that waited for a place confirms its lease); "": taken only
--         when free
-- ARGV[5..] each due key's kind: "z" a sorted set scored by when (work:
--         a member scored at most now), "l" a list (work: not empty)
-- Reply: {"OK", 0} when another holds the lease; taken (or renewed),
--        {"OK", 1, then for each due key 1 when it holds work, else 0}
-- Out of memory (maxmemory, noeviction) Redis refuses a SET, and the
-- visit it opens is what gives memory back on its own (idle rooms closed,
-- lapsed presences and sessions swept): so it begins with a write that
-- changes nothing and that Redis lets through (a ZREM of no member), after
-- which the lease, a few bytes, expiring, is written out of memory too.
redis.call('ZREM', KEYS[2], '')
if ARGV[4] == 'r' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
elseif not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {'OK', 0}
end
local out = {'OK', 1}
for i = 3, #KEYS do
  local work
  if ARGV[i + 2] == 'l' then
    work = redis.call('LLEN', KEYS[i]) > 0
  else
    work = #redis.call('ZRANGEBYSCORE', KEYS[i], '-inf', ARGV[3], 'LIMIT', 0, 1) > 0
  end
  out[#out + 1] = work and 1 or 0
end
return out

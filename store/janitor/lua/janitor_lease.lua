-- janitor_lease: an instance takes a shard's janitor lease for a visit
-- (SET NX PX: one instance per shard per interval). No prelude.
-- KEYS[1] the shard's janitor lease (string: holder's instance id)
-- KEYS[2] the shard's presence schedule (zset; only written with a ZREM
--         of no member)
-- ARGV[1] instance id  ARGV[2] lease (ms)
-- Reply: {"OK", 1 when the lease was taken, else 0}
-- Out of memory (maxmemory, noeviction) Redis refuses a SET, and the
-- visit it opens is what gives memory back on its own (idle rooms closed,
-- lapsed presences and sessions swept): so it begins with a write that
-- changes nothing and that Redis lets through (a ZREM of no member), after
-- which the lease, a few bytes, expiring, is written out of memory too.
redis.call('ZREM', KEYS[2], '')
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {'OK', 1}
end
return {'OK', 0}

-- webhook_settle: a delivery was sent: it leaves the deliveries stream
-- (acknowledged, deleted). One shard's keys:
--   KEYS[1] deliveries   ARGV[1] consumer group   ARGV[2] delivery entry id
-- Returns "OK".
-- Out of memory (maxmemory, noeviction) Redis lets XACK and XDEL through,
-- as it lets a plain script whose writes are only those; it refuses every
-- command queued in a MULTI, which the settle was: a delivery sent stayed
-- pending, the next scan read it again and sent it again, every round,
-- until Redis had room.
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
return 'OK'

-- webhook_settle: a delivery was sent: it leaves the deliveries stream
-- (acknowledged, deleted) and its endpoint's backlog (one less; the field
-- deleted at 0, the hash once the shard's deliveries and retries are
-- empty: a count that went astray does not outlive the backlog), and off
-- a recount that walked it (webhook_recount.lua). One shard's keys:
--   KEYS[1] deliveries   KEYS[2] backlog (hash)   KEYS[3] retries (zset)
--   KEYS[4] recount (hash)
--   ARGV[1] consumer group   ARGV[2] delivery entry id
-- Returns "OK".
-- Out of memory (maxmemory, noeviction) Redis lets XACK and XDEL through,
-- as it lets a plain script whose writes are only those; it refuses every
-- command queued in a MULTI, which the settle was: a delivery sent stayed
-- pending, the next scan read it again and sent it again, every round,
-- until Redis had room. The XACK is this script's first write, so Redis
-- lets the backlog's HINCRBY after it through too (it refuses a plain
-- script out of memory only until its first write).

local e = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
if redis.call('XDEL', KEYS[1], ARGV[2]) == 1 and e[1] then
  local f = e[1][2]
  for i = 1, #f, 2 do
    if f[i] == 'e' then
      if tonumber(redis.call('HGET', KEYS[2], f[i + 1]) or '0') > 1 then
        redis.call('HINCRBY', KEYS[2], f[i + 1], -1)
      else
        redis.call('HDEL', KEYS[2], f[i + 1])
      end
      local s = redis.call('HGET', KEYS[4], '#s')
      if s and idWalked(ARGV[2], s) then redis.call('HINCRBY', KEYS[4], 'e:' .. f[i + 1], -1) end
    end
  end
end
if redis.call('XLEN', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 then
  redis.call('DEL', KEYS[2])
end
return 'OK'

-- webhook_fail: a delivery's try failed. It leaves the deliveries stream
-- and waits in the retry zset until due (scored by due time, ms), with its
-- retry count one higher (still in its endpoint's backlog), or, once it
-- has been tried max times, goes to the dead-letter stream (capped:
-- deadLetter, prelude.lua) and leaves its endpoint's backlog (one less; the field deleted at 0,
-- the hash once the shard's deliveries and retries are empty). Either way
-- it leaves the stream: a recount that walked it takes it off its
-- endpoint's walked deliveries; and a retry added at or before the
-- recount's retries cursor, or any once the walk has passed every retry,
-- is added to its endpoint's walked retries (webhook_recount.lua). One
-- shard's keys:
--   KEYS[1] deliveries   KEYS[2] retries (zset)   KEYS[3] dead letters
--   KEYS[4] backlog (hash)   KEYS[5] recount (hash)
--   ARGV[1] consumer group   ARGV[2] delivery entry id   ARGV[3] due (ms)
--   ARGV[4] max tries   ARGV[5] the dead letters' cap, "<count> <bytes>"   ARGV[6] now (ms)
--   ARGV[7] the last error
-- Returns "retry", "dead" or "gone" (another consumer settled it).

local e = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
local out = 'gone'
if e[1] then
  local d = {}
  local f = e[1][2]
  for i = 1, #f, 2 do d[f[i]] = f[i + 1] end
  local tries = tonumber(d.n) + 1
  if tries >= tonumber(ARGV[4]) then
    deadLetter(KEYS[3], ARGV[5], {'e', d.e, 'm', d.m, 't', d.t, 'd', d.d, 'n', tries, 'at', ARGV[6], 'err', ARGV[7]})
    if tonumber(redis.call('HGET', KEYS[4], d.e) or '0') > 1 then
      redis.call('HINCRBY', KEYS[4], d.e, -1)
    else
      redis.call('HDEL', KEYS[4], d.e)
    end
    out = 'dead'
  else
    -- the delivery's own id makes the member unique
    local m = cjson.encode({id = ARGV[2], e = d.e, m = d.m, t = d.t, d = d.d, n = tries, r = d.r})
    redis.call('ZADD', KEYS[2], ARGV[3], m)
    if retryWalker(KEYS[5])(ARGV[3], m) then redis.call('HINCRBY', KEYS[5], 'r:' .. d.e, 1) end
    out = 'retry'
  end
  local s = redis.call('HGET', KEYS[5], '#s')
  if s and idWalked(ARGV[2], s) then redis.call('HINCRBY', KEYS[5], 'e:' .. d.e, -1) end
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
if redis.call('XLEN', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[2]) == 0 then
  redis.call('DEL', KEYS[4])
end
return out

-- following_set: replaces the users a user follows and tells the user's
-- personal streams (on every instance) on the user's channel, which then
-- load the set again. No prelude.
-- Out of memory (maxmemory, noeviction) Redis refuses a script's write
-- only while the script has changed nothing yet, and only a write that
-- may grow memory: the ids are added first (SADD, refused out of memory),
-- then the others removed. A DEL first let the SADDs after it write past
-- maxmemory. Emptying the set (no ids) frees memory: done out of memory
-- too.
-- KEYS[1] following (set of userIds)
-- ARGV[1] following TTL (ms)  ARGV[2] user channel  ARGV[3] PUBLISH|SPUBLISH
-- ARGV[4..] the userIds (none: the set is emptied)
-- Reply: {"OK", count}
if #ARGV > 3 then
  local keep = {}
  for i = 4, #ARGV, 1000 do
    redis.call('SADD', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
  for i = 4, #ARGV do keep[ARGV[i]] = true end
  local gone = {}
  for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
    if not keep[id] then gone[#gone + 1] = id end
  end
  for i = 1, #gone, 1000 do
    redis.call('SREM', KEYS[1], unpack(gone, i, math.min(i + 999, #gone)))
  end
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
else
  redis.call('DEL', KEYS[1])
end
redis.call(ARGV[3], ARGV[2], 'F')
return {'OK', redis.call('SCARD', KEYS[1])}

-- following_set: replaces the users a user follows and tells the user's
-- personal streams (on every instance) on the user's channel, which then
-- load the set again. No prelude.
-- KEYS[1] following (set of userIds)
-- ARGV[1] following TTL (ms)  ARGV[2] user channel  ARGV[3] PUBLISH|SPUBLISH
-- ARGV[4..] the userIds (none: the set is emptied)
-- Reply: {"OK", count}
redis.call('DEL', KEYS[1])
if #ARGV > 3 then
  for i = 4, #ARGV, 1000 do
    redis.call('SADD', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
end
redis.call(ARGV[3], ARGV[2], 'F')
return {'OK', redis.call('SCARD', KEYS[1])}

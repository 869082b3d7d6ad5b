-- matcher_lease: the lease of a mode's matcher (matcher.go): one holder
-- at a time; a holder that stops renewing loses it when it lapses. No
-- prelude.
-- KEYS[1] the lease (string: the holder)
-- ARGV[1] op: "take" (take or renew), "renew" (only while holder holds
--         it: a lease that lapsed is not taken again) or "drop"
-- ARGV[2] holder  ARGV[3] take, renew: TTL, ms
-- Reply: {"OK"} | {"HELD"} (another holds it; renew: or no one)
local key, op, me = KEYS[1], ARGV[1], ARGV[2]
local cur = redis.call('GET', key)
if op == 'renew' then
  if cur ~= me then return {'HELD'} end
  redis.call('PEXPIRE', key, ARGV[3])
  return {'OK'}
end
if op == 'take' then
  if cur and cur ~= me then return {'HELD'} end
  -- Out of memory (maxmemory, noeviction) Redis refuses a SET, and a
  -- script's first write that may grow memory, but not a PEXPIRE, after
  -- which it lets the script's writes through: the holder's renewal is
  -- the PEXPIRE, and of a lease no one holds it changes nothing and the
  -- SET that takes it (a few bytes, expiring) follows. A full Redis keeps
  -- its matchers, whose passes drop the final tickets past their grace.
  redis.call('PEXPIRE', key, ARGV[3])
  if not cur then redis.call('SET', key, me, 'PX', ARGV[3]) end
  return {'OK'}
end
if cur == me then redis.call('DEL', key) end
return {'OK'}

-- matcher_lease: the lease of a mode's matcher (matcher.go): one holder
-- at a time; a holder that stops renewing loses it when it lapses. No
-- prelude.
-- KEYS[1] the lease (string: the holder)
-- ARGV[1] op: "take" (take or renew) or "drop"  ARGV[2] holder
-- ARGV[3] take: TTL, ms
-- Reply: {"OK"} | {"HELD"} (another holds it)
local key, op, me = KEYS[1], ARGV[1], ARGV[2]
local cur = redis.call('GET', key)
if op == 'take' then
  if cur and cur ~= me then return {'HELD'} end
  redis.call('SET', key, me, 'PX', ARGV[3])
  return {'OK'}
end
if cur == me then redis.call('DEL', key) end
return {'OK'}

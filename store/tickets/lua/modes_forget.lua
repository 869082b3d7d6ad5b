-- modes_forget: a mode a pass found without tickets or pending matches
-- leaves the list of modes the matchers pass, unless its time (the
-- latest create's, Touch) is still ahead: a create since touched it, and
-- its ticket is the pass's next. No prelude.
-- KEYS[1] the modes (zset mode → ms)
-- ARGV[1] mode  ARGV[2] now, ms
-- Reply: {"OK"} (it left, or was not listed) | {"OK", its time, ms} (it
-- stays until then: a pass finding it empty before need not ask again)
local at = redis.call('ZSCORE', KEYS[1], ARGV[1])
if at and tonumber(at) > tonumber(ARGV[2]) then return {'OK', at} end
if at then redis.call('ZREM', KEYS[1], ARGV[1]) end
return {'OK'}

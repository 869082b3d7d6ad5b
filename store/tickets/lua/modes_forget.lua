-- modes_forget: a mode a pass found without tickets or pending matches
-- leaves the list of modes the matchers pass, unless its time (the
-- latest create's, Touch) is still ahead: a create since touched it, and
-- its ticket is the pass's next. No prelude.
-- KEYS[1] the modes (zset mode → ms, Redis's clock: ticket_create's)
-- ARGV[1] mode
-- Reply: {"OK"} (it left, or was not listed) | {"OK", its time, ms} (it
-- stays until then: a pass finding it empty before need not ask again)
local at = redis.call('ZSCORE', KEYS[1], ARGV[1])
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
if at and tonumber(at) > now then return {'OK', at} end
if at then redis.call('ZREM', KEYS[1], ARGV[1]) end
return {'OK'}

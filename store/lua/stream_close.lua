-- stream_close: an event stream ended. Drops its presence lease; when it
-- was the player's last, announces player_disconnected and sets the
-- player's removal deadline (now + grace, none when grace is 0).
-- KEYS: prelude, without status indexes.
-- ARGV[7] playerId  ARGV[8] stream name  ARGV[9] grace (ms)
-- Reply: {"OK"}
local pid, stream, grace = ARGV[7], ARGV[8], tonumber(ARGV[9])

redis.call('ZREM', K_PRESENCE, lease_prefix(pid) .. stream)
if redis.call('EXISTS', K_ROOM) == 0 then return {'OK'} end
if not has_lease(pid) then mark_disconnected(pid, grace) end
reschedule()
return {'OK'}

-- stream_close: an event stream ended. Drops its presence lease; when it
-- was the player's last, announces player_disconnected and sets the
-- player's removal deadline (now + grace, none when grace is 0), or, with a
-- debounce, leaves that to the janitor once the debounce window passes
-- without a new stream (see stream_gone in the prelude).
-- KEYS: prelude, without status indexes.
-- ARGV[7] playerId  ARGV[8] stream name  ARGV[9] grace (ms)
-- ARGV[10] debounce (ms; 0: announce at once)
-- Reply: {"OK"}
local pid, stream, grace = ARGV[7], ARGV[8], tonumber(ARGV[9])
local debounce = tonumber(ARGV[10] or '0')

redis.call('ZREM', K_PRESENCE, lease_prefix(pid) .. stream)
if redis.call('EXISTS', K_ROOM) == 0 then return {'OK'} end
stream_gone(pid, grace, debounce)
reschedule()
return {'OK'}

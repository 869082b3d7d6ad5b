-- webhook_replay: a dead letter goes back into the deliveries stream with
-- its retry count reset, and into its endpoint's backlog (one more; an
-- operator's replay is not refused for the backlog: the dead letters it
-- comes from are bounded), and leaves the dead-letter stream (deleted once
-- empty: it has no consumer group to keep). One shard's keys:
--   KEYS[1] dead letters   KEYS[2] deliveries   KEYS[3] backlog (hash)
--   ARGV[1] the dead letter's entry id
-- Returns 1, or 0 when there is no such dead letter.
local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if not e[1] then return 0 end
local d = {}
local f = e[1][2]
for i = 1, #f, 2 do d[f[i]] = f[i + 1] end
redis.call('XADD', KEYS[2], '*', 'e', d.e, 'm', d.m, 't', d.t, 'd', d.d, 'n', 0)
redis.call('HINCRBY', KEYS[3], d.e, 1)
redis.call('XDEL', KEYS[1], ARGV[1])
if redis.call('XLEN', KEYS[1]) == 0 then redis.call('DEL', KEYS[1]) end
return 1

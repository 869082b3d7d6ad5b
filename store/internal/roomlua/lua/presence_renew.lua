-- presence_renew: an instance extends the leases of its open streams in one
-- shard. Read-only of rooms; no prelude.
-- KEYS[i] presence zset of the room of lease i (all in one shard)
-- ARGV[1] lease TTL (ms)  ARGV[1 + i] lease member i
-- Reply: {indexes of the leases no longer held (1-based)}
-- Out of memory (maxmemory, noeviction) Redis refuses a script's first
-- write that may grow memory, and lets everything through once the script
-- wrote anything: this one only moves what exists (scores, expiries), so
-- it begins with a write that changes nothing and that Redis lets through
-- (a ZREM of no member), and a full Redis keeps renewing: open streams
-- stay open rather than all lapsing within a TTL.
redis.call('ZREM', KEYS[1], '')
local T = redis.call('TIME')
local expiry = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000) + tonumber(ARGV[1])
local lost = {}
for i = 1, #KEYS do
  if redis.call('ZSCORE', KEYS[i], ARGV[i + 1]) then
    redis.call('ZADD', KEYS[i], expiry, ARGV[i + 1])
  else
    lost[#lost + 1] = i
  end
end
return lost

-- userstreams_renew: an instance extends the leases of its open streams in
-- the users' stream sets (see userstreams_open) of one user shard, as
-- presence_renew does for the rooms' presence. Every instance runs with
-- the same TTL, so each key then lives until the renewed expiry: none of
-- its leases ends later. No prelude.
-- KEYS[i] the streams zset of the user of lease i (all in one slot)
-- ARGV[1] lease TTL (ms)  ARGV[1 + i] lease member i
-- Reply: {indexes of the leases no longer held (1-based): gone, or lapsed}
-- Out of memory (maxmemory, noeviction) Redis refuses a script's first
-- write that may grow memory, and lets everything through once the script
-- wrote anything: this one only moves what exists (scores, expiries), so
-- it begins with a write that changes nothing and that Redis lets through
-- (a ZREM of no member), and a full Redis keeps renewing: open streams
-- stay open rather than all lapsing within a TTL.
redis.call('ZREM', KEYS[1], '')
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local expiry = now + tonumber(ARGV[1])
local lost, renewed = {}, {}
for i = 1, #KEYS do
  -- a lease past its expiry lapsed, even if no open purged it yet: lost
  -- (and dropped), never revived by a late renewal
  local held = tonumber(redis.call('ZSCORE', KEYS[i], ARGV[i + 1]) or '0')
  if held > now then
    redis.call('ZADD', KEYS[i], 'XX', expiry, ARGV[i + 1])
    renewed[KEYS[i]] = true
  else
    if held > 0 then redis.call('ZREM', KEYS[i], ARGV[i + 1]) end
    lost[#lost + 1] = i
  end
end
for key in pairs(renewed) do redis.call('PEXPIREAT', key, expiry) end
return lost

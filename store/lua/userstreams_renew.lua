-- userstreams_renew: an instance extends the leases of its open streams in
-- the users' stream sets (see userstreams_open) of one user shard, as
-- presence_renew does for the rooms' presence. Every instance runs with
-- the same TTL, so each key then lives until the renewed expiry: none of
-- its leases ends later. No prelude.
-- KEYS[i] the streams zset of the user of lease i (all in one slot)
-- ARGV[1] lease TTL (ms)  ARGV[1 + i] lease member i
-- Reply: {indexes of the leases no longer held (1-based)}
local T = redis.call('TIME')
local expiry = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000) + tonumber(ARGV[1])
local lost, renewed = {}, {}
for i = 1, #KEYS do
  -- XX CH: 1 when an existing lease moved; 0 when there is none, or (rare:
  -- renewed twice within a millisecond) it already had this expiry
  if redis.call('ZADD', KEYS[i], 'XX', 'CH', expiry, ARGV[i + 1]) == 1
      or redis.call('ZSCORE', KEYS[i], ARGV[i + 1]) then
    renewed[KEYS[i]] = true
  else
    lost[#lost + 1] = i
  end
end
for key in pairs(renewed) do redis.call('PEXPIREAT', key, expiry) end
return lost

-- userstreams_renew: an instance extends the leases of its open streams in
-- the users' stream sets (see userstreams_open) of one user shard, as
-- presence_renew does for the rooms' presence. No prelude.
-- KEYS[i] the streams zset of the user of lease i (all in one slot)
-- ARGV[1] lease TTL (ms)  ARGV[1 + i] lease member i
-- Reply: {indexes of the leases no longer held (1-based)}
local T = redis.call('TIME')
local expiry = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000) + tonumber(ARGV[1])
local lost = {}
for i = 1, #KEYS do
  if redis.call('ZSCORE', KEYS[i], ARGV[i + 1]) then
    redis.call('ZADD', KEYS[i], expiry, ARGV[i + 1])
    -- every lease of the key now ends by expiry: the key may live that long
    if redis.call('PTTL', KEYS[i]) < tonumber(ARGV[1]) then
      redis.call('PEXPIREAT', KEYS[i], expiry)
    end
  else
    lost[#lost + 1] = i
  end
end
return lost

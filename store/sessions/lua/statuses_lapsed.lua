-- statuses_lapsed: of users of one shard whose status record is gone, the
-- lapsed ones: still in the shard's online index with their earliest
-- lease expired by this node's clock, the clock every lease of the shard
-- was scored by (sessions.go, Statuses). Writes nothing.
-- KEYS[1] the shard's online index (zset userId → earliest lease expiry, ms)
-- ARGV the user ids
-- Reply: per user, the earliest lease expiry (ms) when it lapsed, else 0
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local out = {}
for i, uid in ipairs(ARGV) do
  local ms = tonumber(redis.call('ZSCORE', KEYS[1], uid) or '')
  out[i] = (ms and ms < now) and ms or 0
end
return out

-- session_renew: an instance extends the leases of its personal streams'
-- sessions of one user shard (as userstreams_renew does for the other
-- streams), with their places among the users' open streams when a quota
-- is on. Each user's sessions, status and open streams then live until
-- the renewed expiry, and the shard's online index gets the user's
-- earliest lease or platform deadline (index_online). Behind prelude.lua.
-- KEYS[1] shard online index; then per lease i: KEYS[1 + 3i - 2] sessions,
-- KEYS[1 + 3i - 1] status, KEYS[1 + 3i] open streams (all in one slot)
-- ARGV[1] lease TTL (ms)  ARGV[2] quota on "1" | "0"  ARGV[3] status linger
-- (ms, see session_open)
-- ARGV[2 + 2i] userId of lease i  ARGV[3 + 2i] member "<platform>/<session>"
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
local quota, linger = ARGV[2] == '1', tonumber(ARGV[3])
local lost = {}
local n = (#KEYS - 1) / 3
for i = 1, n do
  local ks, kst, kus = KEYS[3 * i - 1], KEYS[3 * i], KEYS[3 * i + 1]
  local uid, member = ARGV[2 + 2 * i], ARGV[3 + 2 * i]
  if redis.call('ZADD', ks, 'XX', 'CH', expiry, member) == 1
      or redis.call('ZSCORE', ks, member) then
    redis.call('PEXPIREAT', ks, expiry)
    redis.call('PEXPIREAT', kst, expiry + linger)
    if quota then
      local sid = string.match(member, '/(.*)$')
      redis.call('ZADD', kus, 'XX', expiry, '/' .. sid)
      redis.call('PEXPIREAT', kus, expiry)
    end
    -- a status with a platform's deadline (more fields than v and p) may
    -- be due before the earliest lease
    if redis.call('HLEN', kst) > 2 then
      index_online(ks, kst, KEYS[1], uid)
    else
      local first = redis.call('ZRANGE', ks, 0, 0, 'WITHSCORES')
      redis.call('ZADD', KEYS[1], first[2], uid)
    end
  else
    lost[#lost + 1] = i
  end
end
return lost

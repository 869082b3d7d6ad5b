-- sessions_sweep: the janitor's sweep of a batch of one shard's users
-- whose earliest lease is due in the shard's online index (an instance
-- died, or lost Redis for a TTL). For each user still due by the Redis
-- clock it does what session_close does without a session: purges the
-- lapsed leases, drops the platforms whose debounce deadline passed (a
-- last session closed, none opened within REALSYNC_PRESENCE_DEBOUNCE: the
-- user is shown offline only now), recomputes the status (published, and
-- queued as a webhook, only when it changed; offline keeps it, with its version,
-- ARGV[4] ms) and moves the user's entry in the online index to the
-- earliest lease left, or drops it; a status record that lapsed while
-- online (lapsed_online: every instance was down for the linger) goes
-- offline too, announced. A user renewed or swept since the
-- batch was read is no longer due and is left alone, so sweeps that race
-- announce each change once. One call handles many users, so that a dead
-- instance's thousands of sessions go offline in one janitor pass
-- (sessions.go, SweepBatch). Behind prelude.lua (set_status,
-- lapsed_online).
-- KEYS[1] shard online index (zset userId → earliest lease expiry, ms)
-- KEYS[2] the shard's webhook outbox, when ARGV[3] is not ""; then, from
--         o = 2 (webhooks off) or 3, per user i (1-based):
--         KEYS[o + 2i - 2] sessions, KEYS[o + 2i - 1] status
-- ARGV[1] PUBLISH|SPUBLISH  ARGV[2] now as RFC 3339 (for the webhook event)
-- ARGV[3] webhook outbox MAXLEN ~ ("": webhooks off)
-- ARGV[4] how long an offline status is kept (ms)
-- ARGV[3 + 2i] userId of user i  ARGV[4 + 2i] status channel of user i
-- Reply: {"OK", users whose status changed by a lapse (a platform dropped
-- without a deadline: its leases lapsed), users found due, users whose
-- status changed by debounce deadlines alone (sessions closed, not back)}
local K_ONLINE = KEYS[1]
local pubcmd, ts, outbox_len, offline_ms = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local outbox, o = nil, 2
if outbox_len ~= '' then outbox, o = KEYS[2], 3 end
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local now_us = tonumber(T[1]) * 1000000 + tonumber(T[2])

local changed, due, debounced = 0, 0, 0
for i = 1, (#ARGV - 4) / 2 do
  local k_sess, k_status = KEYS[o + 2 * i - 2], KEYS[o + 2 * i - 1]
  local uid, sch = ARGV[3 + 2 * i], ARGV[4 + 2 * i]
  local at = redis.call('ZSCORE', K_ONLINE, uid)
  if at and tonumber(at) <= now then
    due = due + 1
    redis.call('ZREMRANGEBYSCORE', k_sess, '-inf', now)
    lapsed_online(k_sess, k_status, K_ONLINE, uid)
    local c, _, lapse = set_status(k_sess, k_status, uid, now, 0, nil, now_us, sch, pubcmd, ts, outbox, outbox_len, offline_ms)
    if c == '1' then
      if lapse then changed = changed + 1 else debounced = debounced + 1 end
    end
    index_online(k_sess, k_status, K_ONLINE, uid)
  end
end
return {'OK', changed, due, debounced}

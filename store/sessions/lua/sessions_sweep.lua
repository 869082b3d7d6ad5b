-- sessions_sweep: the janitor's sweep of a batch of one shard's users
-- whose earliest lease or platform deadline is due in the shard's online
-- index (an instance died, or lost Redis for a TTL; a platform's
-- debounce ran out). For each user still due by the Redis clock it does
-- what session_close does without a session: purges the lapsed leases,
-- gives each platform they leave without a session a deadline
-- REALSYNC_PRESENCE_DEBOUNCE (ARGV[5]) from now, as a close does, drops
-- the platforms whose deadline passed (their sessions closed or lapsed,
-- none opened within the debounce: the user is shown offline only now),
-- recomputes the status (published, and
-- queued as a webhook, only when it changed; offline keeps it, with its version,
-- ARGV[4] ms) and moves the user's entry in the online index to the
-- earliest lease or deadline left, or drops it; a status record that lapsed while
-- online (lapsed_online: every instance was down for the linger) goes
-- offline too, announced. A user renewed or swept since the
-- batch was read is no longer due and is left alone, so sweeps that race
-- announce each change once. One call handles many users, so that a dead
-- instance's thousands of sessions go offline in one janitor pass
-- (sessions.go, SweepBatch). Behind prelude.lua (set_status,
-- lapsed_online).
-- KEYS[1] shard online index (zset userId → earliest lease expiry or
--         platform deadline, ms)
-- KEYS[2] the shard's webhook outbox, when ARGV[3] is not ""; then, from
--         o = 2 (webhooks off) or 3, per user i (1-based):
--         KEYS[o + 2i - 2] sessions, KEYS[o + 2i - 1] status
-- ARGV[1] PUBLISH|SPUBLISH  ARGV[2] now as RFC 3339 (for the webhook event)
-- ARGV[3] webhook outbox MAXLEN ~ ("": webhooks off)
-- ARGV[4] how long an offline status is kept (ms)
-- ARGV[5] the presence debounce (ms; 0: a lapsed platform dropped at once)
-- ARGV[4 + 2i] userId of user i  ARGV[5 + 2i] status channel of user i
-- Reply: {"OK", users found with a lapse (a platform whose leases lapsed,
-- given its deadline or dropped), users found due, users whose status
-- changed by deadlines alone (sessions closed or lapsed, not back)}
local K_ONLINE = KEYS[1]
local pubcmd, ts, outbox_len, offline_ms, debounce = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local outbox, o = nil, 2
if outbox_len ~= '' then outbox, o = KEYS[2], 3 end
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local now_us = tonumber(T[1]) * 1000000 + tonumber(T[2])

local changed, due, debounced = 0, 0, 0
for i = 1, (#ARGV - 5) / 2 do
  local k_sess, k_status = KEYS[o + 2 * i - 2], KEYS[o + 2 * i - 1]
  local uid, sch = ARGV[4 + 2 * i], ARGV[5 + 2 * i]
  local at = redis.call('ZSCORE', K_ONLINE, uid)
  if at and tonumber(at) <= now then
    due = due + 1
    redis.call('ZREMRANGEBYSCORE', k_sess, '-inf', now)
    lapsed_online(k_sess, k_status, K_ONLINE, uid)
    local c, _, lapse = set_status(k_sess, k_status, uid, now, debounce, nil, now_us, sch, pubcmd, ts, outbox, outbox_len, offline_ms)
    if lapse then
      changed = changed + 1
    elseif c == '1' then
      debounced = debounced + 1
    end
    index_online(k_sess, k_status, K_ONLINE, uid)
  end
end
return {'OK', changed, due, debounced}

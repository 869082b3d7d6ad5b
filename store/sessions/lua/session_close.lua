-- session_close: drops a personal stream's session (member given), or
-- (member "") only purges the user's lapsed leases (the janitor's sweep
-- of the users whose earliest lease is due, an instance died or lost
-- Redis for a TTL, does the same for many users a call:
-- sessions_sweep.lua). Either way the status is recomputed and published on the
-- status channel only when it changed; offline keeps it, with its
-- version, ARGV[7] ms; a platform whose last session this closes stays
-- shown for the debounce, ARGV[8]; the shard's online index follows. A status record
-- that lapsed while online (lapsed_online) goes offline, announced. Behind
-- prelude.lua (set_status, lapsed_online).
-- KEYS[1] sessions  KEYS[2] status  KEYS[3] shard online index
-- KEYS[4] user's open streams
-- ARGV[1] userId  ARGV[2] member "<platform>/<session>" or ""
-- ARGV[3] status channel  ARGV[4] PUBLISH|SPUBLISH
-- ARGV[5] now as RFC 3339 (for the webhook event)
-- ARGV[6] webhook outbox MAXLEN ~ ("": webhooks off); when on, KEYS[5] is
--         the user shard's webhook outbox, and a status change enters it:
--         user_offline, or user_platforms_changed while still online
-- ARGV[7] how long an offline status is kept (ms)
-- ARGV[8] the presence debounce (ms; 0 or absent: at once): a platform
--         left without a session, the member's last one closed or its
--         leases lapsed (purged here, as the sweep purges them), stays
--         shown until then (set_status), and a session of it opened
--         meanwhile changes nothing; the janitor's sweep drops it once
--         due.
-- Reply: {"OK", "1" when the status changed | "0", lapsed leases purged}
local K_SESS, K_STATUS, K_ONLINE, K_STREAMS = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local uid, member, sch, pubcmd = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local now_us = tonumber(T[1]) * 1000000 + tonumber(T[2])

local lapsed = redis.call('ZREMRANGEBYSCORE', K_SESS, '-inf', now)
local debounce, closed = tonumber(ARGV[8] or '0'), nil
if member ~= '' then
  if redis.call('ZREM', K_SESS, member) == 1 then closed = string.match(member, '^([^/]*)/') end
  local sid = string.match(member, '/(.*)$')
  if sid then redis.call('ZREM', K_STREAMS, '/' .. sid) end
end
lapsed_online(K_SESS, K_STATUS, K_ONLINE, uid)
local changed = set_status(K_SESS, K_STATUS, uid, now, debounce, closed, now_us, sch, pubcmd, ARGV[5], KEYS[5], ARGV[6], tonumber(ARGV[7]))
index_online(K_SESS, K_STATUS, K_ONLINE, uid)
return {'OK', changed, lapsed}

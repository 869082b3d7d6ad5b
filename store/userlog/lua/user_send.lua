-- user_send: appends a logged event to a user's personal log and publishes
-- it on the user's channel, in the user's slot (userlog.go's layout). The
-- log is capped exactly (the oldest entries dropped, counted in the
-- reply); log, meta and cursors expire together, the TTL after the last
-- event. An expired log starts a new history: its cursors go with it.
-- No prelude.
-- KEYS[1] user log (stream, ids "<seq>-0", field d: event JSON)
-- KEYS[2] log meta (hash seq, tag)
-- KEYS[3] delivery cursors (hash platform → last seq delivered)
-- ARGV[1] user channel  ARGV[2] PUBLISH|SPUBLISH  ARGV[3] log MAXLEN (exact)
-- ARGV[4] TTL, ms  ARGV[5] a new history's tag
-- ARGV[6] the event's JSON object without its seq: the script appends "seq"
-- ARGV[7] "" (the log keeps the event), or the key of a body stored once
--         for many users (SendToMany): the log keeps that key (field r),
--         the readers splice the user's id and seq into the body
-- Reply: {"OK", seq, dropped}
local log, meta, cur = KEYS[1], KEYS[2], KEYS[3]
local seq = tonumber(redis.call('HGET', meta, 'seq') or '-1')
local tag = redis.call('HGET', meta, 'tag')
if seq < 0 or not tag then
  tag = ARGV[5]
  redis.call('DEL', log, cur)
  redis.call('HSET', meta, 'seq', 0, 'tag', tag)
end
seq = redis.call('HINCRBY', meta, 'seq', 1)
local ev = string.sub(ARGV[6], 1, -2) .. ',"seq":' .. seq .. '}'
local before = redis.call('XLEN', log)
if ARGV[7] == '' then
  redis.call('XADD', log, 'MAXLEN', ARGV[3], seq .. '-0', 'd', ev)
else
  redis.call('XADD', log, 'MAXLEN', ARGV[3], seq .. '-0', 'r', ARGV[7])
end
local dropped = before + 1 - redis.call('XLEN', log)
redis.call(ARGV[2], ARGV[1], 'E ' .. seq .. ' ' .. tag .. ' ' .. ev)
redis.call('PEXPIRE', log, ARGV[4])
redis.call('PEXPIRE', meta, ARGV[4])
redis.call('PEXPIRE', cur, ARGV[4])
return {'OK', seq, dropped}

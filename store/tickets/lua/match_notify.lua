-- match_notify: appends match_found to a user's log and publishes it on
-- the user's channel (the personal stream, store/sessions.go's layout),
-- in the user's slot. No prelude.
-- KEYS[1] user log (stream, ids "<seq>-0", field d: event JSON)
-- KEYS[2] log meta (hash seq, tag)
-- ARGV[1] user channel  ARGV[2] PUBLISH|SPUBLISH  ARGV[3] log MAXLEN
-- ARGV[4] log TTL, ms  ARGV[5] a new log's tag
-- ARGV[6] the event's JSON object without its seq (Go's): the script
--         appends "seq"
-- Reply: {"OK", seq}
local log, meta = KEYS[1], KEYS[2]
local seq = tonumber(redis.call('HGET', meta, 'seq') or '-1')
local tag = redis.call('HGET', meta, 'tag')
if seq < 0 or not tag then
  tag = ARGV[5]
  redis.call('DEL', log)
  redis.call('HSET', meta, 'seq', 0, 'tag', tag)
end
seq = redis.call('HINCRBY', meta, 'seq', 1)
local ev = string.sub(ARGV[6], 1, -2) .. ',"seq":' .. seq .. '}'
redis.call('XADD', log, 'MAXLEN', '~', ARGV[3], seq .. '-0', 'd', ev)
redis.call(ARGV[2], ARGV[1], 'E ' .. seq .. ' ' .. tag .. ' ' .. ev)
redis.call('PEXPIRE', log, ARGV[4])
redis.call('PEXPIRE', meta, ARGV[4])
return {'OK', seq}

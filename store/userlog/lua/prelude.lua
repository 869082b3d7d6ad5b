-- prelude.lua: what every script that writes a user's log runs in front of
-- its own body (user_send, user_ack, session_open): the log's trim point.
-- A log's entries are numbered 1, 2, 3… ("<seq>-0"), but not every number
-- stays in it: the cap and the acknowledgements drop the oldest (a resume
-- from before them is a gap), and a superseded session_replaced is deleted
-- on purpose (a resume skips it, nothing is missing). The meta's field
-- "trim" tells them apart: the highest seq the cap or an acknowledgement
-- dropped (0: none). A log of before it (no field) has no deleted entry:
-- its trim point is the seq before its first entry, written down the
-- first time a script asks. Reads no KEYS or ARGV.

-- log_trim returns the trim point of log (meta's "trim"), which ends at
-- seq; sets it from the first entry when the meta has none.
local function log_trim(log, meta, seq)
  local t = redis.call('HGET', meta, 'trim')
  if t then return tonumber(t) end
  local first = redis.call('XRANGE', log, '-', '+', 'COUNT', 1)
  t = #first > 0 and tonumber(string.match(first[1][1], '^(%d+)')) - 1 or seq
  redis.call('HSET', meta, 'trim', t)
  return t
end

-- log_dropped records that the entries up to seq to are gone (trimmed):
-- the trim point only moves forward.
local function log_dropped(log, meta, seq, to)
  if to > log_trim(log, meta, seq) then redis.call('HSET', meta, 'trim', to) end
end

-- log_append appends entry seq (field f, value v) to log, then drops the
-- oldest entries past maxlen, recording the trim point; returns how many
-- it dropped.
local function log_append(log, meta, maxlen, seq, f, v)
  redis.call('XADD', log, seq .. '-0', f, v)
  local over = redis.call('XLEN', log) - tonumber(maxlen)
  if over <= 0 then return 0 end
  local gone = redis.call('XRANGE', log, '-', '+', 'COUNT', over)
  local to = tonumber(string.match(gone[#gone][1], '^(%d+)'))
  log_dropped(log, meta, seq, to)
  redis.call('XTRIM', log, 'MINID', (to + 1) .. '-0')
  return over
end

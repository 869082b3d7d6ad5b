-- user_ack: records that a session of a platform delivered a user's log up
-- to seq (its cursor only moves forward), in the user's slot, then drops
-- the entries every platform with a cursor got, but the last margin of
-- them (what a resume with Last-Event-ID may still ask for) and the one
-- before them (the position of a resume that asks for them all: its
-- tag is checked, session_open.lua). Only the
-- event the stream wrote counts: the log's entry seq must carry tag, the
-- tag of its write (user_send.lua), or, for a position without an entry
-- (0, trimmed) or an older release's entry (no g), the history's. So an
-- event a failover lost (its seq now another write's, or not reached
-- yet) or one of an expired log changes nothing: the platform's cursor
-- never skips the new history's events. No prelude.
-- KEYS[1] user log  KEYS[2] log meta  KEYS[3] delivery cursors
-- ARGV[1] platform  ARGV[2] tag  ARGV[3] seq  ARGV[4] margin
-- ARGV[5] TTL, ms (of the cursors: as the log's)
-- Reply: 1 when the cursor moved, else 0
local log, meta, cur = KEYS[1], KEYS[2], KEYS[3]
local m = redis.call('HMGET', meta, 'seq', 'tag')
local seq = tonumber(ARGV[3])
if not m[2] or seq > tonumber(m[1] or '0') then return 0 end
if seq <= tonumber(redis.call('HGET', cur, ARGV[1]) or '-1') then return 0 end
local tag, e = m[2], redis.call('XRANGE', log, seq .. '-0', seq .. '-0')[1]
if e and e[2][3] == 'g' then tag = e[2][4] end -- d or r first, then g
if tag ~= ARGV[2] then return 0 end
-- An ack frees memory (the log trimmed) and grows none but a platform's
-- cursor: it runs out of memory (maxmemory, noeviction) too. Redis
-- refuses a script's write that may grow memory (the HSET) only while
-- the script has changed nothing yet: the cursors' expiry, moved first,
-- lets it through.
local kept = redis.call('PEXPIRE', cur, ARGV[5])
redis.call('HSET', cur, ARGV[1], seq)
if kept == 0 then redis.call('PEXPIRE', cur, ARGV[5]) end -- the first cursor
local low = seq
for _, v in ipairs(redis.call('HVALS', cur)) do low = math.min(low, tonumber(v)) end
local to = low - tonumber(ARGV[4])
if to > 0 then redis.call('XTRIM', log, 'MINID', to .. '-0') end
return 1

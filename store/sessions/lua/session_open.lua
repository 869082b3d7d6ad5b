-- session_open: opens a personal stream's session (sessions.go) of one
-- user on one platform, in the user's slot. Leases that lapsed are purged
-- first (and the status settled after them, the open refused or not). By the policy, a session of the same platform still held makes
-- the open fail (reject-new), or is replaced (replace: its lease dropped,
-- a tombstone of it kept in the user's replaced sessions and
-- session_replaced published on the user's channel, "R <json>", for the
-- instance that holds it to end it: not logged, so a client replacing its
-- sessions over and over takes nothing of the user's capped log), or
-- stays (allow-multiple). The new lease counts among the user's open
-- streams (userstreams_open) when a stream quota is on. The status
-- (online, platforms) is recomputed and published on the status channel
-- only when it changed. Then the user's log is read (store/userlog's
-- layout): given a cursor (Last-Event-ID) the events after it, which the
-- platform's delivery cursor then counts as delivered; without one, or
-- when the log no longer serves it (a gap), the events the platform was
-- not delivered yet (its offline inbox), from its delivery cursor on. A
-- status that lapsed while online (lapsed_online) goes offline, announced,
-- before the open's online. Behind prelude.lua (set_status,
-- lapsed_online).
-- KEYS[1] sessions (zset "<platform>/<session>" → lease expiry, ms)
-- KEYS[2] status (hash v: version (µs), p: "pc,web"; gone when offline;
--         expires the linger after the last lease)
-- KEYS[3] user log (stream, ids "<seq>-0", fields d: event JSON or r: a
--         body's key, then g: the write's tag; see user_send.lua)
-- KEYS[4] log meta (hash seq, tag)
-- KEYS[5] shard online index (zset userId → earliest lease expiry, ms)
-- KEYS[6] user's open streams (zset, see userstreams_open)
-- KEYS[7] following (set; its expiry is refreshed)
-- KEYS[8] delivery cursors (hash platform → last seq delivered)
-- KEYS[9] replaced sessions (zset "<session> <session_replaced JSON>" →
--         ms replaced): the tombstones a replaced session's instance
--         reads when the live message was lost (sessions.go Replaced);
--         entries older than ARGV[22] purged, at most ARGV[23] kept (the
--         oldest dropped), the key expiring ARGV[22] after the last
-- ARGV[1] userId  ARGV[2] platform  ARGV[3] session  ARGV[4] policy
-- ARGV[5] lease TTL (ms)  ARGV[6] stream quota (0: none)
-- ARGV[7] user channel  ARGV[8] status channel  ARGV[9] PUBLISH|SPUBLISH
-- ARGV[10] log MAXLEN (exact)  ARGV[11] log TTL (ms)  ARGV[12] new log tag
-- ARGV[13] cursor seq ("": none)  ARGV[14] cursor tag  ARGV[15] replay limit
-- ARGV[16] now as RFC 3339 (for events)  ARGV[17] following TTL (ms)
-- ARGV[18] status linger (ms): the status outlives the last lease by it, so
--          the janitor's sweep still sees it to publish "offline"
-- ARGV[19] webhook outbox MAXLEN ~ ("": webhooks off); when on, KEYS[10] is
--          the user shard's webhook outbox, and a status change enters it
--          (user_online, user_platforms_changed; see status_event)
-- ARGV[20] the most events replayed without a cursor
-- ARGV[21] how long an offline status is kept (ms), as session_close's
-- ARGV[22] how long a replaced session's tombstone is kept (ms)
-- ARGV[23] the most tombstones kept
-- ARGV[24] the most bytes of entries the reply carries (at least one
--          entry)  ARGV[25] the most entries it reads: the caller reads
--          the rest of the replay itself, in pages, so that one open of a
--          full log (its 1 000 entries of up to ~4 KiB each) holds Redis
--          for a page, not for the whole log read into Lua
-- ARGV[26] how far behind the other platforms' lowest cursor a platform
--          without one starts (userlog.FirstInbox): its first session gets
--          the last of what they were delivered, and what they were not
-- ARGV[27] the presence debounce (ms): another platform whose leases
--          lapsed (purged here) stays shown that long, as the janitor's
--          sweep and a close keep it (set_status)
-- Reply: {"OK", seq, tag, gap "1"|"0", replaced count, from,
--        lost "1"|"0", entry...}: tag is the tag of position from (its
--        entry's write's, or the history's: see the resume below); lost
--        says the platform's inbox lost events before their delivery (its
--        cursor is behind the log's oldest entry: the cap dropped them);
--        the events after from (seq from + 1 on; ARGV[24] bytes of them
--        at most, the first always), each "<tag> <json>",
--        the tag of its write (an event whose body is stored once for
--        many users: "<tag> \1<body key>", store/userlog) |
--        {"SESSION_EXISTS", ms}: ms until the platform's open session's
--        lease runs out unless renewed | {"STREAM_LIMIT", held}
local K_SESS, K_STATUS, K_LOG, K_META, K_ONLINE, K_STREAMS, K_FOLLOW, K_CUR, K_REPL =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local uid, platform, sid, policy = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ttl, quota = tonumber(ARGV[5]), tonumber(ARGV[6])
local uch, sch, pubcmd = ARGV[7], ARGV[8], ARGV[9]
local maxlen, logttl, newtag = ARGV[10], tonumber(ARGV[11]), ARGV[12]
local T = redis.call('TIME')
local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
local now_us = tonumber(T[1]) * 1000000 + tonumber(T[2])

-- Out of memory (maxmemory, noeviction) Redis refuses a script's write
-- only while the script has changed nothing yet, and only a write that
-- may grow memory: this script's first changes (lapsed sessions purged, a
-- log's expiry moved) are not such writes, and the open would then write
-- past maxmemory. A ZADD XX of no member changes nothing and is refused
-- out of memory: the open fails whole, as a room's does.
redis.call('ZADD', K_SESS, 'XX', 0, '')
local purged = redis.call('ZREMRANGEBYSCORE', K_SESS, '-inf', now)
local debounce = tonumber(ARGV[27] or '0')
-- refuse returns reply, a refusal, once what the purge changed is
-- settled: the platforms the lapsed leases leave get their deadlines
-- (set_status) and the user its entry in the online index at them, which
-- a renewal of another session would else move past them, and the
-- platforms stayed shown while that session is renewed
local function refuse(reply)
  if purged > 0 then
    set_status(K_SESS, K_STATUS, uid, now, debounce, nil, now_us, sch, pubcmd, ARGV[16], KEYS[10], ARGV[19], tonumber(ARGV[21]))
    index_online(K_SESS, K_STATUS, K_ONLINE, uid)
  end
  return reply
end
-- a status that lapsed while online (every instance down for the
-- linger, no lease left): its offline is announced first, as a close
-- would, then this open's online. With leases left (the record gone
-- otherwise) the open's own change says all.
if lapsed_online(K_SESS, K_STATUS, K_ONLINE, uid) then
  set_status(K_SESS, K_STATUS, uid, now, 0, nil, now_us, sch, pubcmd, ARGV[16], KEYS[10], ARGV[19], tonumber(ARGV[21]))
  index_online(K_SESS, K_STATUS, K_ONLINE, uid)
end
local same = {}
for _, m in ipairs(redis.call('ZRANGE', K_SESS, 0, -1)) do
  if string.sub(m, 1, #platform + 1) == platform .. '/' then same[#same + 1] = m end
end
if policy == 'reject-new' and #same > 0 then
  local last = 0
  for _, m in ipairs(same) do last = math.max(last, tonumber(redis.call('ZSCORE', K_SESS, m))) end
  return refuse({'SESSION_EXISTS', tostring(last - now)})
end
if policy ~= 'replace' then same = {} end
if quota > 0 then
  redis.call('ZREMRANGEBYSCORE', K_STREAMS, '-inf', now)
  local held = redis.call('ZCARD', K_STREAMS) - #same
  if not redis.call('ZSCORE', K_STREAMS, '/' .. sid) and held >= quota then
    return refuse({'STREAM_LIMIT', held})
  end
end

-- the log position (a new history when the log expired)
local seq = tonumber(redis.call('HGET', K_META, 'seq') or '-1')
local tag = redis.call('HGET', K_META, 'tag')
if seq < 0 or not tag then
  seq, tag = 0, newtag
  redis.call('DEL', K_LOG, K_CUR)
  redis.call('HSET', K_META, 'seq', 0, 'tag', tag)
end
local cseq = tonumber(ARGV[13])

-- the replaced sessions: a tombstone each (ordered by when), published
-- live; not logged. seq is the log's position: what was logged before the
-- replacement, which the replaced session still writes before it ends.
for _, m in ipairs(same) do
  redis.call('ZREM', K_SESS, m)
  local old = string.sub(m, #platform + 2)
  if quota > 0 then redis.call('ZREM', K_STREAMS, '/' .. old) end
  local ev = cjson.encode({type = 'session_replaced', userId = uid, seq = seq, ts = ARGV[16],
    platform = platform, session = old, by = sid})
  redis.call('ZADD', K_REPL, now, old .. ' ' .. ev)
  redis.call(pubcmd, uch, 'R ' .. ev)
end
if #same > 0 then
  local keep = tonumber(ARGV[22])
  redis.call('ZREMRANGEBYSCORE', K_REPL, '-inf', now - keep)
  redis.call('ZREMRANGEBYRANK', K_REPL, 0, -tonumber(ARGV[23]) - 1)
  redis.call('PEXPIRE', K_REPL, keep)
end
if redis.call('EXISTS', K_LOG) == 1 then
  redis.call('PEXPIRE', K_LOG, logttl)
end
redis.call('PEXPIRE', K_META, logttl)
redis.call('PEXPIRE', K_CUR, logttl)

redis.call('ZADD', K_SESS, now + ttl, platform .. '/' .. sid)
redis.call('PEXPIRE', K_SESS, ttl)
if quota > 0 then
  redis.call('ZADD', K_STREAMS, now + ttl, '/' .. sid)
  local last = redis.call('ZRANGE', K_STREAMS, -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', K_STREAMS, last[2])
end
redis.call('PEXPIRE', K_FOLLOW, tonumber(ARGV[17]))

-- the status: published when it changed
-- (a deadline of this platform, its last session closed or lapsed within
-- the debounce, is dropped: no change, nothing published)
set_status(K_SESS, K_STATUS, uid, now, debounce, nil, now_us, sch, pubcmd, ARGV[16], KEYS[10], ARGV[19]) -- online: never offline_ms
redis.call('PEXPIRE', K_STATUS, ttl + tonumber(ARGV[18]))
index_online(K_SESS, K_STATUS, K_ONLINE, uid)

-- a log entry's tag: its write's (field g, after d or r: user_send.lua),
-- or the history's for an older release's entry (none)
local function tag_of(e)
  if e[2][3] == 'g' then return e[2][4] end
  return tag
end
-- a log entry as the reply carries it: its tag, a space, then its JSON,
-- or "\1" and the key of its body stored once for many users
local function entry(e)
  local f = e[2]
  if f[1] == 'r' then return tag_of(e) .. ' \1' .. f[2] end
  return tag_of(e) .. ' ' .. f[2]
end
local reply = {'OK', tostring(seq), tag, '0', tostring(#same), '', '0'}
-- add puts entry e in the reply unless the byte budget is spent (the
-- first always goes); false once it is
local budget, page = tonumber(ARGV[24]), tonumber(ARGV[25])
local function add(e)
  if #reply > 7 and budget <= 0 then return false end
  local s = entry(e)
  budget = budget - #s
  reply[#reply + 1] = s
  return true
end
if cseq and ARGV[14] ~= '' then
  -- the cursor names a write: the log's entry cseq must carry its tag; a
  -- position without an entry (0, or trimmed: the oldest entry follows
  -- it) has the history's. Another history's id (the log expired, or a
  -- failover lost the event and the number is now another write's, or
  -- not reached yet) or one the log no longer serves is a gap.
  local limit = tonumber(ARGV[15])
  if cseq <= seq and seq - cseq <= limit then
    local evs = redis.call('XRANGE', K_LOG, cseq .. '-0', '+', 'COUNT', math.min(limit, page) + 1)
    local at = evs[1] and evs[1][1] == cseq .. '-0'
    local ok
    if at then
      ok = tag_of(evs[1]) == ARGV[14]
    else
      ok = ARGV[14] == tag and (cseq == seq or (evs[1] and evs[1][1] == (cseq + 1) .. '-0'))
    end
    if ok then
      reply[3], reply[6] = ARGV[14], tostring(cseq)
      for i = at and 2 or 1, #evs do
        if not add(evs[i]) then break end
      end
      -- the client had everything up to its cursor
      if cseq > tonumber(redis.call('HGET', K_CUR, platform) or '-1') then
        redis.call('HSET', K_CUR, platform, cseq)
        redis.call('PEXPIRE', K_CUR, logttl)
      end
      return reply
    end
  end
  reply[4] = '1'
end
-- no cursor, or a gap: what the platform was not delivered yet
local had = redis.call('HGET', K_CUR, platform)
local from = tonumber(had or '0')
if not had then
  -- a platform's first session: the log keeps what the others were
  -- delivered for their resumes (userlog.ResumeMargin), not as an inbox
  -- of a new platform: it starts ARGV[26] behind the lowest of them
  local low
  for _, v in ipairs(redis.call('HVALS', K_CUR)) do low = math.min(low or math.huge, tonumber(v)) end
  if low then from = math.max(from, low - tonumber(ARGV[26])) end
end
local first = redis.call('XRANGE', K_LOG, '-', '+', 'COUNT', 1)
local oldest = #first > 0 and tonumber(string.match(first[1][1], '^(%d+)')) or seq + 1
-- the platform had a cursor, and the cap dropped events after it: its
-- inbox lost them
local lost = had and from < math.min(oldest - 1, seq)
from = math.min(math.max(from, oldest - 1), seq)
reply[6] = tostring(from)
-- (the cursor stays: the stream moves it past what is gone once its
-- snapshot is written, so a stream that fails before says it again)
if lost then reply[7] = '1'
-- a platform that opened holds back the trim of what it was not delivered
elseif redis.call('HSETNX', K_CUR, platform, from) == 1 then redis.call('PEXPIRE', K_CUR, logttl) end
-- from's entry (when the log holds it) gives the position's tag, the
-- snapshot's id; the events after it follow
local evs = redis.call('XRANGE', K_LOG, from .. '-0', '+', 'COUNT', math.min(tonumber(ARGV[20]), page) + 1)
local i = 1
if evs[1] and evs[1][1] == from .. '-0' then reply[3], i = tag_of(evs[1]), 2 end
for j = i, math.min(#evs, i + tonumber(ARGV[20]) - 1) do
  if not add(evs[j]) then break end
end
return reply

-- user_send: appends a logged event to a user's personal log and publishes
-- it on the user's channel, in the user's slot (userlog.go's layout). The
-- log is capped exactly (the oldest entries dropped; those some platform
-- with a cursor was not delivered counted in the reply); log, meta and cursors expire together, the TTL after the last
-- event. An expired log starts a new history: its cursors go with it.
-- Each write has a tag of its own, kept with its entry (field g, after
-- d or r: an older release's session_open.lua, during a rolling upgrade,
-- reads an entry's first field as its body) and published with it, as a room's events: an event's id "<seq>-<tag>" names
-- that write, so after a failover that lost events the new history's
-- events of the same numbers have other ids (the readers compare the tag
-- at the client's position: session_open, UserLog, user_ack). The meta's
-- tag names the history, the tag of a position without an entry (0, or
-- an entry trimmed) and of an older release's entries (no g). No prelude.
-- KEYS[1] user log (stream, ids "<seq>-0", fields d: event JSON (or r),
--         then g: the write's tag)
-- KEYS[2] log meta (hash seq, tag)
-- KEYS[3] delivery cursors (hash platform → last seq delivered)
-- KEYS[4] the Idempotency-Keys of messages sent to the user (hash key ->
--         "<seq> <digest> <ms sent, the answer's>")  KEYS[5] the same keys ->
--         when sent, ms by the Redis clock (zset: the window's)
-- ARGV[1] user channel  ARGV[2] PUBLISH|SPUBLISH  ARGV[3] log MAXLEN (exact)
-- ARGV[4] TTL, ms  ARGV[5] the write's tag (a new history's too)
-- ARGV[6] the event's JSON object without its seq: the script appends "seq"
-- ARGV[7] "" (the log keeps the event), or the key of a body stored once
--         for many users (SendToMany): the log keeps that key (field r),
--         the readers splice the user's id and seq into the body
-- ARGV[8] "" or the send's key, "<Idempotency-Key> <sender>": a key the
--         user's inbox remembers sends nothing and answers the first send
--         (KEY_REUSED when ARGV[9], the content's digest, differs)
-- ARGV[10] the send's time, ms  ARGV[11] how long a key is remembered, ms
-- ARGV[12] the most keys remembered; both key sets expire ARGV[11] after
--          the last keyed send
-- ARGV[13] "1": a send of a remembered key renews both key sets' expiry
--          (a write, for a WAIT after the call), "0": it writes nothing
-- ARGV[14] the sender's user id ("": the server's or the rooms' event) and,
--          when set, KEYS[7] the set of the users the user follows: a
--          sender not in it (when it exists) is a stranger, whose events
--          no platform of the user was delivered hold at most ARGV[15]
--          entries of the log (a stranger's send past that is refused,
--          INBOX_FULL), so that
--          strangers writing while the user is away cannot push what the
--          users they follow sent, or the server, out of the capped log.
--          KEYS[6] the strangers' entries: a sorted set of "<seq> <ms
--          sent>" scored by seq, and "h <history tag>" scored 0, the
--          history its entries are of (another's, or none: no entries)
-- ARGV[16] "": a stranger's send past the share is refused; "count": it is
--          counted, never refused (a match_found of a party's leader the
--          user does not follow: the match stands); "check": nothing is
--          sent, the reply says whether it would be (INBOX_FULL or FITS)
-- Reply: {"OK", seq, dropped, ms sent, the tag of its write, the log's
--        history tag} | {"KEY_REUSED"} | {"INBOX_FULL"} | {"FITS"}; a remembered key's
--        tag is its entry's ("" once trimmed): with the seq and the history it names
--        the write (a receipt, which a replay of the key's answer checks,
--        store/idempotency)
local log, meta, cur = KEYS[1], KEYS[2], KEYS[3]
local key, digest, at = ARGV[8], ARGV[9], ARGV[10]
local now, window
if key ~= '' then -- sent already, within the window (by the Redis clock): the first send's answer
  local T = redis.call('TIME')
  now, window = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000), tonumber(ARGV[11])
  local seen, sent = redis.call('HGET', KEYS[4], key), redis.call('ZSCORE', KEYS[5], key)
  local s, d, t = string.match(seen or '', '^(%d+) (%S+) (%d+)$')
  if t and sent and tonumber(sent) > now - window then
    if d ~= digest then return {'KEY_REUSED'} end
    if ARGV[13] == '1' then
      -- a write all the same, the key sets' expiry renewed: a WAIT after
      -- this call (match_found's) waits for it, so for the first send too
      redis.call('PEXPIRE', KEYS[4], window)
      redis.call('PEXPIRE', KEYS[5], window)
    end
    local e, g = redis.call('XRANGE', log, s .. '-0', s .. '-0')[1], ''
    for i = 1, e and #e[2] or 0, 2 do
      if e[2][i] == 'g' then g = e[2][i + 1] end
    end
    return {'OK', tonumber(s), 0, tonumber(t), g, redis.call('HGET', meta, 'tag') or ''}
  end
end
local m = redis.call('HMGET', meta, 'seq', 'tag')
-- a stranger: a sender the user does not follow, when the user follows
-- someone (a user who follows no one, a game that does not use it, keeps
-- the cap's oldest-first drop alone)
local strangers = KEYS[6]
local stranger = ARGV[14] ~= '' and redis.call('SISMEMBER', KEYS[7], ARGV[14]) == 0 and redis.call('EXISTS', KEYS[7]) == 1
if stranger and m[1] and m[2] and redis.call('ZSCORE', strangers, 'h ' .. m[2]) then
  -- what no platform was delivered: past the highest cursor (all of it
  -- when none has one)
  local high, share = 0, tonumber(ARGV[15])
  for _, v in ipairs(redis.call('HVALS', cur)) do high = math.max(high, tonumber(v)) end
  if redis.call('ZCOUNT', strangers, high + 1, '+inf') >= share then
    -- not counted: the entries some platform was delivered, those the cap
    -- dropped, and those expired (sent a TTL ago: readers skip them);
    -- then count again
    local T = redis.call('TIME')
    local ms = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
    local first = redis.call('XRANGE', log, '-', '+', 'COUNT', 1)[1]
    local kept = first and tonumber(string.match(first[1], '^(%d+)')) or tonumber(m[1]) + 1
    redis.call('ZREMRANGEBYSCORE', strangers, 1, '(' .. math.max(kept, high + 1))
    local expired = ms - tonumber(ARGV[4])
    -- as far as the cap's window (matches counted past the share too)
    for i = 0, tonumber(ARGV[3]), 128 do -- the oldest first: a page expired whole is gone, so the next page is the first again
      local page = i == 0 and 1 or 128 -- the oldest alone first: mostly not expired, the share full
      local old, gone = redis.call('ZRANGEBYSCORE', strangers, 1, '+inf', 'LIMIT', 0, page), {}
      for _, e in ipairs(old) do
        if tonumber(string.match(e, ' (%d+)$')) > expired then break end
        gone[#gone + 1] = e
      end
      if #gone > 0 then redis.call('ZREM', strangers, unpack(gone)) end
      if #gone < #old or #old < page then break end
    end
    if ARGV[16] ~= 'count' and redis.call('ZCOUNT', strangers, high + 1, '+inf') >= share then return {'INBOX_FULL'} end
  end
end
if ARGV[16] == 'check' then return {'FITS'} end
if not (m[1] and m[2]) then
  -- (a full strangers' share's prune above writes first: then the send
  -- is not refused out of memory, which a counted match_found wants)
  -- the meta first: out of memory (maxmemory, noeviction) Redis refuses
  -- a script's write only while the script has changed nothing yet (a DEL
  -- counts, whatever it deletes), and only a write that may grow memory
  -- (an HSET): a new user's first send is refused whole
  redis.call('HSET', meta, 'seq', 0, 'tag', ARGV[5])
  m[2] = ARGV[5]
  redis.call('DEL', log, cur)
end
local seq = redis.call('HINCRBY', meta, 'seq', 1)
local ev = string.sub(ARGV[6], 1, -2) .. ',"seq":' .. seq .. '}'
local before = redis.call('XLEN', log)
if ARGV[7] == '' then
  redis.call('XADD', log, 'MAXLEN', ARGV[3], seq .. '-0', 'd', ev, 'g', ARGV[5])
else
  redis.call('XADD', log, 'MAXLEN', ARGV[3], seq .. '-0', 'r', ARGV[7], 'g', ARGV[5])
end
local dropped = before + 1 - redis.call('XLEN', log)
if dropped > 0 then
  -- an entry every platform with a cursor was delivered is no loss (the
  -- log keeps them for resumes, up to the cap): only the dropped entries
  -- past the lowest cursor count (all of them when no platform has one)
  local low
  for _, v in ipairs(redis.call('HVALS', cur)) do low = math.min(low or math.huge, tonumber(v)) end
  if low then
    local first = redis.call('XRANGE', log, '-', '+', 'COUNT', 1)[1]
    local gone = first and tonumber(string.match(first[1], '^(%d+)')) - 1 or seq -- the last seq dropped
    dropped = math.min(dropped, math.max(0, gone - low))
  end
end
if stranger then
  -- its entry counted among the strangers' (of this history: a set of
  -- another starts anew), those the cap dropped forgotten
  if not redis.call('ZSCORE', strangers, 'h ' .. m[2]) then
    redis.call('DEL', strangers)
    redis.call('ZADD', strangers, 0, 'h ' .. m[2])
  end
  local T = redis.call('TIME')
  redis.call('ZADD', strangers, seq, seq .. ' ' .. (tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)))
  redis.call('ZREMRANGEBYSCORE', strangers, 1, '(' .. (seq - tonumber(ARGV[3]) + 1))
  redis.call('PEXPIRE', strangers, ARGV[4])
end
redis.call(ARGV[2], ARGV[1], 'E ' .. seq .. ' ' .. ARGV[5] .. ' ' .. ev)
redis.call('PEXPIRE', log, ARGV[4])
redis.call('PEXPIRE', meta, ARGV[4])
redis.call('PEXPIRE', cur, ARGV[4])
if key ~= '' then
  redis.call('HSET', KEYS[4], key, seq .. ' ' .. digest .. ' ' .. at)
  redis.call('ZADD', KEYS[5], now, key)
  -- forget the keys past the window or the cap, a few a send
  local n = redis.call('ZCARD', KEYS[5])
  local drop = math.max(n - tonumber(ARGV[12]), redis.call('ZCOUNT', KEYS[5], '-inf', now - window))
  if drop > 0 then
    local old = redis.call('ZRANGE', KEYS[5], 0, math.min(drop, 16) - 1)
    redis.call('HDEL', KEYS[4], unpack(old))
    redis.call('ZREM', KEYS[5], unpack(old))
  end
  redis.call('PEXPIRE', KEYS[4], window)
  redis.call('PEXPIRE', KEYS[5], window)
end
return {'OK', seq, dropped, tonumber(at), ARGV[5], m[2]}

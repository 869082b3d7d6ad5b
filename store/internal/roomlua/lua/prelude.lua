-- Prelude prepended to every mutation script (see library.go).
--
-- Every mutation script gets the same KEYS, all built by layout.Keys (store/internal/layout) from the
-- room's shard tag, so every key shares one hash slot:
--   KEYS[1]  room hash          KEYS[5]  room event log (stream)
--   KEYS[2]  room state hash    KEYS[6]  shard user index (hash userId -> "<roomId> <roomId> ...")
--   KEYS[3]  players hash: playerId -> "<joinedAt, ms after the room's createdAt>|<name as a JSON string>"
--                               KEYS[7]  shard invite codes (hash code -> roomId)
--   KEYS[4]  users hash         KEYS[8]  shard clock (string, last createdAt in µs)
--   KEYS[9]  connected players (hash playerId -> "1")
--   KEYS[10] presence (zset: "s:<playerId>:<stream>" leases, "d:<playerId>"
--            debounced disconnects, "g:<playerId>" grace deadlines and
--            "c:<playerId>" connect deadlines (add_player), scored by expiry
--            in ms)
--   KEYS[11] room message log (stream, capped apart from the event log)
--   KEYS[12] shard presence due (zset roomId -> earliest presence deadline, ms)
--   KEYS[13..24] status indexes: waiting, playing, finished, each as
--               (all, mode, region, mode+region), score createdAt;
--   KEYS[25..28] joinable indexes (public, waiting, unlocked, not full) as
--               (all, mode, region, mode+region), score createdAt;
--   KEYS[29..32] fill indexes of the same rooms, lexicographic members
--               "<FILL_SEATS - seats taken or reserved, 3 digits>|<createdAt,
--               17 digits>|<id>": fullest first, then oldest (fill_member).
--   KEYS[33]     shard stats (hash: "rooms:<status>", "players",
--               "m:<mode>:<status>", "r:<region>:<status>" → count, over
--               every room, public or private)
--   KEYS[34]     shard lifecycle schedule (zset roomId -> when the janitor
--               next looks at the room, ms; "+inf": never)
--   KEYS[35]     room bans (set of the userIds banned from the room; at most
--               rooms.MaxBans; deleted with the room)
--   KEYS[36]     shard unheld list (list of "<roomId> <c|r|o> <userId>"),
--               only when a room quota is on (see unhold)
--   Indexes, stats, the schedule and the bans are only passed to scripts
--   that may change them (KEYS[13..35] or KEYS[13..36] all together).
--   K_RESERVED, the room's seat reservations (hash userId -> expiry, ms),
--   is the room hash's name + ":reserved", in the room's slot; the room
--   hash's "rv" counts them. K_KICKED, the users the room kicked without a
--   ban (zset userId -> when, ms; its last rooms.MaxBans kicks, deleted
--   with the room: player_remove.lua), is the room hash's name + ":kicked".
--   K_CKEYS, the shard's create keys (hash digest -> roomId: the room a
--   keyed create made, room_create.lua; the entry goes with its room,
--   close_room), is the shard's tag + ":ckeys".
-- and the same first ARGV:
--   ARGV[1] room id   ARGV[2] channel   ARGV[3] PUBLISH or SPUBLISH
--   ARGV[4] event tag
--   ARGV[5] "<log length> <log byte cap>[ <outbox MAXLEN ~>]": the event
--           log keeps its last length to length + a tenth events and never
--           more than the byte cap (see trim_log); the third number is only
--           there when webhooks are on, and then the last of KEYS is the shard's
--           webhook outbox (a stream, see outbox)
--   ARGV[6] "<TTL (s) of a closed room's log>[ <connect grace (ms)>]": the
--           second number only when REALSYNC_CONNECT_GRACE is on (see
--           add_player)
-- A caller userId of "" is the server (an API key; rooms.User.Server): no
-- player has an empty userId. The scripts that take it skip the membership,
-- owner and state-policy checks for it, and it is player 0 in events.
-- Replies are arrays whose first element is "OK" or an error code.
local K_ROOM, K_STATE, K_PLAYERS, K_USERS, K_LOG, K_USERIDX, K_CODES, K_CLOCK
local K_CONN, K_PRESENCE, K_MESSAGES, K_DUE, K_STATS, K_ROOMS_DUE, K_BANS, K_UNHELD, K_RESERVED, K_KICKED, K_CKEYS
local K_OUTBOX, outbox_len
local room_id, channel, pubcmd, tag, closed_ttl, connect_ms, maxlen, log_cap, LOG_SLACK
local now_us, now
-- now_iso: now as RFC 3339 once formatted (iso_now); known_ver, known_lb
-- and known_ln: the room's version, "lb" and "ln" once this script has
-- read or written them, so that emit writes them with the other fields in
-- one HSET.
local now_iso, known_ver, known_lb, known_ln

-- begin binds the call's KEYS and ARGV and reads the clock; every script
-- calls it before anything of the prelude (redisx.Mutation: as "begin()" right
-- after the prelude, or first thing in its function of the Functions
-- library; quick_join.lua's pick alone runs ahead of it, rewriting KEYS
-- and ARGV: redisx.MutationAfter), so that nothing of one call outlives it
-- when the prelude is loaded once as a library.
local function begin()
  K_ROOM, K_STATE, K_PLAYERS, K_USERS = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
  K_LOG, K_USERIDX, K_CODES, K_CLOCK = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
  K_CONN, K_PRESENCE, K_MESSAGES, K_DUE = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
  K_STATS, K_ROOMS_DUE, K_BANS, K_UNHELD = KEYS[33], KEYS[34], KEYS[35], KEYS[36]
  K_RESERVED, K_KICKED = K_ROOM .. ':reserved', K_ROOM .. ':kicked'
  K_CKEYS = string.match(K_ROOM, '^({[^}]*})') .. ':ckeys'
  room_id, channel, pubcmd = ARGV[1], ARGV[2], ARGV[3]
  tag = ARGV[4]
  closed_ttl, connect_ms = string.match(ARGV[6], '^(%d+) ?(%d*)$')
  connect_ms = tonumber(connect_ms) or 0
  maxlen, log_cap, outbox_len = string.match(ARGV[5], '^(%d+) (%d+) ?(%d*)$')
  maxlen, log_cap = tonumber(maxlen), tonumber(log_cap)
  LOG_SLACK = math.min(100, math.ceil(maxlen / 10))
  K_OUTBOX = nil
  if outbox_len ~= '' then -- webhooks on: the outbox is the last key
    K_OUTBOX = KEYS[#KEYS]
    if #KEYS == 36 then K_UNHELD = nil end -- 35 indexed keys and the outbox
  end
  local T = redis.call('TIME')
  now_us = tonumber(T[1]) * 1000000 + tonumber(T[2])
  now = math.floor(now_us / 1000)
  now_iso, known_ver, known_lb, known_ln = nil, nil, nil, nil
end

-- num formats an integer-valued number without exponent, whatever the Lua.
local function num(n)
  return string.format('%.0f', n)
end

-- iso formats epoch milliseconds as RFC 3339 UTC, e.g. 2026-11-21T20:11:06.12Z
-- (days to civil date after H. Hinnant's algorithm).
-- iso_sec is the last second iso formatted and its text: as a function of
-- the library (library.go) it outlives the call, so the events of one
-- second share the date arithmetic; a script's lasts one call.
local iso_sec, iso_text
local function iso(ms)
  local s = math.floor(ms / 1000)
  local msec = ms - s * 1000
  if s ~= iso_sec then
    local days = math.floor(s / 86400)
    local rem = s - days * 86400
    local z = days + 719468
    local era = math.floor(z / 146097)
    local doe = z - era * 146097
    local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
    local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
    local mp = math.floor((5 * doy + 2) / 153)
    local d = doy - math.floor((153 * mp + 2) / 5) + 1
    local m = mp < 10 and mp + 3 or mp - 9
    local y = yoe + era * 400
    if m <= 2 then y = y + 1 end
    iso_sec, iso_text = s, string.format('%04.0f-%02.0f-%02.0fT%02.0f:%02.0f:%02.0f', y, m, d,
      math.floor(rem / 3600), math.floor((rem % 3600) / 60), rem % 60)
  end
  -- trailing zeros of the fraction dropped, as Go's RFC 3339 encoding (the
  -- REST API's) drops them, so one instant reads the same everywhere
  local frac = ''
  if msec % 100 == 0 then
    if msec > 0 then frac = string.format('.%.0f', msec / 100) end
  elseif msec % 10 == 0 then
    frac = string.format('.%02.0f', msec / 10)
  else
    frac = string.format('.%03.0f', msec)
  end
  return iso_text .. frac .. 'Z'
end

local function iso_now()
  if not now_iso then now_iso = iso(now) end
  return now_iso
end

-- entry_bytes is what a log entry {id, {"g", tag, "d", event}} counts
-- against the log's byte cap.
local function entry_bytes(e)
  return #e[1] + #e[2][2] + #e[2][4]
end

-- The event log is trimmed here, not by XADD's MAXLEN (which trims
-- without telling), so the room hash knows it exactly: "ln" its entries,
-- "lb" their bytes (entry_bytes), "lv" the version they were counted at.
-- When "lv" is not the room's version (a room from before "ln", or an
-- event of a script of an older version during a rolling upgrade, which
-- trimmed by MAXLEN ~ and counted nothing), or "lb" is gone (an older
-- version's janitor dropped the log: it deletes "lb" and moves no
-- version), the log is counted once, at the next event. LOG_SLACK: the
-- entries past maxlen before the oldest are dropped, so that a trim reads
-- about one entry per event (a tenth of maxlen, at most 100: as MAXLEN ~
-- kept up to a node of 100 past it).

-- know sets what emit knows of the room from its hash's "ver", "lb",
-- "ln" and "lv" (strings, or false when missing): its version, its log's
-- bytes, and its log's entries when counted at this version with "lb"
-- there (else nil: count them).
local function know(ver, lb, ln, lv)
  known_ver, known_lb = tonumber(ver) or 0, tonumber(lb) or 0
  known_ln = lv == ver and lb and tonumber(ln) or nil
end

-- trim_log drops the log's oldest entries, never the newest: down to
-- maxlen entries once it holds LOG_SLACK more, and, past log_cap bytes,
-- down to 3/4 of it (a room of fat events keeps fewer events). lb, ln: the
-- log's bytes and entries (ln nil: not known); newest: the id of the entry
-- just appended, which a walk that reaches it proves the counts wrong (the
-- log was lost some other way): then the log is counted. Returns lb, ln.
local trim_log
function trim_log(lb, ln, newest)
  if not ln then
    lb, ln = 0, 0
    for _, e in ipairs(redis.call('XRANGE', K_LOG, '-', '+')) do
      lb, ln = lb + entry_bytes(e), ln + 1
    end
  end
  local keep = lb > log_cap and log_cap * 3 / 4 or lb
  if ln <= maxlen + LOG_SLACK and lb <= keep then return lb, ln end
  local from, last = '-', nil
  while ln > 1 and (ln > maxlen or lb > keep) do
    local entries = redis.call('XRANGE', K_LOG, from, '+', 'COUNT', math.max(ln - maxlen, 100))
    if #entries == 0 then return trim_log() end -- the counts were wrong: count
    for _, e in ipairs(entries) do
      if ln <= 1 or (ln <= maxlen and lb <= keep) then break end
      if e[1] == newest then return trim_log() end -- as above
      lb, ln, last = lb - entry_bytes(e), ln - 1, e[1]
    end
    -- ids are "<version>-0": the next entry's is at least "<version>-1"
    from = string.match(last, '^(%d+)') .. '-1'
  end
  if last then redis.call('XTRIM', K_LOG, 'MINID', from) end
  return lb, ln
end

-- emit bumps the room version and writes it, updatedAt, the log's count
-- and bytes and the given field, value pairs to the room hash in one HSET;
-- appends the event to the log (entry id "<version>-0", trim_log) and
-- publishes "<version> <tag> <json>". body holds the event's own fields,
-- each preceded by a comma. Returns the version and the event's JSON.
local function emit(etype, body, ...)
  if not (known_ver and known_lb) then know(unpack(redis.call('HMGET', K_ROOM, 'ver', 'lb', 'ln', 'lv'))) end
  local v = known_ver + 1
  local vs = tostring(v)
  local ev = '{"type":"' .. etype .. '","roomId":"' .. room_id .. '","version":' .. vs ..
    ',"ts":"' .. iso_now() .. '"' .. body .. '}'
  local id = vs .. '-0'
  redis.call('XADD', K_LOG, id, 'g', tag, 'd', ev)
  local lb, ln = known_lb + #id + #tag + #ev, known_ln and known_ln + 1
  if not ln or ln > maxlen + LOG_SLACK or lb > log_cap then lb, ln = trim_log(lb, ln, id) end
  redis.call('HSET', K_ROOM, 'ver', vs, 'lb', lb, 'ln', ln, 'lv', vs, 'up', num(now), ...)
  known_ver, known_lb, known_ln = v, lb, ln
  redis.call(pubcmd, channel, vs .. ' ' .. tag .. ' ' .. ev)
  if K_OUTBOX then
    redis.call('XADD', K_OUTBOX, 'MAXLEN', '~', outbox_len, '*', 't', etype, 'd', ev)
  end
  return v, ev
end

local INDEX_BASE = {waiting = 13, playing = 17, finished = 21}
local JOINABLE_BASE, FILL_BASE = 25, 29

local function index_add(status, score)
  local base = INDEX_BASE[status]
  for i = 0, 3 do redis.call('ZADD', KEYS[base + i], score, room_id) end
end

local function index_rem(status)
  local base = INDEX_BASE[status]
  for i = 0, 3 do redis.call('ZREM', KEYS[base + i], room_id) end
end

-- placement reads what decides a room's index entries, and what joins and
-- leaves check (invite code, owner, player sequence, whether it ever
-- banned: bn "0" never, nil for a room created before the field, the
-- seats reserved: rv); nil when it is gone.
local function placement()
  local r = redis.call('HMGET', K_ROOM, 'vi', 'st', 'lk', 'pc', 'mx', 'cr', 'm', 'r', 'cd', 'ow', 'sq', 'ver', 'lb', 'bn', 'rv', 'ln', 'lv')
  if not r[1] then return nil end
  know(r[12], r[13], r[16], r[17])
  return {vi = r[1], st = r[2], lk = r[3], pc = tonumber(r[4]), mx = tonumber(r[5]), cr = r[6],
    m = r[7], r = r[8], cd = r[9], ow = r[10], sq = tonumber(r[11]), bn = r[14], rv = tonumber(r[15]) or 0}
end

-- with_count is placement p with playerCount pc (and rv seats reserved,
-- when given).
local function with_count(p, pc, rv)
  -- placement's fields, in one constructor (a table sized once)
  return {vi = p.vi, st = p.st, lk = p.lk, pc = pc, mx = p.mx, cr = p.cr, m = p.m, r = p.r,
    cd = p.cd, ow = p.ow, sq = p.sq, bn = p.bn, rv = rv or p.rv}
end

local function count(field, delta)
  if delta ~= 0 and redis.call('HINCRBY', K_STATS, field, delta) == 0 then
    redis.call('HDEL', K_STATS, field)
  end
end

-- restat moves the room's weight in the shard stats from old to new
-- placement (either nil).
local function restat(old, new)
  local op, np = old and old.pc or 0, new and new.pc or 0
  count('players', np - op)
  if old and new and old.st == new.st then return end
  local function weigh(p, sign)
    count('rooms:' .. p.st, sign)
    count('m:' .. p.m .. ':' .. p.st, sign)
    count('r:' .. p.r .. ':' .. p.st, sign)
  end
  if old then weigh(old, -1) end
  if new then weigh(new, 1) end
end

-- joinable: public, waiting, unlocked, and a seat neither taken nor
-- reserved (rooms.Room.Joinable is the same rule).
local function joinable(p)
  return p ~= nil and p.vi == 'public' and p.st == 'waiting' and p.lk ~= '1' and p.pc + p.rv < p.mx
end

-- FILL_SEATS is rooms.MaxPlayersLimit: Go writes it in when the library
-- loads (layout.FillLua), its one source.
local FILL_SEATS = 100

-- fill_member orders the fill index by seats taken or reserved.
local function fill_member(p)
  return string.format('%03d', FILL_SEATS - p.pc - p.rv) .. '|' .. string.rep('0', 17 - #p.cr) .. p.cr .. '|' .. room_id
end

-- lobby_notice tells lobby feeds that a joinable room was added, updated
-- or removed: "<kind> <roomId> <version> <mode> <region>" on the shard's
-- lobby channel.
local function lobby_notice(kind, p, ver)
  local lobby = string.match(channel, '^({[^}]*})') .. ':lobby'
  redis.call(pubcmd, lobby, kind .. ' ' .. room_id .. ' ' .. ver .. ' ' .. p.m .. ' ' .. p.r)
end

-- reindex moves the room's index entries from what placement() said
-- before the change (nil for a new room) to new, what it says now (nil:
-- read it; nil once the room is gone): status indexes for public rooms,
-- joinable and fill indexes for joinable ones; updates the shard stats, and
-- notifies lobby feeds when the room is or was joinable. ver is the room's
-- version (nil: the last one emitted or read).
local function reindex(old, ver, new)
  new = new or placement()
  restat(old, new)
  local old_listed = old ~= nil and old.vi == 'public'
  local new_listed = new ~= nil and new.vi == 'public'
  if old_listed and not (new_listed and new.st == old.st) then index_rem(old.st) end
  if new_listed and not (old_listed and new.st == old.st) then index_add(new.st, new.cr) end
  local oj, nj = joinable(old), joinable(new)
  -- the fill member moves when the seats taken or reserved change
  local same_fill = oj and nj and new.pc == old.pc and new.rv == old.rv
  if oj and not same_fill then
    local m = fill_member(old)
    for i = 0, 3 do redis.call('ZREM', KEYS[FILL_BASE + i], m) end
  end
  if oj and not nj then
    for i = 0, 3 do redis.call('ZREM', KEYS[JOINABLE_BASE + i], room_id) end
  end
  if nj and not oj then
    for i = 0, 3 do redis.call('ZADD', KEYS[JOINABLE_BASE + i], new.cr, room_id) end
  end
  if nj and not same_fill then
    local m = fill_member(new)
    for i = 0, 3 do redis.call('ZADD', KEYS[FILL_BASE + i], '0', m) end
  end
  if oj or nj then
    local kind = 'removed'
    if oj and nj then kind = 'updated' elseif nj then kind = 'added' end
    lobby_notice(kind, new or old, ver or known_ver or redis.call('HGET', K_ROOM, 'ver'))
  end
end

-- index_user adds the room to user uid's rooms in the shard user index
-- (a hash: cheaper per entry than a zset of "<user> <room>" members); one
-- call when the user is in no other room of the shard, the usual case.
local function index_user(uid)
  if redis.call('HSETNX', K_USERIDX, uid, room_id) == 1 then return end
  local cur = redis.call('HGET', K_USERIDX, uid)
  redis.call('HSET', K_USERIDX, uid, cur .. ' ' .. room_id)
end

-- unindex_user removes the room from user uid's rooms.
local function unindex_user(uid)
  local cur = redis.call('HGET', K_USERIDX, uid)
  if not cur then return end
  local rest = {}
  for id in string.gmatch(cur, '%S+') do
    if id ~= room_id then rest[#rest + 1] = id end
  end
  if #rest == 0 then
    redis.call('HDEL', K_USERIDX, uid)
  else
    redis.call('HSET', K_USERIDX, uid, table.concat(rest, ' '))
  end
end

-- deny is the answer to a caller who is not a member: private rooms do not
-- exist for them. vi is the room's visibility (nil: read it).
local function deny(vi)
  if (vi or redis.call('HGET', K_ROOM, 'vi')) == 'private' then return {'ROOM_NOT_FOUND'} end
  return {'NOT_A_MEMBER'}
end

-- add_player makes uid the next player of the room placed at p (playerIds
-- are never reused) and emits player_joined; seated: the users hash holds
-- uid already (room_join); rv: the seats still reserved after (when uid
-- took a reserved seat, else nil). With a connect grace (connect_ms > 0)
-- the player gets a deadline "c:<playerId>" (see Presence below): unless a
-- stream of theirs opens before it, the janitor removes them. Returns the
-- playerId.
local function add_player(uid, name_json, p, seated, rv)
  local pid = tostring(p.sq + 1) -- a number becomes a string on every use
  local after = math.max(0, now - math.floor(tonumber(p.cr) / 1000))
  redis.call('HSET', K_PLAYERS, pid, num(after) .. '|' .. name_json)
  if not seated then redis.call('HSET', K_USERS, uid, pid) end
  index_user(uid)
  local body = ',"player":{"playerId":' .. pid .. ',"name":' .. name_json .. ',"joinedAt":"' ..
    iso_now() .. '","connected":false}'
  if rv then
    emit('player_joined', body .. ',"reservedSeats":' .. rv, 'sq', pid, 'pc', tostring(p.pc + 1), 'rv', rv)
  else
    emit('player_joined', body, 'sq', pid, 'pc', tostring(p.pc + 1))
  end
  if connect_ms > 0 then
    redis.call('ZADD', K_PRESENCE, now + connect_ms, 'c:' .. pid)
    redis.call('ZADD', K_DUE, 'LT', now + connect_ms, room_id)
  end
  return p.sq + 1
end

-- unhold tells the janitor (store/holdings/unheld.go) that user uid's holdings entry
-- for this room may be stale: kind "c" the room closed (the entry is stale
-- whatever it holds: room ids are never reused), "r" the user was removed
-- from it (stale unless the user is back in or joining), "o" the user was
-- handed its ownership. The list is in the room's slot, bounded to its
-- newest UNHELD_MAX entries and expires with the holdings (1 h, holdingsTTL)
-- after its last entry; the janitor pops it. A no-op with the quotas off
-- (no KEYS[36]).
local UNHELD_MAX = 10000
local function unhold(kind, uid)
  if not K_UNHELD then return end
  if redis.call('RPUSH', K_UNHELD, room_id .. ' ' .. kind .. ' ' .. uid) > UNHELD_MAX then
    redis.call('LTRIM', K_UNHELD, -UNHELD_MAX, -1)
  end
  redis.call('PEXPIRE', K_UNHELD, 3600000)
end

-- close_room emits room_closed, removes the room from every index and
-- deletes it; before is its placement() before the change that closes it
-- (nil: read now). The log stays for closed_ttl seconds so streams can read the
-- final event. Returns the userIds of the room's members as it closed.
local function close_room(reason, before)
  before = before or placement()
  local code, ck = unpack(redis.call('HMGET', K_ROOM, 'cd', 'ck'))
  local v = emit('room_closed', ',"reason":"' .. reason .. '"')
  if code then redis.call('HDEL', K_CODES, code) end
  if ck and redis.call('HGET', K_CKEYS, ck) == room_id then redis.call('HDEL', K_CKEYS, ck) end
  local members = redis.call('HKEYS', K_USERS)
  for _, uid in ipairs(members) do
    unindex_user(uid)
    unhold('c', uid)
  end
  redis.call('DEL', K_ROOM, K_STATE, K_PLAYERS, K_USERS, K_CONN, K_PRESENCE, K_MESSAGES, K_BANS, K_RESERVED,
    K_KICKED, K_ROOM .. ':mkeys', K_ROOM .. ':mkeyt') -- message_send.lua's keys
  reindex(before, v)
  redis.call('ZREM', K_DUE, room_id)
  redis.call('ZREM', K_ROOMS_DUE, room_id)
  redis.call('EXPIRE', K_LOG, closed_ttl)
  return members
end

-- Presence. A stream holds a lease "s:<playerId>:<stream>" in K_PRESENCE,
-- scored by its expiry; K_CONN says which players were last announced as
-- connected. A player announced connected whose leases are all gone is
-- announced disconnected and, with a grace, gets a deadline "g:<playerId>"
-- after which the janitor removes them. A player whose last stream closed
-- is not announced at once: "d:<playerId>" holds the end of a short window
-- (the debounce) within which a new stream cancels it silently, so a
-- client that reconnects, or flaps, emits no presence events; the janitor
-- announces the disconnect when the window passes without a stream. A
-- player who joined with a connect grace on holds "c:<playerId>" until
-- their first stream opens; past it the janitor removes them, as a player
-- past "g:". K_DUE holds, per room, the earliest
-- presence score, so the janitor visits only rooms with something due.

local function lease_prefix(pid)
  return 's:' .. pid .. ':'
end

local function has_lease(pid)
  local p = lease_prefix(pid)
  for _, m in ipairs(redis.call('ZRANGE', K_PRESENCE, 0, -1)) do
    if string.sub(m, 1, #p) == p then return true end
  end
  return false
end

-- reschedule sets the room's due time to its earliest presence score.
local function reschedule()
  local first = redis.call('ZRANGE', K_PRESENCE, 0, 0, 'WITHSCORES')
  if #first == 0 then
    redis.call('ZREM', K_DUE, room_id)
  else
    redis.call('ZADD', K_DUE, first[2], room_id)
  end
end

-- drop_presence forgets every lease and deadline of a removed player.
local function drop_presence(pid)
  redis.call('HDEL', K_CONN, pid)
  local all = redis.call('ZRANGE', K_PRESENCE, 0, -1)
  if #all == 0 then return end -- nothing scheduled either
  local p = lease_prefix(pid)
  for _, m in ipairs(all) do
    if string.sub(m, 1, #p) == p or m == 'g:' .. pid or m == 'd:' .. pid or m == 'c:' .. pid then
      redis.call('ZREM', K_PRESENCE, m)
    end
  end
  reschedule()
end

-- mark_disconnected announces that pid has no stream left and, when grace_ms
-- > 0, sets its removal deadline. Returns whether it announced anything.
local function mark_disconnected(pid, grace_ms)
  if redis.call('HDEL', K_CONN, pid) == 0 then return false end
  redis.call('ZREM', K_PRESENCE, 'd:' .. pid)
  emit('player_disconnected', ',"playerId":' .. pid)
  if grace_ms > 0 then redis.call('ZADD', K_PRESENCE, now + grace_ms, 'g:' .. pid) end
  return true
end

-- stream_gone handles the end of pid's stream (its lease already dropped):
-- when it was the player's last, either announces the disconnect at once
-- (debounce_ms 0) or opens the debounce window "d:<pid>" for the janitor.
local function stream_gone(pid, grace_ms, debounce_ms)
  if has_lease(pid) then return end
  if debounce_ms > 0 and redis.call('HEXISTS', K_CONN, pid) == 1 then
    redis.call('ZADD', K_PRESENCE, now + debounce_ms, 'd:' .. pid)
  else
    mark_disconnected(pid, grace_ms)
  end
end

-- uid_of finds the user of player pid.
local function uid_of(pid)
  local users = redis.call('HGETALL', K_USERS)
  for i = 1, #users, 2 do
    if users[i + 1] == tostring(pid) then return users[i] end
  end
  return nil
end

-- remove_player removes player pid (user uid) with reason, handing
-- ownership on or closing the room when it was the last; before is the
-- room's placement() (nil: read it). Needs the status indexes in KEYS.
-- The holdings of a removal other than a leave (which the store corrects
-- itself, store.left) are left to the janitor (unhold).
-- Returns true when the room closed.
local function remove_player(pid, uid, reason, before)
  before = before or placement()
  redis.call('HDEL', K_PLAYERS, pid)
  redis.call('HDEL', K_USERS, uid)
  unindex_user(uid)
  drop_presence(pid)
  local left = before.pc - 1
  emit('player_left', ',"playerId":' .. pid .. ',"reason":"' .. reason .. '"', 'pc', left)
  local by_leave = reason == 'left'
  if left == 0 then
    if not by_leave then unhold('c', uid) end
    close_room('empty', before)
    return true
  end
  if not by_leave then unhold('r', uid) end
  if tostring(pid) == before.ow then
    local next_owner
    for _, p in ipairs(redis.call('HKEYS', K_PLAYERS)) do
      local n = tonumber(p)
      if not next_owner or n < next_owner then next_owner = n end
    end
    emit('room_updated', ',"changes":{"ownerPlayerId":' .. next_owner .. '}', 'ow', next_owner)
    -- on a leave too: the caller's own mark after the script is best
    -- effort, and marking twice changes nothing
    unhold('o', uid_of(next_owner))
  end
  reindex(before, nil, with_count(before, left))
  return false
end

-- prelude of session_open, session_close, sessions_sweep and session_renew:
-- the part (run in front of each) that derives a user's status from the
-- sessions and records a change. PLATFORMS, the platforms in their order,
-- and STATUS_LINGER, how long (ms) a status record outlives what it
-- waits for (sessions.go statusLinger), are set by the store above this
-- (from players.Platforms, the one list). Reads no KEYS or ARGV.

-- G_FIELDS: per platform, the status hash's field "g:<platform>" holding
-- the deadline (ms, Redis clock) until which a platform whose last session
-- closed or lapsed is still shown (the presence debounce).
local G_FIELDS, KNOWN = {}, {}
for i, p in ipairs(PLATFORMS) do G_FIELDS[i], KNOWN[p] = 'g:' .. p, true end

-- set_status recomputes the status of user uid from its sessions (zset
-- k_sess, members "<platform>/<session>") into k_status (hash v, p; p ""
-- when offline, the hash then kept offline_ms, so that a client that saw
-- the user online reads the offline status as the later one). A platform
-- shown (in p) without a session left stays shown until its deadline
-- "g:<platform>" in k_status; when it has none and debounce_ms > 0, the
-- deadline is set to now_ms + debounce_ms, whether its last session
-- closed (closed: the platform of the session a session_close dropped)
-- or its leases lapsed (its instance died: a client that may open a
-- session of the platform only once the dead one lapsed, policy
-- reject-new, would else race the janitor's sweep and be shown offline,
-- then online); a session of it opened before then cancels the deadline
-- and nothing changed (a reconnect or a flapping client emits no status
-- event); once the deadline passed (the janitor's sweep, found through
-- the online index, index_online) the platform is dropped. debounce_ms
-- 0: dropped at once. Deadlines of platforms with a session, or not
-- shown, are dropped. Only when the platforms changed it publishes
-- "<version> <platforms>" on channel sch (with pubcmd) and, when
-- outbox_len is not "", queues the webhook event (user_online,
-- user_platforms_changed or user_offline, at ts) in outbox. The version is
-- the Redis clock in µs (now_us), kept increasing. Returns "1" when it
-- changed, else "0", the platforms as a comma-separated string, and
-- whether it found a lapse: a platform shown, other than closed, whose
-- leases are gone and which had no deadline (given one now, or dropped
-- at once), or the "?" of lapsed_online.
local function set_status(k_sess, k_status, uid, now_ms, debounce_ms, closed, now_us, sch, pubcmd, ts, outbox, outbox_len, offline_ms)
  local on = {}
  for _, m in ipairs(redis.call('ZRANGE', k_sess, 0, -1)) do
    on[string.match(m, '^([^/]*)/')] = true
  end
  local cur = redis.call('HMGET', k_status, 'v', 'p', unpack(G_FIELDS))
  local was = cur[2] or ''
  local shown = {}
  for q in string.gmatch(was, '[^,]+') do shown[q] = true end
  local ps, lapse = {}, false
  for q in pairs(shown) do if not KNOWN[q] then lapse = true end end
  for i, q in ipairs(PLATFORMS) do
    local due = tonumber(cur[2 + i] or '')
    if not on[q] and shown[q] and not due then
      if q ~= closed then lapse = true end
      if debounce_ms > 0 then
        due = now_ms + debounce_ms
        redis.call('HSET', k_status, G_FIELDS[i], string.format('%d', due))
        -- the record outlives the deadline by the linger, so that the
        -- sweep finds it then (a lapse found late, near the end of the
        -- linger the last lease gave it, would else expire first)
        local left = redis.call('PTTL', k_status)
        if left >= 0 and left < debounce_ms + STATUS_LINGER then
          redis.call('PEXPIRE', k_status, debounce_ms + STATUS_LINGER)
        end
      end
    elseif due and (on[q] or not shown[q] or due <= now_ms) then
      redis.call('HDEL', k_status, G_FIELDS[i])
      due = nil
    end
    if on[q] or due then ps[#ps + 1] = q end
  end
  local p = table.concat(ps, ',')
  if was == p then return '0', p, lapse end
  local v = math.max(now_us, tonumber(cur[1] or '0') + 1)
  redis.call('HSET', k_status, 'v', string.format('%d', v), 'p', p)
  if p == '' then redis.call('PEXPIRE', k_status, offline_ms) end
  redis.call(pubcmd, sch, string.format('%d', v) .. ' ' .. p)
  if outbox_len ~= '' then
    -- platforms are names of a fixed set; the user id is encoded by cjson
    local t = (p == '' and 'user_offline') or (was == '' and 'user_online') or 'user_platforms_changed'
    local list = #ps > 0 and ('"' .. table.concat(ps, '","') .. '"') or ''
    local ev = '{"type":"' .. t .. '","userId":' .. cjson.encode(uid) .. ',"online":' .. (p ~= '' and 'true' or 'false') ..
      ',"platforms":[' .. list .. '],"version":' .. string.format('%d', v) .. ',"ts":"' .. ts .. '"}'
    redis.call('XADD', outbox, 'MAXLEN', '~', outbox_len, '*', 't', t, 'd', ev)
  end
  return '1', p, lapse
end

-- lapsed_online marks the status of user uid online ("?", no platform's
-- name) when its record k_status is gone though the user is in the
-- shard's online index k_online and has no lease left (zset k_sess, its
-- lapsed ones purged): the record expired while the user was online, the
-- linger after the last lease, because no instance swept the user
-- meanwhile (all were down). set_status then takes the user offline as a
-- change, published and queued (user_offline) at a version of now, later
-- than any online one; so the outage's offline is announced after all.
-- With a lease left (the record gone otherwise) it marks nothing. Returns
-- whether it marked. The mark never outlives the script.
local function lapsed_online(k_sess, k_status, k_online, uid)
  if redis.call('ZCARD', k_sess) == 0 and redis.call('EXISTS', k_status) == 0 and redis.call('ZSCORE', k_online, uid) then
    redis.call('HSET', k_status, 'p', '?')
    return true
  end
  return false
end

-- index_online keeps user uid's entry of the shard's online index
-- k_online at the earliest of its sessions' leases (zset k_sess) and its
-- platforms' deadlines (k_status, set_status), or drops it when none is
-- left: the janitor's sweep takes the user when the first is due.
local function index_online(k_sess, k_status, k_online, uid)
  local first = redis.call('ZRANGE', k_sess, 0, 0, 'WITHSCORES')
  local at = first[2] and tonumber(first[2])
  for _, d in ipairs(redis.call('HMGET', k_status, unpack(G_FIELDS))) do
    if d then at = math.min(at or tonumber(d), tonumber(d)) end
  end
  if not at then
    redis.call('ZREM', k_online, uid)
  else
    redis.call('ZADD', k_online, string.format('%d', at), uid)
  end
end

-- prelude of session_open and session_close: the part of both (run in front
-- of each) that derives a user's status from the sessions and records a
-- change. PLATFORMS, the platforms in their order, is set by the store
-- above this (from players.Platforms, the one list). Reads no KEYS or ARGV.

-- set_status recomputes the status of user uid from its sessions (zset
-- k_sess, members "<platform>/<session>") into k_status (hash v, p; p ""
-- when offline, the hash then kept offline_ms, so that a client that saw
-- the user online reads the offline status as the later one). Only when
-- the platforms changed it publishes
-- "<version> <platforms>" on channel sch (with pubcmd) and, when
-- outbox_len is not "", queues the webhook event (user_online,
-- user_platforms_changed or user_offline, at ts) in outbox. The version is
-- the Redis clock in µs (now_us), kept increasing. Returns "1" when it
-- changed, else "0", and the platforms as a comma-separated string.
local function set_status(k_sess, k_status, uid, now_us, sch, pubcmd, ts, outbox, outbox_len, offline_ms)
  local on = {}
  for _, m in ipairs(redis.call('ZRANGE', k_sess, 0, -1)) do
    on[string.match(m, '^([^/]*)/')] = true
  end
  local ps = {}
  for _, p in ipairs(PLATFORMS) do if on[p] then ps[#ps + 1] = p end end
  local p = table.concat(ps, ',')
  local cur = redis.call('HMGET', k_status, 'v', 'p')
  local was = cur[2] or ''
  if was == p then return '0', p end
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
  return '1', p
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
-- k_online at the earliest lease of its sessions (zset k_sess), or drops
-- it when none is left.
local function index_online(k_sess, k_online, uid)
  local first = redis.call('ZRANGE', k_sess, 0, 0, 'WITHSCORES')
  if #first == 0 then
    redis.call('ZREM', k_online, uid)
  else
    redis.call('ZADD', k_online, first[2], uid)
  end
end

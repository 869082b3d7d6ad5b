-- stream_open: a member opens an event stream. Records the stream's presence
-- lease (player_connected when it is the player's first stream, and any
-- removal or connect deadline cancelled; a stream within the debounce
-- window of the player's last one emits nothing: the player never showed
-- disconnected),
-- then reads what the stream sends first: the
-- logged events after the client's cursor when the log still holds them and
-- the cursor belongs to this history, else a snapshot, whose room and state
-- the store reads in the same transaction right after this script. Doing it
-- at once makes the snapshot and the replay consistent with the version.
-- KEYS: prelude, without status indexes.
-- ARGV[7] userId ("" = the server, an observer: no membership check, no
-- lease, no presence; playerId 0)  ARGV[8] stream name  ARGV[9] lease TTL (ms)
-- ARGV[10] read: "none" (renew only), "snapshot", or "after"
-- ARGV[11] cursor version  ARGV[12] cursor tag ("" unknown)  ARGV[13] replay limit
-- ARGV[14] most streams one player may hold in the room (a further one is
-- refused, so the presence set of a room stays bounded)
-- Reply: {"OK", playerId, version, "none"} |
--        {"OK", playerId, version, "replay", entries} |
--        {"OK", playerId, version, "snapshot", tag} |
--        {"ROOM_NOT_FOUND"} | {"NOT_A_MEMBER"} | {"TOO_MANY_STREAMS"}
local uid, stream, ttl, read = ARGV[7], ARGV[8], tonumber(ARGV[9]), ARGV[10]
local after, after_tag, limit = tonumber(ARGV[11]), ARGV[12], tonumber(ARGV[13])
local max_streams = tonumber(ARGV[14])

if redis.call('EXISTS', K_ROOM) == 0 then return {'ROOM_NOT_FOUND'} end
local pid = 0
if uid ~= '' then
  pid = redis.call('HGET', K_USERS, uid)
  if not pid then return deny() end

  local lease = lease_prefix(pid) .. stream
  if not redis.call('ZSCORE', K_PRESENCE, lease) then
    local held, prefix = 0, lease_prefix(pid)
    for _, m in ipairs(redis.call('ZRANGE', K_PRESENCE, 0, -1)) do
      if string.sub(m, 1, #prefix) == prefix then held = held + 1 end
    end
    if held >= max_streams then return {'TOO_MANY_STREAMS'} end
  end
  redis.call('ZADD', K_PRESENCE, now + ttl, lease)
  redis.call('ZREM', K_PRESENCE, 'g:' .. pid, 'd:' .. pid, 'c:' .. pid)
  reschedule()
  if redis.call('HSETNX', K_CONN, pid, '1') == 1 then
    emit('player_connected', ',"playerId":' .. pid)
  end
end
local ver = tonumber(redis.call('HGET', K_ROOM, 'ver'))
if read == 'none' then return {'OK', pid, ver, 'none'} end

-- replayable: the log holds the cursor's entry with the same tag (or, for a
-- tagless cursor, the entry right after it), and not too much came since.
-- A tagged cursor at version 0 has no entry to check its tag against: no
-- event has that id, so it is not ours (a snapshot), where it replayed the
-- whole log, what happened before the caller joined included (a tester's
-- find: a deleted state key's value read back with "0-madeup").
local function replayable()
  if read ~= 'after' or after > ver or ver - after > limit then return nil end
  if after == ver and after_tag == '' then return {} end
  local from = math.max(after, 1)
  local entries = redis.call('XRANGE', K_LOG, from .. '-0', '+', 'COUNT', limit + 1)
  local first = entries[1]
  if not first then return nil end
  local fv = tonumber(string.match(first[1], '^(%d+)'))
  if after == 0 then
    if fv ~= 1 or after_tag ~= '' then return nil end
    return entries
  end
  if fv ~= after then return nil end
  if after_tag ~= '' and first[2][2] ~= after_tag then return nil end
  table.remove(entries, 1)
  return entries
end

local entries = replayable()
if entries then return {'OK', pid, ver, 'replay', entries} end
local last = redis.call('XRANGE', K_LOG, ver .. '-0', ver .. '-0')
local vtag = ''
if last[1] then vtag = last[1][2][2] end
return {'OK', pid, ver, 'snapshot', vtag}

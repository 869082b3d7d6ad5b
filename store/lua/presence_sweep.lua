-- presence_sweep: the janitor's visit to a room whose presence is due.
-- Leases past their expiry belong to streams whose instance stopped renewing
-- them (it died or lost Redis): they are dropped, and players left without a
-- lease are announced disconnected, as are players whose debounce window
-- ("d:<playerId>", see stream_close) passed without a new stream. Players
-- whose removal deadline passed
-- while still disconnected are removed (player_left, reason disconnected).
-- KEYS: prelude, with the indexes.
-- ARGV[7] grace (ms)
-- Reply: {"OK", removed players, players announced disconnected}
local grace = tonumber(ARGV[7])

if redis.call('EXISTS', K_ROOM) == 0 then
  redis.call('ZREM', K_DUE, room_id)
  return {'OK', 0, 0}
end
local due = redis.call('ZRANGEBYSCORE', K_PRESENCE, '-inf', now)
local lapsed, seen, deadlines = {}, {}, {}
for _, m in ipairs(due) do
  redis.call('ZREM', K_PRESENCE, m)
  local pid = string.match(m, '^s:(%d+):')
  if pid and not seen[pid] then
    seen[pid] = true
    lapsed[#lapsed + 1] = pid
  end
  local dpid = string.match(m, '^d:(%d+)$')
  if dpid and not seen[dpid] then
    seen[dpid] = true
    lapsed[#lapsed + 1] = dpid
  end
  local gpid = string.match(m, '^g:(%d+)$')
  if gpid then deadlines[#deadlines + 1] = gpid end
end
local disconnected = 0
for _, pid in ipairs(lapsed) do
  if not has_lease(pid) and mark_disconnected(pid, grace) then disconnected = disconnected + 1 end
end
local removed = 0
for _, pid in ipairs(deadlines) do
  if redis.call('HEXISTS', K_CONN, pid) == 0 then
    local uid = uid_of(pid)
    if uid then
      removed = removed + 1
      if remove_player(pid, uid, 'disconnected') then return {'OK', removed, disconnected} end
    end
  end
end
reschedule()
return {'OK', removed, disconnected}

-- presence_sweep: the janitor's visit to a room whose presence is due.
-- Leases past their expiry belong to streams whose instance stopped renewing
-- them (it died or lost Redis): they are dropped, and players left without a
-- lease are announced disconnected, as are players whose debounce window
-- ("d:<playerId>", see stream_close) passed without a new stream. Players
-- whose removal deadline passed
-- while still disconnected are removed (player_left, reason disconnected).
-- KEYS: prelude, with the indexes.
-- ARGV[7] grace (ms)
-- Reply: {"OK", removed players, players announced disconnected for a
-- lapsed lease, players announced disconnected after their debounce}
local grace = tonumber(ARGV[7])

if redis.call('EXISTS', K_ROOM) == 0 then
  redis.call('ZREM', K_DUE, room_id)
  return {'OK', 0, 0, 0}
end
local due = redis.call('ZRANGEBYSCORE', K_PRESENCE, '-inf', now)
local order, lapse, deadlines = {}, {}, {}
for _, m in ipairs(due) do
  redis.call('ZREM', K_PRESENCE, m)
  local pid = string.match(m, '^s:(%d+):')
  if pid then
    if lapse[pid] == nil then order[#order + 1] = pid end
    lapse[pid] = true -- a lapsed lease counts the player's disconnect as a lapse
  end
  local dpid = string.match(m, '^d:(%d+)$')
  if dpid and lapse[dpid] == nil then
    order[#order + 1] = dpid
    lapse[dpid] = false
  end
  local gpid = string.match(m, '^g:(%d+)$')
  if gpid then deadlines[#deadlines + 1] = gpid end
end
local lapsed, debounced = 0, 0
for _, pid in ipairs(order) do
  if not has_lease(pid) and mark_disconnected(pid, grace) then
    if lapse[pid] then lapsed = lapsed + 1 else debounced = debounced + 1 end
  end
end
local removed = 0
for _, pid in ipairs(deadlines) do
  if redis.call('HEXISTS', K_CONN, pid) == 0 then
    local uid = uid_of(pid)
    if uid then
      removed = removed + 1
      if remove_player(pid, uid, 'disconnected') then return {'OK', removed, lapsed, debounced} end
    end
  end
end
reschedule()
return {'OK', removed, lapsed, debounced}

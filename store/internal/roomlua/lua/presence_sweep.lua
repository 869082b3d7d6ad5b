-- presence_sweep: the janitor's visit to a room whose presence is due.
-- Leases past their expiry belong to streams whose instance stopped renewing
-- them (it died or lost Redis): they are dropped, and players left without a
-- lease are announced disconnected, as are players whose debounce window
-- ("d:<playerId>", see stream_close) passed without a new stream. Players
-- whose removal deadline passed
-- while still disconnected are removed (player_left, reason disconnected),
-- as are players whose connect deadline ("c:<playerId>", see add_player)
-- passed before any stream of theirs opened.
-- KEYS: prelude, with the indexes.
-- ARGV[7] grace (ms)
-- Reply: {"OK", removed players, players announced disconnected for a
-- lapsed lease, players announced disconnected after their debounce,
-- players removed for opening no stream within the connect grace}
local grace = tonumber(ARGV[7])

if redis.call('EXISTS', K_ROOM) == 0 then
  redis.call('ZREM', K_DUE, room_id)
  return {'OK', 0, 0, 0, 0}
end
local due = redis.call('ZRANGEBYSCORE', K_PRESENCE, '-inf', now)
local order, lapse, deadlines, unconnected = {}, {}, {}, {}
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
  local cpid = string.match(m, '^c:(%d+)$')
  if cpid then unconnected[#unconnected + 1] = cpid end
end
local lapsed, debounced = 0, 0
for _, pid in ipairs(order) do
  if not has_lease(pid) and mark_disconnected(pid, grace) then
    if lapse[pid] then lapsed = lapsed + 1 else debounced = debounced + 1 end
  end
end
-- remove drops each of pids still without a stream (player_left, reason
-- disconnected); returns how many it removed, and whether the room closed.
local function remove(pids)
  local n = 0
  for _, pid in ipairs(pids) do
    if redis.call('HEXISTS', K_CONN, pid) == 0 then
      local uid = uid_of(pid)
      if uid then
        n = n + 1
        if remove_player(pid, uid, 'disconnected') then return n, true end
      end
    end
  end
  return n, false
end
local removed, closed = remove(deadlines)
local never = 0
if not closed then never, closed = remove(unconnected) end
if not closed then reschedule() end
return {'OK', removed, lapsed, debounced, never}

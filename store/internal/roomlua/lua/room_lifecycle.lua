-- room_lifecycle: the janitor's look at a room whose lifecycle check is due
-- (KEYS[34]). In this order: seat reservations past their expiry are
-- dropped (reservation_expired, the seats free); a room older than its maximum lifetime closes
-- (room_closed, reason expired); a finished room closes once the retention
-- has passed since it finished (reason finished); a room with no mutation
-- ("up", which every event moves) and no connected player for the idle
-- timeout closes (reason expired); an event log left alone for the trim
-- delay, with no connected player, is dropped (a resume then gets a
-- snapshot, as from a log that moved on). Otherwise the next look is
-- scheduled at the earliest deadline that still applies. A connected
-- player's last stream ending is itself an event (player_disconnected), so
-- a room with players connected is looked at again one idle timeout later.
-- Mutations never touch the schedule: the look is lazy, and a room that was
-- busy is simply rescheduled.
-- KEYS: prelude, with the indexes and the schedule.
-- ARGV[7] idle timeout (ms, 0 never)  ARGV[8] finished retention (ms, 0 never)
-- ARGV[9] maximum lifetime (ms, 0 none)  ARGV[10] log trim delay (ms, 0 never)
-- Reply: {"OK", action, userId...}: "lifetime", "finished", "expired"
--        (closed; then the user ids of its members, for their personal
--        streams), "trimmed" (log dropped), "none", or "gone" (no such room)
local idle, retention = tonumber(ARGV[7]), tonumber(ARGV[8])
local lifetime, trim = tonumber(ARGV[9]), tonumber(ARGV[10])

local p = placement()
if not p then
  redis.call('ZREM', K_ROOMS_DUE, room_id)
  return {'OK', 'gone'}
end
local held_until -- the earliest expiry of a reservation still held
if p.rv > 0 then
  local r = redis.call('HGETALL', K_RESERVED)
  local gone, left = 0, 0
  for i = 1, #r, 2 do
    local exp = tonumber(r[i + 1])
    if exp <= now then
      gone = gone + 1
      redis.call('HDEL', K_RESERVED, r[i])
    else
      left = left + 1
      if not held_until or exp < held_until then held_until = exp end
    end
  end
  if gone > 0 then
    emit('reservation_expired', ',"seats":' .. gone .. ',"reservedSeats":' .. left, 'rv', left)
    local after = with_count(p, p.pc, left)
    reindex(p, nil, after)
    p = after
  end
end
local r = redis.call('HMGET', K_ROOM, 'up', 'fa')
local up = tonumber(r[1])
local finished_at = tonumber(r[2]) or up
local born = math.floor(tonumber(p.cr) / 1000)
local finished = p.st == 'finished'

-- closes the room for reason; the reply names the action and the members
local function closed(action, reason)
  return {'OK', action, unpack(close_room(reason, p))}
end
if lifetime > 0 and now >= born + lifetime then
  return closed('lifetime', 'expired')
end
if finished and retention > 0 and now >= finished_at + retention then
  return closed('finished', 'finished')
end
local connected = redis.call('HLEN', K_CONN) > 0
if idle > 0 and not connected and now >= up + idle then
  return closed('expired', 'expired')
end

local action = 'none'
local logged = redis.call('EXISTS', K_LOG) == 1
if logged and trim > 0 and not connected and now >= up + trim then
  redis.call('DEL', K_LOG)
  known_lb, known_ln = 0, 0
  -- "lt": the version the log was dropped at; the log starts after it
  redis.call('HSET', K_ROOM, 'lt', known_ver, 'lb', 0, 'ln', 0, 'lv', known_ver)
  logged, action = false, 'trimmed'
end

local next_at
local function at(t)
  if not next_at or t < next_at then next_at = t end
end
-- a connected room's idle clock starts no earlier than now
local quiet_since = connected and now or up
if lifetime > 0 then at(born + lifetime) end
if finished and retention > 0 then at(finished_at + retention) end
if idle > 0 then at(quiet_since + idle) end
if logged and trim > 0 then at(quiet_since + trim) end
if held_until then at(held_until) end
-- a dropped log comes back with the next event, which does not touch the
-- schedule: with no idle timeout to bring the room back, look again later
if not logged and trim > 0 and idle == 0 then at(now + 10 * trim) end
redis.call('ZADD', K_ROOMS_DUE, next_at and math.max(next_at, now + 1) or '+inf', room_id)
return {'OK', action}

-- seats_reserve: holds seats of a waiting room for named users until they
-- join or the reservation expires (room_lifecycle.lua drops it, with
-- reservation_expired). A reserved seat counts toward maxPlayers for
-- everyone else (joins, the joinable and fill indexes, quick-join); only
-- its user may take it, by id even in a private room (room_join.lua).
-- KEYS: prelude, with the indexes and the schedule.
-- ARGV[7] caller userId ("" = the server: no owner check)
-- ARGV[8] how long the seats are held (ms)
-- ARGV[9] the most players and held seats the room may have after it
--   ("": its maxPlayers; the matcher's backfill passes its mode's size,
--   which an owner's higher maxPlayers does not raise)
-- ARGV[10] "b": the matcher's backfill (its first hold): a user the room
--   banned (KEYS[35]), as a join would refuse them, or kicked (K_KICKED:
--   the matcher does not put them back), a member already in or a user
--   holding a seat already (they queued again: the match would
--   count a seat they do not take) is refused, and no seat is held for
--   anyone: {"REFUSED", userId...}; a locked room is ROOM_NOT_JOINABLE (no
--   joiner gets in, a seat's holder neither).
--   "r": a repair of a backfill (its first hold may have been made, and
--   taken): when every user is in the room already, nothing is done and
--   the reply is OK, whatever the room's status or lock (the match's seats
--   are taken); else banned and kicked users are refused, members skipped, holders
--   held again (their seats renewed for the new hold), and a locked or
--   started room is ROOM_NOT_JOINABLE.
--   "m": a match room's (the matcher's OpenMatchRoom, its first hold or a
--   repair's): the userIds come by ticket, each ticket's ended by "". The
--   bans come first, whatever the room's status (a room that started
--   after its ban refuses the banned alike), and kicks as bans (a user
--   the room kicked, not back in it, is not sent back): a ticket with a
--   user the room banned and none in the room is refused whole (a party is not
--   split), and no seat is held for anyone: {"REFUSED", its banned
--   userIds...}; the seats its users hold (a first hold's) stay until the
--   matcher has put its ticket back ("x"): a stale completion's refusal
--   of a match another completion told must not take a told user's seat. A ticket with a user in the room
--   keeps the match (that user must not be matched again): its banned
--   users are skipped, they cannot join. Then a room not waiting is
--   ROOM_NOT_JOINABLE, a locked one is not (as "").
--   "s": a repair of a match room whose match stands (its users are being
--   told: ticket_commit) as "m", but every ticket keeps the match: its
--   banned users are skipped, its others held again, none refused.
--   "x": the seats the userIds hold are released (reservation_expired),
--   whatever the room's status: their ticket went back to the queue, and
--   a seat taken would put them in two matches. Reply {"OK", seats held
--   left, "0"}.
--   "": the owner's: members are skipped, a user the room banned is
--   refused as in "b" and "r" ({"REFUSED", userId...}, nothing held)
-- ARGV[11..] the userIds (distinct); members already in are skipped, a user
--   already holding a seat gets the new expiry. The event names no user
--   (a player's userId is private to them): it counts.
-- Reply: {"OK", seats reserved in all, expiresAt (ms; 0: a repair with nothing to do)} | {"ROOM_NOT_FOUND"} |
--        {"NOT_A_MEMBER"} | {"NOT_OWNER"} | {"ROOM_NOT_JOINABLE"} |
--        {"REFUSED", userId...} | {"ROOM_FULL"}
local caller, ttl, seat_cap = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9])
local mode = ARGV[10]
local backfill, first_hold, match_room = mode == 'b' or mode == 'r', mode == 'b', mode == 'm' or mode == 's'
-- the userIds, and ("m") the tickets: each ticket's userIds
local users, tickets, ticket = {}, {}, {}
for i = 11, #ARGV do
  local uid = ARGV[i]
  if uid == '' then
    tickets[#tickets + 1] = ticket
    ticket = {}
  else
    users[#users + 1] = uid
    ticket[#ticket + 1] = uid
  end
end

local p = placement()
if not p then return {'ROOM_NOT_FOUND'} end
if caller ~= '' then
  local cp = redis.call('HGET', K_USERS, caller)
  if not cp then return deny(p.vi) end
  if p.ow ~= cp then return {'NOT_OWNER'} end
end
if mode == 'x' then
  local released = 0
  if p.rv > 0 then
    for _, uid in ipairs(users) do released = released + redis.call('HDEL', K_RESERVED, uid) end
  end
  if released > 0 then
    emit('reservation_expired', ',"seats":' .. released .. ',"reservedSeats":' .. (p.rv - released), 'rv', p.rv - released)
    reindex(p, nil, with_count(p, p.pc, p.rv - released))
  end
  return {'OK', p.rv - released, '0'}
end
if mode == 'r' then -- a repair whose users all took their seats: done
  local done = true
  for _, uid in ipairs(users) do
    if redis.call('HEXISTS', K_USERS, uid) == 0 then
      done = false
      break
    end
  end
  if done then return {'OK', p.rv, '0'} end
end
-- "m": the banned (or kicked, and not back) users of the tickets that
-- keep the match (one of their users is in the room), who get no seat
local skipped = {}
if match_room and (p.bn ~= '0' or redis.call('EXISTS', K_KICKED) == 1) then
  local refused = {'REFUSED'}
  for _, t in ipairs(tickets) do
    local banned, inside = {}, mode == 's'
    for _, uid in ipairs(t) do
      if redis.call('HEXISTS', K_USERS, uid) == 1 then
        inside = true -- a member (a banned user never is one)
      elseif (p.bn ~= '0' and redis.call('SISMEMBER', K_BANS, uid) == 1) or redis.call('ZSCORE', K_KICKED, uid) then
        banned[#banned + 1] = uid
      end
    end
    for _, uid in ipairs(banned) do
      if inside then skipped[uid] = true else refused[#refused + 1] = uid end
    end
  end
  if #refused > 1 then return refused end
end
if p.st ~= 'waiting' or (backfill and p.lk == '1') then return {'ROOM_NOT_JOINABLE'} end
-- a user the room banned is refused whoever holds the seats (a join would
-- refuse them, and their seat would keep the room full for others until
-- it lapsed), and so, by a backfill, is a user the room kicked (K_KICKED:
-- the matcher does not put them back) unless they came back by hand (a
-- member: a repair skips them), and, on a backfill's first hold, its
-- members and holders: no seat is held for anyone
if not match_room and (p.bn ~= '0' or backfill) then
  local refused = {'REFUSED'}
  for _, uid in ipairs(users) do
    if (p.bn ~= '0' and redis.call('SISMEMBER', K_BANS, uid) == 1) or
        (backfill and redis.call('ZSCORE', K_KICKED, uid) and redis.call('HEXISTS', K_USERS, uid) == 0) or (first_hold and
        (redis.call('HEXISTS', K_USERS, uid) == 1 or (p.rv > 0 and redis.call('HEXISTS', K_RESERVED, uid) == 1))) then
      refused[#refused + 1] = uid
    end
  end
  if #refused > 1 then return refused end
end

local expires = now + ttl
local fresh, held, pairs_ = 0, 0, {}
for _, uid in ipairs(users) do
  if not skipped[uid] and redis.call('HEXISTS', K_USERS, uid) == 0 then
    if redis.call('HEXISTS', K_RESERVED, uid) == 0 then fresh = fresh + 1 end
    held = held + 1
    pairs_[#pairs_ + 1] = uid
    pairs_[#pairs_ + 1] = num(expires)
  end
end
local most = p.mx
if seat_cap and seat_cap < most then most = seat_cap end
if p.pc + p.rv + fresh > most then return {'ROOM_FULL'} end
if held == 0 then return {'OK', p.rv, num(expires)} end

redis.call('HSET', K_RESERVED, unpack(pairs_))
local rv = p.rv + fresh
emit('seats_reserved', ',"seats":' .. held .. ',"reservedSeats":' .. rv .. ',"expiresAt":"' .. iso(expires) .. '"', 'rv', rv)
reindex(p, nil, with_count(p, p.pc, rv))
-- the janitor looks at the room when the seats expire, or earlier
redis.call('ZADD', K_ROOMS_DUE, 'LT', expires, room_id)
return {'OK', rv, num(expires)}

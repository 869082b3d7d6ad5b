-- room_read: one consistent read of a room, its players, who is connected,
-- and optionally its state. Read-only; no prelude.
-- KEYS[1] room hash  KEYS[2] players hash  KEYS[3] users hash  KEYS[4] state hash
-- KEYS[5] connected players hash
-- ARGV[1] "1" to include the state
-- Reply: {"OK", room, players, users, conn, state} | {"ROOM_NOT_FOUND"}
local room = redis.call('HGETALL', KEYS[1])
if #room == 0 then return {'ROOM_NOT_FOUND'} end
local state = {}
if ARGV[1] == '1' then state = redis.call('HGETALL', KEYS[4]) end
return {'OK', room, redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3]),
  redis.call('HKEYS', KEYS[5]), state}

-- message_list: a member (or the server) reads the message log, newest
-- first. Read-only; no prelude. Filtering by recipient happens in Go (the
-- reply carries the caller's playerId; 0 for the server, which sees all).
-- KEYS[1] room hash  KEYS[2] users hash  KEYS[3] message log
-- ARGV[1] userId ("" = the server: no membership check)
-- ARGV[2] highest version to return ("+" for all)  ARGV[3] COUNT
-- Reply: {"OK", playerId, entries} | {"ROOM_NOT_FOUND"} | {"NOT_A_MEMBER"}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'ROOM_NOT_FOUND'} end
local pid = '0'
if ARGV[1] ~= '' then pid = redis.call('HGET', KEYS[2], ARGV[1]) end
if not pid then
  if redis.call('HGET', KEYS[1], 'vi') == 'private' then return {'ROOM_NOT_FOUND'} end
  return {'NOT_A_MEMBER'}
end
return {'OK', pid, redis.call('XREVRANGE', KEYS[3], ARGV[2], '-', 'COUNT', ARGV[3])}

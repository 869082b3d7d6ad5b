-- ticket_user: a user's one active ticket (tickets.go), in the user's
-- slot. No prelude.
-- KEYS[1] the user's active-ticket key (string "<ticket id> <claimed at,
--         ms>"; it expires with the ticket's TTL and grace)
-- ARGV[1] op: "claim" or "release"  ARGV[2] the ticket's id
-- ARGV[3] claim: the id it may replace ("": only when none is held)
-- ARGV[4] claim: the TTL, ms
-- Replies: claim {"OK"} | {"HELD", id held, claimed at ms}; release {"OK"}
local key, op, id = KEYS[1], ARGV[1], ARGV[2]
local cur = redis.call('GET', key)
local cur_id, cur_at = nil, '0'
if cur then cur_id, cur_at = string.match(cur, '^(%S+) (%d+)$') end
if op == 'claim' then
  if cur_id and cur_id ~= id and cur_id ~= ARGV[3] then return {'HELD', cur_id, cur_at} end
  local T = redis.call('TIME')
  local now = tonumber(T[1]) * 1000 + math.floor(tonumber(T[2]) / 1000)
  redis.call('SET', key, id .. ' ' .. string.format('%d', now), 'PX', ARGV[4])
  return {'OK'}
end
if cur_id == id then redis.call('DEL', key) end
return {'OK'}

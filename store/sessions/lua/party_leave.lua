-- party_leave: takes a user out of their party (DELETE /v1/me/party,
-- party.go), leaving for a while "<expiry, ms>", the left party's expiry
-- without a leader (no party to any reader), so that a join meanwhile
-- (party_set) takes an expiry past it: the leave's party_members_drop,
-- which removes the entry of that expiry, then never takes the join's.
-- A second run of one call changes nothing more (its tombstone, renewed,
-- names no leader). No prelude.
-- KEYS[1] the user's party key
-- ARGV[1] how long the tombstone is kept (ms)
-- Reply: the replaced value, or false (none)
local old = redis.call('GET', KEYS[1])
if not old then return false end
local exp = string.match(old, '^(%d+)')
if exp then
  redis.call('SET', KEYS[1], exp, 'PX', ARGV[1])
else
  redis.call('DEL', KEYS[1])
end
return old

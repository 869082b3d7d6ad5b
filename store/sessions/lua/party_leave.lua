-- party_leave: takes a user out of their party (DELETE /v1/me/party,
-- party.go), leaving "<expiry, ms>", the left party's expiry without a
-- leader (no party to any reader), until that expiry (KEEPTTL): a join
-- meanwhile (party_set) then takes an expiry past it, and the leave's
-- party_members_drop, which removes the entry of that expiry, never takes
-- the join's. The key lives no longer than the party would have. Out of
-- memory (maxmemory, noeviction) Redis refuses the trace's SET: the key
-- is deleted then, which frees memory, and a leave still goes through
-- (the trace's guard lost for that leave: a join of the user's racing it
-- at the left party's expiry may then be written and its entry dropped
-- by the leave, the user in the party but unlisted until it joins
-- again; consent is not affected). A second run of one call
-- changes nothing more. No prelude.
-- KEYS[1] the user's party key
-- Reply: the replaced value, or false (none)
local old = redis.call('GET', KEYS[1])
if not old then return false end
local exp = string.match(old, '^(%d+)')
local kept = exp and redis.pcall('SET', KEYS[1], exp, 'KEEPTTL')
if not kept or kept.err then redis.call('DEL', KEYS[1]) end
return old

-- party_set: puts a user in a leader's party (PUT /v1/me/party,
-- party.go), replacing the party the user was in, after the user was
-- listed in the leader's members (party_members_add). The party's expiry
-- is the one asked, or one millisecond past the replaced party's (or the
-- left one's, party_leave's tombstone) when that is as late: a user's
-- successive parties never share an expiry, by which party_members_drop
-- tells the replaced party's entry from a new one. Sent once (a second run
-- would renew the party again). No prelude.
-- KEYS[1] the user's party key ("<expiry, ms> <leader's userId>")
-- ARGV[1] the expiry asked (ms)  ARGV[2] the leader's userId  ARGV[3] TTL (ms)
-- Reply: {the replaced value or false, the expiry set (ms)}
local old = redis.call('GET', KEYS[1])
local exp = tonumber(ARGV[1])
if old then
  local was = tonumber(string.match(old, '^(%d+)'))
  if was and was >= exp then exp = was + 1 end
end
redis.call('SET', KEYS[1], string.format('%d', exp) .. ' ' .. ARGV[2], 'PX', ARGV[3])
return {old, exp}

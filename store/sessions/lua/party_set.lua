-- party_set: puts a user in a leader's party (PUT /v1/me/party,
-- party.go), replacing the party the user was in, after the user was
-- listed in the leader's members at the expiry asked (party_members_add).
-- Written only when the party key holds no expiry as late (a party's, or
-- the one a leave left, party_leave): a user's successive parties then
-- never share an expiry, by which party_members_drop tells the replaced
-- party's entry from a new one, and the member is always listed at the
-- expiry written, or a later one (a score only rises), before it is
-- written. Else nothing is written, and the caller lists the user past
-- the expiry held and asks again, unless the key holds the very party
-- asked (the party the user is in, or another join of the user's asking
-- the same expiry: two joins refused by one party ask the same one past
-- it): that is written, replacing nothing (whoever wrote it unlists what
-- it replaced), its TTL set as a write's. Sent once (a second run would renew the party again). No
-- prelude.
-- KEYS[1] the user's party key ("<expiry, ms> <leader's userId>")
-- ARGV[1] the expiry asked (ms)  ARGV[2] the leader's userId  ARGV[3] TTL (ms)
-- Reply: {1, the replaced value or false} written |
--        {0, the expiry held (ms)} not written
local old = redis.call('GET', KEYS[1])
if old == ARGV[1] .. ' ' .. ARGV[2] then
  -- its TTL as a write's: the key's life is the party's, whatever was
  -- done to it meanwhile (a join within the millisecond of the same
  -- leader's last asks its very expiry)
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {1, false}
end
if old then
  local was = tonumber(string.match(old, '^(%d+)'))
  if was and was >= tonumber(ARGV[1]) then return {0, was} end
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[2], 'PX', ARGV[3])
return {1, old}

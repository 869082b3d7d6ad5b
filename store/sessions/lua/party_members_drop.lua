-- party_members_drop: takes a user out of a leader's party members once
-- the user's party key no longer names the leader (another join, or a
-- leave: party.go), only while the user's entry still has the expiry of
-- the key it replaced. A join of the same leader meanwhile listed the user
-- again with a later expiry, which this leaves. A second run of one call
-- removes nothing more. No prelude.
-- KEYS[1] the leader's party members (zset userId -> expiry, ms)
-- ARGV[1] userId  ARGV[2] the expiry (ms) its replaced party key had
-- Reply: 1 removed | 0 not listed, or listed again
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0

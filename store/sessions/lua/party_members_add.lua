-- party_members_add: lists a user in a leader's party members (the
-- leader's side of PUT /v1/me/party, party.go), before the user's own
-- party key names the leader: the list holds every member and maybe a
-- few more, which a read checks against the members' keys. Drops the
-- members past their expiry and, past MAX, the earliest to expire; the
-- list expires with its latest member. A second run of one call changes
-- nothing more. A member's entry only rises (GT): a late add of an earlier
-- expiry (a join whose party key was written before another's, an
-- instance whose clock is behind) must not bring back the expiry of a
-- party replaced since, which party_members_drop would then take for the
-- replaced party's and remove. Out of memory the ZADD, the first write, is
-- refused before anything changed. No prelude.
-- KEYS[1] the leader's party members (zset userId -> expiry, ms)
-- ARGV[1] userId  ARGV[2] its expiry (ms)  ARGV[3] now (ms)  ARGV[4] TTL (ms)
-- ARGV[5] MAX (members kept)
-- Reply: 1
redis.call('ZADD', KEYS[1], 'GT', ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -tonumber(ARGV[5]) - 1)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1

-- quickjoin_lock: takes a user's quick-join lock for a token (SET NX PX),
-- or finds it held by that very token: a call sent again after its reply
-- was lost. A script, not a SET, so that it leaves with the other scripts
-- bound for its node in one batch (store/internal/batch batches scripts,
-- not plain commands). With the room quotas on, a quick-join into one
-- region also makes the first try of its placeholder reservation here,
-- once the lock is its own (holdings_reserve, a function of
-- holdings.FunctionsLua run ahead of this code): the user's holdings are
-- in the lock's slot, so one call does both. Run again, the reservation
-- finds its placeholder held and stamps it anew: nothing more.
-- KEYS[1] the lock (string: the holder's token)
-- KEYS[2] the user's holdings (only with a reservation to make)
-- ARGV[1] token  ARGV[2] lock TTL (ms)
-- ARGV[3..] holdings_reserve's ARGV (with KEYS[2])
-- Reply: {"OK", 1 when the token holds the lock, else 0[, holdings_reserve's
--        reply, when it does and KEYS[2] is given]}
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {'OK', 0}
end
local out = {'OK', 1}
if KEYS[2] then
  for _, v in ipairs(holdings_reserve({KEYS[2]}, {unpack(ARGV, 3)})) do out[#out + 1] = v end
end
return out

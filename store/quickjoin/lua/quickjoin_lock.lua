-- quickjoin_lock: takes a user's quick-join lock for a token (SET NX PX),
-- or finds it held by that very token: a call sent again after its reply
-- was lost. A script, not a SET, so that it leaves with the other scripts
-- bound for its node in one batch (store/internal/batch batches scripts,
-- not plain commands). No prelude.
-- KEYS[1] the lock (string: the holder's token)
-- ARGV[1] token  ARGV[2] lock TTL (ms)
-- Reply: {"OK", 1 when the token holds the lock, else 0}
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {'OK', 1}
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return {'OK', 1}
end
return {'OK', 0}

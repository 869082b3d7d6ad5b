-- idempotency: a caller's Idempotency-Key record (store/idempotency/idempotency.go).
-- No prelude.
-- KEYS[1] the record: hash fp (the request's fingerprint), tk (the claim's
--         token), st ("run" while the request runs, "done" once answered),
--         and once done: code, ct (Content-Type), loc (Location), body
-- ARGV[1] op: "claim", "record" or "release"  ARGV[2] the claim's token
-- ARGV[3] fingerprint (claim)  ARGV[4] hold (claim) or TTL (record), ms
-- ARGV[5] code  ARGV[6] ct  ARGV[7] loc  ARGV[8] body (record)
-- ARGV[9] claim: the latest time, in ms since the epoch, at which a claim
--         is made ("0": any); after it its caller has given up (the call
--         was cut, the request answered 503: Redis had hung with the claim
--         in its socket), and a claim made then would hold the key for
--         nothing, every retry 409 IN_USE until the hold passed
-- Replies: claim {"NEW"} | {"MISMATCH"} | {"IN_USE"} |
--          {"DONE", code, ct, loc, body} | {"LATE"} (nothing written);
--          record {"OK"} | {"LOST"} (the hold passed and another claimed it);
--          release {"OK"}
local op, token = ARGV[1], ARGV[2]
if op == 'claim' then
  local by = tonumber(ARGV[9]) or 0
  if by > 0 then
    local t = redis.call('TIME')
    if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > by then return {'LATE'} end
  end
  local r = redis.call('HMGET', KEYS[1], 'fp', 'st', 'code', 'ct', 'loc', 'body')
  if not r[1] then
    redis.call('HSET', KEYS[1], 'fp', ARGV[3], 'tk', token, 'st', 'run')
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    return {'NEW'}
  end
  if r[1] ~= ARGV[3] then return {'MISMATCH'} end
  if r[2] ~= 'done' then return {'IN_USE'} end
  return {'DONE', r[3], r[4], r[5], r[6]}
end
if redis.call('HGET', KEYS[1], 'tk') ~= token then
  if op == 'record' then return {'LOST'} end
  return {'OK'}
end
if op == 'record' then
  redis.call('HSET', KEYS[1], 'st', 'done', 'code', ARGV[5], 'ct', ARGV[6], 'loc', ARGV[7], 'body', ARGV[8])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return {'OK'}
end
if redis.call('HGET', KEYS[1], 'st') == 'run' then redis.call('DEL', KEYS[1]) end
return {'OK'}

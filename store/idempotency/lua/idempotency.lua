-- idempotency: a caller's Idempotency-Key record (store/idempotency/idempotency.go).
-- No prelude.
-- KEYS[1] the record: hash fp (the request's fingerprint), tk (the claim's
--         token), st ("run" while the request runs, "done" once answered),
--         and once done: code, ct (Content-Type), loc (Location), body
-- KEYS[2], KEYS[3] when ARGV[10] > 0 (the caller's budget): the caller's
--         answers kept (zset "<record key> <token> <bytes>" → ms recorded)
--         and their bytes in all (a string); both expire with the last
--         answer, in the record's slot
-- ARGV[1] op: "claim", "record", "release" or "redo"  ARGV[2] the claim's
--         token
-- ARGV[3] fingerprint (claim)  ARGV[4] hold (claim) or TTL (record), ms
-- ARGV[5] code  ARGV[6] ct  ARGV[7] loc  ARGV[8] body (record)
-- ARGV[9] claim: the latest time, in ms since the epoch, at which a claim
--         is made ("0": any); after it its caller has given up (the call
--         was cut, the request answered 503: Redis had hung with the claim
--         in its socket), and a claim made then would hold the key for
--         nothing, every retry 409 IN_USE until the hold passed
-- ARGV[10] the caller's budget: the bytes its kept answers may hold ("0":
--          none); a new key is refused while they hold it
-- ARGV[11] claim: how long an answer is kept (ms), after which it leaves
--          the budget
-- ARGV[12] record: the receipt of the request's write ("" none: field rc),
--          which a replay checks against its target (idempotency.go);
--          redo: the token of the answer taken back
-- redo is a claim (ARGV[2..11] as a claim's) of a key whose answer, the
-- one recorded with the token ARGV[12], names a write its target lost (a
-- failover of Redis that lost writes): that answer leaves, and the key is
-- claimed again ({"NEW"}); a record that no longer holds that answer (a
-- retry redid it first) is claimed as it is (its answer, IN_USE, ...)
-- Replies: claim {"NEW"} | {"MISMATCH"} | {"IN_USE"} |
--          {"DONE", code, ct, loc, body, token, receipt} |
--          {"LATE", Redis' time in ms}
--          (nothing written) |
--          {"OVER", ms until the oldest kept answer expires} (nothing
--          written); record {"OK"} | {"LOST"} (the hold passed and another
--          claimed it); release {"OK"}
local op, token = ARGV[1], ARGV[2]
local budget = tonumber(ARGV[10]) or 0
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- size is what a record of an answer and its ledger entry take in Redis:
-- the answer's bytes, its receipt's, and 1 000 more (a reviewer's MEMORY
-- USAGE of such records, before receipts: 768 bytes for a 100-byte
-- answer, 3 216 for 2 500, 41 616 for 40 000; a ledger entry about 200)
local function size(ct, loc, body, rc) return #ct + #loc + #body + #(rc or '') + 1000 end
if op == 'redo' or op == 'claim' then
  local by = tonumber(ARGV[9]) or 0
  if by > 0 then
    local now = now_ms()
    if now > by then return {'LATE', tostring(now)} end
  end
  local r = redis.call('HMGET', KEYS[1], 'fp', 'st', 'code', 'ct', 'loc', 'body', 'tk', 'rc')
  if op == 'redo' and r[1] == ARGV[3] and r[2] == 'done' and r[7] == ARGV[12] then
    if budget > 0 then -- the answer taken back leaves the budget
      local n = size(r[4], r[5], r[6], r[8])
      if redis.call('ZREM', KEYS[2], KEYS[1] .. ' ' .. r[7] .. ' ' .. n) == 1 then
        redis.call('DECRBY', KEYS[3], n)
      end
    end
    redis.call('HDEL', KEYS[1], 'code', 'ct', 'loc', 'body', 'rc')
    redis.call('HSET', KEYS[1], 'tk', token, 'st', 'run')
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    return {'NEW'}
  end
  if not r[1] then
    if budget > 0 then
      -- the answers kept past their TTL leave the budget
      local now, ttl = now_ms(), tonumber(ARGV[11])
      local gone, n = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - ttl), 0
      for _, m in ipairs(gone) do n = n + tonumber(string.match(m, ' (%d+)$')) end
      local spent
      if #gone > 0 then
        redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ttl)
        spent = redis.call('DECRBY', KEYS[3], n)
      else
        spent = tonumber(redis.call('GET', KEYS[3]) or '0')
      end
      -- a count below zero, or without its entries: a memory policy that
      -- evicts took one of the two keys; counted afresh
      if spent ~= 0 and (spent < 0 or redis.call('EXISTS', KEYS[2]) == 0) then
        redis.call('DEL', KEYS[3])
        spent = 0
      end
      if spent >= budget then
        local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
        return {'OVER', tostring(math.max((tonumber(first[2]) or now) + ttl - now, 0))}
      end
    end
    redis.call('HSET', KEYS[1], 'fp', ARGV[3], 'tk', token, 'st', 'run')
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    return {'NEW'}
  end
  if r[1] ~= ARGV[3] then return {'MISMATCH'} end
  if r[2] ~= 'done' then return {'IN_USE'} end
  return {'DONE', r[3], r[4], r[5], r[6], r[7] or '', r[8] or ''}
end
if redis.call('HGET', KEYS[1], 'tk') ~= token then
  if op == 'record' then return {'LOST'} end
  return {'OK'}
end
if op == 'record' then
  redis.call('HSET', KEYS[1], 'st', 'done', 'code', ARGV[5], 'ct', ARGV[6], 'loc', ARGV[7], 'body', ARGV[8])
  if ARGV[12] ~= '' then redis.call('HSET', KEYS[1], 'rc', ARGV[12]) end
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  if budget > 0 then
    local n = size(ARGV[6], ARGV[7], ARGV[8], ARGV[12])
    redis.call('ZADD', KEYS[2], now_ms(), KEYS[1] .. ' ' .. token .. ' ' .. n)
    redis.call('INCRBY', KEYS[3], n)
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
    redis.call('PEXPIRE', KEYS[3], ARGV[4])
  end
  return {'OK'}
end
if redis.call('HGET', KEYS[1], 'st') == 'run' then redis.call('DEL', KEYS[1]) end
return {'OK'}

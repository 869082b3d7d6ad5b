-- gcra_check: GCRA (the generic cell rate algorithm) over one or more keys
-- of one hash slot, all or nothing: a request is counted against every key
-- when every key allows it, and against none when one refuses it. Each key
-- holds its theoretical arrival time (TAT, µs on the Redis clock) and
-- expires when it would have drained, so an idle counter leaves no key.
-- KEYS[i]     one counter per limit
-- ARGV[1]     mode: "take" (count the request when allowed), "peek" (only
--             tell whether it would be allowed), "give" (hand one request
--             back: the TAT moves one interval earlier, never before now)
--             or "lease" (one key only: first hand back the ARGV[5]
--             requests an expired lease held unspent, then take as many
--             requests as the key allows now, up to ARGV[4], at least one:
--             an instance spends them itself, store/ratelimit/lease.go).
--             The lease that held them left the TAT at ARGV[6] (µs): they
--             are the requests just before it, and only those still ahead
--             of now are handed back (the others the counter refilled
--             anyway), and only when the TAT is not behind ARGV[6] (a give
--             moved it): handing back never gives a request twice
-- ARGV[2i]    the key's emission interval T (µs per request)
-- ARGV[2i+1]  the key's burst B (requests allowed at once from idle)
-- Reply: {"OK"|"LIMITED", then per key: allowed (0|1), remaining (after
--         what was taken), retry after (µs, 0 when allowed), reset after
--         (µs until the key is back to its full burst)}; a lease adds the
--         requests taken and the TAT it left (µs; 0 and 0 when refused)
local mode = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local want = 1
if mode == 'lease' then
  if #KEYS ~= 1 then return redis.error_reply('ERR gcra_check: a lease takes one key') end
  want = tonumber(ARGV[4])
  local back, from = tonumber(ARGV[5]), tonumber(ARGV[6])
  if back > 0 then
    local tat = tonumber(redis.call('GET', KEYS[1]) or 0)
    local interval = tonumber(ARGV[2])
    back = math.min(back, math.floor((from - now) / interval))
    if back > 0 and tat >= from then
      tat = tat - interval * back
      redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.max(1, math.ceil((tat - now) / 1000)))
    end
  end
end

local reply = {'OK'}
local taken = 0 -- by a lease
local tats = {}
local limited = false
for i = 1, #KEYS do
  local interval = tonumber(ARGV[2 * i])
  local burst = tonumber(ARGV[2 * i + 1])
  local tat = tonumber(redis.call('GET', KEYS[i]) or now)
  if tat < now then tat = now end
  local new_tat, n = nil, 1
  if mode == 'give' then
    new_tat = math.max(tat - interval, now)
  else
    if want > 1 then -- a lease: as many as the key allows now, up to want
      n = math.max(1, math.min(want, math.floor((now + interval * burst - tat) / interval)))
    end
    new_tat = tat + interval * n
    taken = n
  end
  local allow_at = new_tat - interval * burst
  local allowed, remaining, retry, reset = 1, 0, 0, new_tat - now
  if mode ~= 'give' and now < allow_at then
    allowed, limited = 0, true
    retry, reset = allow_at - now, tat - now
  else
    remaining = math.floor((now - allow_at) / interval)
  end
  tats[i] = new_tat
  reply[#reply + 1] = allowed
  reply[#reply + 1] = remaining
  reply[#reply + 1] = retry
  reply[#reply + 1] = reset
end
if limited then
  reply[1] = 'LIMITED'
  if mode == 'lease' then reply[#reply + 1], reply[#reply + 2] = 0, 0 end
  return reply
end
if mode == 'peek' then return reply end
for i = 1, #KEYS do
  local ttl = math.ceil((tats[i] - now) / 1000)
  if ttl > 0 then
    redis.call('SET', KEYS[i], string.format('%d', tats[i]), 'PX', ttl)
  else
    redis.call('DEL', KEYS[i])
  end
end
if mode == 'lease' then reply[#reply + 1], reply[#reply + 2] = taken, string.format('%d', tats[1]) end
return reply

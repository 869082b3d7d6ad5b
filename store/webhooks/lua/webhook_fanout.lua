-- webhook_fanout: turns one webhook outbox entry into one delivery per
-- endpoint that wants its type, atomically with its acknowledgement, so an
-- event is fanned out exactly once whichever instance (or a second one,
-- after XAUTOCLAIM) runs it. An endpoint whose backlog in the shard (its
-- deliveries in the stream and in the retries, counted in the backlog
-- hash) has reached the bound gets no delivery: the event goes to the
-- dead letters for it, untried (0 tries), with the error given, so one
-- endpoint's backlog never fills the shared deliveries stream, nor holds
-- the others' events. But when every endpoint in force is at its bound
-- (the only one is down), refusing would let no one's events through:
-- the entry is left as it is, in the outbox and pending for the caller,
-- to be fanned out once one has room. One shard's keys (one slot):
--   KEYS[1] outbox (stream: t type, d event JSON)
--   KEYS[2] deliveries (stream: e endpoint, m message id, t, d, n retry count)
--   KEYS[3] backlog (hash: endpoint -> its deliveries + retries; a field
--           at 0 is deleted)
--   KEYS[4] dead letters (stream, capped: deadLetter, prelude.lua)
--   ARGV[1] consumer group   ARGV[2] outbox entry id   ARGV[3] message id
--   ARGV[4] the bound of an endpoint's backlog   ARGV[5] the dead letters' cap, "<count> <bytes>"
--   ARGV[6] now (ms)   ARGV[7] the dead letter's error
--   ARGV[8] w, the number of endpoints that want the entry's type
--   ARGV[9..8+w] those endpoints   ARGV[9+w..] the other endpoints in force
-- Returns {status, refused...}: status 'gone' (the entry was fanned out
-- already, or trimmed: acknowledged), 'held' (every endpoint in force at
-- the bound, one wanting it at least: nothing written) or 'fanned' (the
-- deliveries added, the entry acknowledged and deleted), then the
-- endpoints refused for their backlog.
local bound = tonumber(ARGV[4])
local w = tonumber(ARGV[8])
local e = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
if not e[1] then
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
  return {'gone'}
end
local function full(ep)
  return tonumber(redis.call('HGET', KEYS[3], ep) or '0') >= bound
end
local room = false
for i = 9, #ARGV do
  if not full(ARGV[i]) then
    room = true
    break
  end
end
if w > 0 and not room then
  return {'held'}
end
local f = e[1][2]
local etype, ev
for i = 1, #f, 2 do
  if f[i] == 't' then etype = f[i + 1] elseif f[i] == 'd' then ev = f[i + 1] end
end
local out = {'fanned'}
for i = 9, 8 + w do
  local ep = ARGV[i]
  if full(ep) then
    deadLetter(KEYS[4], ARGV[5], {'e', ep, 'm', ARGV[3], 't', etype, 'd', ev, 'n', 0, 'at', ARGV[6], 'err', ARGV[7]})
    out[#out + 1] = ep
  else
    redis.call('XADD', KEYS[2], '*', 'e', ep, 'm', ARGV[3], 't', etype, 'd', ev, 'n', 0)
    redis.call('HINCRBY', KEYS[3], ep, 1)
  end
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
return out

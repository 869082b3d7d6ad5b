-- webhook_fanout: turns one webhook outbox entry into one delivery per
-- endpoint that wants its type, atomically with its acknowledgement, so an
-- event is fanned out exactly once whichever instance (or a second one,
-- after XAUTOCLAIM) runs it. An endpoint whose backlog in the shard (its
-- deliveries in the stream and in the retries, counted in the backlog
-- hash) has reached the bound gets no delivery: the event goes to the
-- dead letters for it, untried (0 tries), with the error given, so one
-- endpoint's backlog never fills the shared deliveries stream. One shard's
-- keys (one slot):
--   KEYS[1] outbox (stream: t type, d event JSON)
--   KEYS[2] deliveries (stream: e endpoint, m message id, t, d, n retry count)
--   KEYS[3] backlog (hash: endpoint -> its deliveries + retries; a field
--           at 0 is deleted)
--   KEYS[4] dead letters (stream, capped: deadLetter, prelude.lua)
--   ARGV[1] consumer group   ARGV[2] outbox entry id   ARGV[3] message id
--   ARGV[4] the bound of an endpoint's backlog   ARGV[5] the dead letters' cap, "<count> <bytes>"
--   ARGV[6] now (ms)   ARGV[7] the dead letter's error
--   ARGV[8..] the endpoints that want the entry's type
-- Returns the endpoints refused for their backlog (none: the entry was
-- already gone, or every endpoint had room).
local e = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
local refused = {}
if e[1] then
  local f = e[1][2]
  local etype, ev
  for i = 1, #f, 2 do
    if f[i] == 't' then etype = f[i + 1] elseif f[i] == 'd' then ev = f[i + 1] end
  end
  local bound = tonumber(ARGV[4])
  for i = 8, #ARGV do
    local ep = ARGV[i]
    if tonumber(redis.call('HGET', KEYS[3], ep) or '0') >= bound then
      deadLetter(KEYS[4], ARGV[5], {'e', ep, 'm', ARGV[3], 't', etype, 'd', ev, 'n', 0, 'at', ARGV[6], 'err', ARGV[7]})
      refused[#refused + 1] = ep
    else
      redis.call('XADD', KEYS[2], '*', 'e', ep, 'm', ARGV[3], 't', etype, 'd', ev, 'n', 0)
      redis.call('HINCRBY', KEYS[3], ep, 1)
    end
  end
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
return refused

-- webhook_fanout: turns one webhook outbox entry into one delivery per
-- endpoint that wants its type, atomically with its acknowledgement, so an
-- event is fanned out exactly once whichever instance (or a second one,
-- after XAUTOCLAIM) runs it. One shard's keys (one slot):
--   KEYS[1] outbox (stream: t type, d event JSON)
--   KEYS[2] deliveries (stream: e endpoint, m message id, t, d, n retry count)
--   ARGV[1] consumer group   ARGV[2] outbox entry id   ARGV[3] message id
--   ARGV[4..] the endpoints that want the entry's type
-- Returns the number of deliveries added (0: the entry was already gone).
local e = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
local n = 0
if e[1] then
  local f = e[1][2]
  local etype, ev
  for i = 1, #f, 2 do
    if f[i] == 't' then etype = f[i + 1] elseif f[i] == 'd' then ev = f[i + 1] end
  end
  for i = 4, #ARGV do
    redis.call('XADD', KEYS[2], '*', 'e', ARGV[i], 'm', ARGV[3], 't', etype, 'd', ev, 'n', 0)
    n = n + 1
  end
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
return n

-- receipt: whether the write a receipt names (receipt.go) is in its
-- target's history, read in the target's slot. No prelude.
-- KEYS[1] the stream the write was logged in: entries "<position>-0",
--         each with its write's tag in field g
-- KEYS[2] the hash whose field ARGV[1] is the stream's head position
-- ARGV[2] the write's position  ARGV[3] its tag
-- Reply: "HELD" (the entry is there, with that tag) |
--        "LOST" (another write's entry is at the position; the head is
--        below it; or the stream holds entries before it and not it: it is
--        trimmed from the oldest) |
--        "UNTOLD" (trimmed, or an entry without a tag) |
--        "GONE" (no head: the history is gone)
local pos = tonumber(ARGV[2])
local e = redis.call('XRANGE', KEYS[1], pos .. '-0', pos .. '-0')[1]
if e then
  for i = 1, #e[2], 2 do
    if e[2][i] == 'g' then
      if e[2][i + 1] == ARGV[3] then return 'HELD' end
      return 'LOST'
    end
  end
  return 'UNTOLD'
end
local head = tonumber(redis.call('HGET', KEYS[2], ARGV[1]))
if not head then return 'GONE' end
if head < pos then return 'LOST' end
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
if first and tonumber(string.match(first[1], '^(%d+)')) < pos then return 'LOST' end
return 'UNTOLD'

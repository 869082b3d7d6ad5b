-- receipt_check: whether the write a receipt names (receipt.go) is in its
-- target's history, read in the target's slot. No prelude.
-- KEYS[1] the stream the write was logged in: entries "<position>-0",
--         each with its write's tag in field g
-- KEYS[2] the hash of the stream's head: its position in field ARGV[1],
--         and the history's tag in field ARGV[4] (when given)
-- ARGV[2] the write's position  ARGV[3] its tag
-- ARGV[4] "" (the history is never started anew: a room's), or the head's
--         field naming the history (a personal log's "tag": a log that
--         expired starts another)  ARGV[5] the history the write was in
-- Reply: {"HELD"} (the entry is there, with that tag) |
--        {"LOST"} (in the write's history: another write's entry is at the
--        position; the head is below it; or the stream holds entries
--        before it and not it, as it is trimmed from the oldest) |
--        {"UNTOLD"} (trimmed, or an entry without a tag) |
--        {"GONE"} (no head, or another history: the write's is gone)
local stream, head = KEYS[1], KEYS[2]
local pos_field, pos, tag = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local history_field, history = ARGV[4], ARGV[5]
local h = redis.call('HMGET', head, pos_field, history_field ~= '' and history_field or pos_field)
local top = tonumber(h[1])
if not top or (history_field ~= '' and h[2] ~= history) then return {'GONE'} end
local e = redis.call('XRANGE', stream, pos .. '-0', pos .. '-0')[1]
if e then
  for i = 1, #e[2], 2 do
    if e[2][i] == 'g' then return {e[2][i + 1] == tag and 'HELD' or 'LOST'} end
  end
  return {'UNTOLD'}
end
if top < pos then return {'LOST'} end
local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
if first and tonumber(string.match(first[1], '^(%d+)')) < pos then return {'LOST'} end
return {'UNTOLD'}

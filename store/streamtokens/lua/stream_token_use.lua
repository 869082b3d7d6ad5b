-- stream_token_use: the one use of a stream token (api.StreamTokenUses).
-- KEYS[1] the token's use (string: the opening that claimed it)
-- ARGV[1] "use" or "release"  ARGV[2] the opening (a nonce of its own)
-- ARGV[3] use: how long to keep the use, ms (past the token's last
--   acceptance on any instance)
-- Reply: use: {"OK"} the opening holds the use (it claimed it now, or this
-- call ran before: a second run answers as the first), {"USED"} another
-- opening does; release: {"OK"}, the use dropped when this opening held it.
local use, op, opening, keep_ms = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local held = redis.call('GET', use)
if op == 'release' then
  if held == opening then redis.call('DEL', use) end
  return {'OK'}
end
if not held then
  redis.call('SET', use, opening, 'PX', keep_ms)
  return {'OK'}
end
if held == opening then return {'OK'} end
return {'USED'}

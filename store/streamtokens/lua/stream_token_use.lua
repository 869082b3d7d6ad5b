-- stream_token_use: the one use of a stream token (api.StreamTokenUses).
-- KEYS[1] the token's use (string: the opening that claimed it)
-- ARGV[1] "use" or "release"  ARGV[2] the opening (a nonce of its own)
-- ARGV[3] use: how long to keep the use, ms (until the token stops verifying)
-- Reply: use: 1 the opening holds the use (it claimed it now, or this call
-- ran before: the reply of a run is its second run's), 0 another opening
-- does; release: 1, the use dropped when this opening held it.
local held = redis.call('GET', KEYS[1])
if ARGV[1] == 'release' then
  if held == ARGV[2] then redis.call('DEL', KEYS[1]) end
  return 1
end
if not held then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
if held == ARGV[2] then return 1 end
return 0

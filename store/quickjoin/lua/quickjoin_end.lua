-- quickjoin_end: ends a quick-join's hold on its user in one call: with the
-- room quotas on, its placeholder reservation turned into the room's entry
-- or dropped (holdings_rebind, a function of holdings.FunctionsLua run
-- ahead of this code), then its lock released if the token still holds it
-- (compare and delete, as janitor_release). Sent once, as a rebind was.
-- KEYS[1] the lock (string: the holder's token)
-- KEYS[2] the user's holdings (only with a placeholder to end)
-- ARGV[1] token  ARGV[2..] holdings_rebind's ARGV (with KEYS[2])
-- Reply: {"OK"}
if KEYS[2] then holdings_rebind({KEYS[2]}, {unpack(ARGV, 2)}) end
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return {'OK'}

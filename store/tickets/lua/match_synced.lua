-- match_synced: a write on the master of a match room's slot, for the
-- commit to wait on (WAIT waits for its connection's last write, and a
-- replica that has it has every write its master took before: the room
-- made, its seats held). A match no user was told of yet is checked to
-- have its room there: a call sent again to a promoted replica (MOVED, or
-- UNBLOCKED by a failover during the WAIT) may find the room lost with
-- the old master. No prelude.
-- KEYS[1] the room shard's sync key  KEYS[2] the room's hash
-- ARGV[1] the sync key's time to live, ms  ARGV[2] "1": check the room
-- Reply: {"OK"} | {"GONE"}: the room is not there (nothing written)
local synced, room = KEYS[1], KEYS[2]
local ttl_ms, check = ARGV[1], ARGV[2]
if check == '1' and redis.call('EXISTS', room) == 0 then return {'GONE'} end
redis.call('SET', synced, '1', 'PX', ttl_ms)
return {'OK'}

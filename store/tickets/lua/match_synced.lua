-- match_synced: a write on the master of a match room's slot, for the
-- commit to wait on (WAIT waits for its connection's last write, and a
-- replica that has it has every write its master took before: the room
-- made, its seats held). No prelude.
-- KEYS[1] the room shard's sync key
-- ARGV[1] its time to live, ms
-- Reply: {"OK"}
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return {'OK'}

-- userstreams_close: drops an event stream from the streams its user holds
-- open (userstreams_open), at the stream's close. A script rather than a
-- ZREM so that the closes of a storm (an instance's streams ending at once)
-- leave together in the batcher's pipelines, not in a round trip each.
-- A second run of one call removes nothing more. No prelude.
-- KEYS[1] the user's streams (zset, as userstreams_open)
-- ARGV[1] member ("<roomId>/<stream>", "/<stream>" for the lobby)
-- Reply: 1 removed | 0 not held
return redis.call('ZREM', KEYS[1], ARGV[1])

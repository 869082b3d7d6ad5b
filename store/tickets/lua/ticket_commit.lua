-- ticket_commit: a completion is about to tell a match's users of its
-- room: the pending record is marked "told" with the room, in the mode's
-- slot, and from then on the match stands (ticket_requeue puts none of
-- its tickets back; a repair tells the rest and records the room). Before
-- the first notice, so that a repair racing the completion (its instance
-- paused past its lease) either requeued the tickets first, and this
-- completion tells no one, or finds the mark and does not requeue what a
-- user may have been told of. No prelude.
-- KEYS[1] pending matches (see ticket_pass)
-- ARGV[1] match id  ARGV[2] room id  ARGV[3..] the ids of the tickets to
--         tell
-- Reply: {"OK"} | {"GONE"}: the record is gone (the room recorded by
-- another completion) or no longer holds every one of the tickets (put
-- back in the queue)
local rec = redis.call('HGET', KEYS[1], ARGV[1])
if not rec then return {'GONE'} end
local m = cjson.decode(rec)
local kept = {}
for _, t in ipairs(m.tickets) do kept[t.id] = true end
for i = 3, #ARGV do
  if not kept[ARGV[i]] then return {'GONE'} end
end
-- written even when marked already (a repair's commit): the caller may
-- WAIT for replicas to have it, which waits for the connection's last write
m.told = ARGV[2]
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(m))
return {'OK'}

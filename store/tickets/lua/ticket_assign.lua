-- ticket_assign: a match's room is made: its tickets get the room's id
-- and the pending record goes, in the mode's slot. No prelude.
-- KEYS[1] tickets (see ticket_create)  KEYS[2] pending matches (hash
--         match id → JSON, ticket_pass)
-- ARGV[1] match id  ARGV[2] room id  ARGV[3] the end of the match's seats'
-- hold (ms, the matcher's clock; 0: not known)  ARGV[4..] the match's
-- ticket ids
-- Reply: {"OK", tickets updated, 1 when this call ended the pending
-- record, 0 when another completion of the match had}
local tickets, pending, mid, room, held = KEYS[1], KEYS[2], ARGV[1], ARGV[2], tonumber(ARGV[3])
local n = 0
for i = 4, #ARGV do
  local s = redis.call('HGET', tickets, ARGV[i] .. ':s')
  if s then
    local st = cjson.decode(s)
    if st.mid == mid then
      st.rm = room
      if held > 0 then st.su = held end
      redis.call('HSET', tickets, ARGV[i] .. ':s', cjson.encode(st))
      n = n + 1
    end
  end
end
return {'OK', n, redis.call('HDEL', pending, mid)}

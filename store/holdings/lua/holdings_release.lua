-- holdings_release: corrects a user's holdings (see holdings_reserve) after
-- the rooms were read: drops rooms the user is no longer in, or a
-- reservation whose room script failed, sets the role of rooms whose
-- ownership changed, and adds rooms the user is in that the holdings lack.
-- An entry is only changed when it still holds the reservation the caller
-- read (its stamp: the role may have changed since, when ownership passed
-- on), so a reservation made meanwhile is never lost. A key left with no
-- room keeps its "#" marker until it expires (an hour after the user's
-- last reservation): it still says "in no room", so the user's next create
-- or join reads this key alone instead of rebuilding it from every shard's
-- user index.
--
-- A join of a room the user holds already re-stamps its entry and marks
-- it "^" (in flight until its script ran); when the script changed
-- nothing (the user was a member, or it refused) the join puts the value
-- before back ("undo:"), as if it had never come, and when it added the
-- user it stamps the entry anew (a record, unmarked). A leave's (or
-- kick's) correction ("left") that finds another stamp, or the marked
-- stamp it read (the join may still put the user back), does not drop
-- the entry but notes "-<µs>", the stamp it read: "a leave read this and
-- removed the user"; an undo of a value so noted drops the entry, unless
-- that value is marked (another join in flight, which settles it). An
-- undo notes "~<µs>", the re-stamp's, which a correction that read it
-- still matches.
-- No prelude.
-- KEYS[1] the user's holdings
-- ARGV[3i-2] room id  ARGV[3i-1] the value read: only its stamp (after
--         the role) is compared, with the entry's stamp or its "~" note;
--         "*" any; "+" none: add the entry, with this node's time as its
--         stamp, when the room has none (the key must exist)
-- ARGV[3i] "" to drop the entry; "left" to drop it after a leave or kick,
--         or a refusal of the join that reserved it (noting the stamp
--         read on an entry that holds another, or holds it marked "^");
--         the
--         role to set ("o" or "m"); "-<µs>" to drop it only if its last
--         reservation is at least that old by this node's clock (older
--         than any room script in flight); "undo:<value before>" to give
--         the entry the stamp of the value before (keeping its role and
--         noting the stamp read), or drop it when a leave noted that stamp
-- Reply: {"OK", entries changed, entries kept for being too young}
local key, changed, young, T = KEYS[1], 0, 0, nil
local max_notes = 4 -- of each kind, the latest kept
local function stamp(v) return string.match(v, '^%a:(%d+)') end
local function notes(v, kind, out) -- appends v's notes of kind ("~" or "-")
  for n in string.gmatch(v, '%' .. kind .. '(%d+)') do out[#out + 1] = n end
  return out
end
local function has(list, st)
  for _, n in ipairs(list) do if n == st then return true end end
  return false
end
-- role:stamp, then the notes, each kind's latest max_notes
local function value(head, aliases, lefts)
  for _, l in ipairs({{'~', aliases}, {'-', lefts}}) do
    for j = math.max(1, #l[2] - max_notes + 1), #l[2] do head = head .. l[1] .. l[2][j] end
  end
  return head
end
for i = 1, #ARGV - 2, 3 do
  local room, seen, to = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local cur = redis.call('HGET', key, room)
  if seen == '+' then
    if not cur and redis.call('EXISTS', key) == 1 then
      if not T then T = redis.call('TIME') end
      redis.call('HSET', key, room, to .. ':' .. T[1] .. string.format('%06d', tonumber(T[2])))
      changed = changed + 1
    end
    cur = nil
  end
  local min_age = string.match(to, '^%-(%d+)$')
  if min_age and cur then
    if not T then T = redis.call('TIME') end
    if tonumber(stamp(cur) or '0') > tonumber(T[1]) * 1000000 + tonumber(T[2]) - tonumber(min_age) then
      cur = nil
      young = young + 1
    end
  end
  local s = cur and seen ~= '*' and stamp(seen)
  local match = cur and (seen == '*' or (s and (stamp(cur) == s or has(notes(cur, '~', {}), s))))
  if match and to == 'left' and string.match(cur, '^%a:%d+%^') then
    match = false -- a join in flight: noted below, for its undo
  end
  if match then
    local before = string.match(to, '^undo:(.*)$')
    if before then
      -- The value before is back, with every note (the undone stamp s
      -- among the aliases: all stamps of this entry's state), unless a
      -- leave read one of them: the user was removed after this join's
      -- script, which found the user a member. Never dropped when the
      -- value before is marked: a join in flight since before this one
      -- may put the user back, and settles the entry itself (its Record,
      -- or its undo, which finds these notes).
      local b, marked = stamp(before), string.match(before, '^%a:%d+%^') ~= nil
      local lefts = notes(before, '-', notes(cur, '-', {}))
      local aliases = notes(before, '~', notes(cur, '~', {}))
      aliases[#aliases + 1] = s
      local gone = not b
      if not marked then
        gone = gone or has(lefts, b)
        for _, a in ipairs(aliases) do gone = gone or has(lefts, a) end
      end
      if gone then
        redis.call('HDEL', key, room)
      else
        -- the role is the entry's (ownership may have passed meanwhile)
        redis.call('HSET', key, room, value(string.sub(cur, 1, 2) .. b .. (marked and '^' or ''), aliases, lefts))
      end
    elseif to == '' or to == 'left' or min_age then
      redis.call('HDEL', key, room)
    else
      redis.call('HSET', key, room, to .. string.sub(cur, 2))
    end
    changed = changed + 1
  elseif cur and to == 'left' and s then
    -- a leave whose stamp the entry no longer holds, or holds marked:
    -- noted, for the join's undo
    local lefts = notes(cur, '-', {})
    if not has(lefts, s) then lefts[#lefts + 1] = s end
    redis.call('HSET', key, room, value(string.match(cur, '^%a:%d+%^?'), notes(cur, '~', {}), lefts))
  end
end
return {'OK', changed, young}

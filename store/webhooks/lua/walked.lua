-- The part put before webhook_fail.lua and webhook_settle.lua: what the
-- backlog recount (webhook_recount.lua) needs of them.

-- walked says whether stream entry id a is at or before id b.
local function walked(a, b)
  local a1, a2 = string.match(a, '^(%d+)-(%d+)$')
  local b1, b2 = string.match(b, '^(%d+)-(%d+)$')
  a1, b1 = tonumber(a1), tonumber(b1)
  return a1 < b1 or (a1 == b1 and tonumber(a2) <= tonumber(b2))
end


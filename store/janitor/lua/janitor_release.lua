-- janitor_release: deletes a shard's janitor lease when one of the given
-- instances holds it (an instance that stopped or whose registration
-- lapsed), so a live instance takes the shard at its next pass. A lease held
-- by anyone else is left alone. No prelude.
-- KEYS[1] the shard's janitor lease (string: holder's instance id)
-- ARGV[i] instance ids
-- Reply: {"OK", 1 when the lease was deleted, else 0}
local holder = redis.call('GET', KEYS[1])
if not holder then return {'OK', 0} end
for _, id in ipairs(ARGV) do
  if holder == id then
    redis.call('DEL', KEYS[1])
    return {'OK', 1}
  end
end
return {'OK', 0}

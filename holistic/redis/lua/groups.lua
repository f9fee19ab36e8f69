-- Register a new batch's `groups` tags for a model, or none of them when one would pass a cap; a
-- batch_id seen before registers nothing (its tags counted when it was new).
-- KEYS[1] the batch's ingest hash   KEYS[2] the model's deletion lock   KEYS[3] set of the model's group
-- keys   KEYS[4..] per key, the set of its values
-- ARGV[1] the batch's content sha256   ARGV[2] max keys   ARGV[3] max values per key   then per
-- KEYS[3..]: key name, value count, values
-- Returns {0} when registered, {1, key} when key would pass the key cap, {2, key, value} when value
-- would pass its key's value cap, {3} when the batch_id is known with this content (a retry), {4, seq}
-- when it is known with other content, {5} while the model is being deleted (nothing registered).
-- Atomic, so concurrent batches cannot both slip past a cap.
-- over_cap and register_tags: group_caps.lua, which holistic/redis/scripts.py puts before this script.
if redis.call('EXISTS', KEYS[2]) == 1 then return {5} end
local known = redis.call('HMGET', KEYS[1], 'seq', 'hash')
if known[1] then
  if known[2] == ARGV[1] then return {3} end
  return {4, tonumber(known[1])}
end
local over = over_cap(3, 4, tonumber(ARGV[2]), tonumber(ARGV[3]))
if over then return {#over, over[1], over[2]} end
register_tags(3, 4)
return {0}

-- Register a new batch's `groups` tags for a model, or none of them when one would pass a cap; a
-- batch_id seen before registers nothing (its tags counted when it was new).
-- KEYS[1] the batch's ingest hash   KEYS[2] set of the model's group keys   KEYS[3..] per key, the set of
-- its values
-- ARGV[1] the batch's content sha256   ARGV[2] max keys   ARGV[3] max values per key   then per
-- KEYS[3..]: key name, value count, values
-- Returns {0} when registered, {1, key} when key would pass the key cap, {2, key, value} when value
-- would pass its key's value cap, {3} when the batch_id is known with this content (a retry), {4, seq}
-- when it is known with other content. Atomic, so concurrent batches cannot both slip past a cap.
local known = redis.call('HMGET', KEYS[1], 'seq', 'hash')
if known[1] then
  if known[2] == ARGV[1] then return {3} end
  return {4, tonumber(known[1])}
end
local max_keys, max_values = tonumber(ARGV[2]), tonumber(ARGV[3])
local keys_room = max_keys - redis.call('SCARD', KEYS[2])
local a = 4
for k = 3, #KEYS do
  local name, n = ARGV[a], tonumber(ARGV[a + 1])
  if redis.call('SISMEMBER', KEYS[2], name) == 0 then
    keys_room = keys_room - 1
    if keys_room < 0 then return {1, name} end
  end
  local room = max_values - redis.call('SCARD', KEYS[k])
  for i = 1, n do
    if redis.call('SISMEMBER', KEYS[k], ARGV[a + 1 + i]) == 0 then
      room = room - 1
      if room < 0 then return {2, name, ARGV[a + 1 + i]} end
    end
  end
  a = a + 2 + n
end
a = 4
for k = 3, #KEYS do
  local n = tonumber(ARGV[a + 1])
  redis.call('SADD', KEYS[2], ARGV[a])
  redis.call('SADD', KEYS[k], unpack(ARGV, a + 2, a + 1 + n))
  a = a + 2 + n
end
return {0}

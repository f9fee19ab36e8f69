-- Register a batch's `groups` tags for a model, or none of them when one would pass a cap.
-- KEYS[1] set of the model's group keys   KEYS[2..] per key, the set of its values
-- ARGV[1] max keys   ARGV[2] max values per key   then per KEYS[2..]: key name, value count, values
-- Returns {0} when registered, {1, key} when key would pass the key cap, {2, key, value} when
-- value would pass its key's value cap. Atomic, so concurrent batches cannot both slip past a cap.
local max_keys, max_values = tonumber(ARGV[1]), tonumber(ARGV[2])
local keys_room = max_keys - redis.call('SCARD', KEYS[1])
local a = 3
for k = 2, #KEYS do
  local name, n = ARGV[a], tonumber(ARGV[a + 1])
  if redis.call('SISMEMBER', KEYS[1], name) == 0 then
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
a = 3
for k = 2, #KEYS do
  local n = tonumber(ARGV[a + 1])
  redis.call('SADD', KEYS[1], ARGV[a])
  redis.call('SADD', KEYS[k], unpack(ARGV, a + 2, a + 1 + n))
  a = a + 2 + n
end
return {0}

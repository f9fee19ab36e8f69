-- A new batch's group tags against its model's caps, shared by submit.lua and groups.lua
-- (holistic/redis/scripts.py puts this file before each). first: the index in KEYS of the model's set of
-- group keys, followed by one set of values per key; a: the index in ARGV of the first key's
-- name, value count and values, then the next key's.
-- over_cap returns nil when every key and value fits, {key} when key would pass the key cap, and
-- {key, value} when value would pass its key's value cap; it writes nothing.
local function over_cap(first, a, max_keys, max_values)
  local keys_room = max_keys - redis.call('SCARD', KEYS[first])
  for k = first + 1, #KEYS do
    local name, count = ARGV[a], tonumber(ARGV[a + 1])
    if redis.call('SISMEMBER', KEYS[first], name) == 0 then
      keys_room = keys_room - 1
      if keys_room < 0 then return {name} end
    end
    local room = max_values - redis.call('SCARD', KEYS[k])
    for i = 1, count do
      if redis.call('SISMEMBER', KEYS[k], ARGV[a + 1 + i]) == 0 then
        room = room - 1
        if room < 0 then return {name, ARGV[a + 1 + i]} end
      end
    end
    a = a + 2 + count
  end
  return nil
end

local function register_tags(first, a)
  for k = first + 1, #KEYS do
    local count = tonumber(ARGV[a + 1])
    redis.call('SADD', KEYS[first], ARGV[a])
    redis.call('SADD', KEYS[k], unpack(ARGV, a + 2, a + 1 + count))
    a = a + 2 + count
  end
end


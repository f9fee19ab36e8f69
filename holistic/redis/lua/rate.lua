-- A tenant's predictions-per-second budget, one fixed one-second window at a time.
-- KEYS[1] the tenant's counter for this epoch second   ARGV[1] predictions   ARGV[2] limit per second
-- Returns -1 when admitted (and counted); otherwise what this second already used.
-- A batch larger than the limit is admitted alone into an empty second, so it can always get through.
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = tonumber(ARGV[1])
if used > 0 and used + n > tonumber(ARGV[2]) then return used end
redis.call('INCRBY', KEYS[1], n)
redis.call('EXPIRE', KEYS[1], 2)
return -1

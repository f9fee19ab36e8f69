-- Record a tenant's retention, and audit its change (old -> new) once, whoever notices it first.
-- KEYS[1] the tenant's recorded retention   KEYS[2] its audit stream (same hash tag {a:<tenant>})
-- ARGV[1] the retention now (JSON)   ARGV[2] the global defaults (JSON: what a tenant never recorded had)
-- ARGV[3] actor
-- Returns the retention recorded before (ARGV[2] if none) when it changed, false when it did not.
local old = redis.call('GET', KEYS[1])
if old == ARGV[1] then return false end
redis.call('SET', KEYS[1], ARGV[1])
old = old or ARGV[2]
if old == ARGV[1] then return false end
redis.call('XADD', KEYS[2], '*', 'action', 'retention_changed', 'actor', ARGV[3],
  'details', '{"new": ' .. ARGV[1] .. ', "old": ' .. old .. '}')
return old

#!lua flags=allow-oom
-- allow-oom: moving an accepted entry aside must work at maxmemory too (workers keep draining).
-- Move one pending entry to the dead-letter stream, atomically and only once.
-- KEYS[1] work stream   KEYS[2] dead-letter stream (same hash tag)
-- ARGV[1] group   ARGV[2] entry id   ARGV[3] deliveries   ARGV[4] reason
-- Returns 1 when moved, 0 when another consumer already acknowledged it.
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
local e = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
local f = {'src_id', ARGV[2], 'group', ARGV[1], 'deliveries', ARGV[3], 'reason', ARGV[4]}
if #e > 0 then for _, v in ipairs(e[1][2]) do table.insert(f, v) end end
redis.call('XADD', KEYS[2], '*', unpack(f))
return 1

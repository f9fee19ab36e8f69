-- One Redis: put a reserved batch on the work stream and count it, in one atomic step (a cluster
-- keeps the stream in another slot and runs XADD, then mark_queued.lua, as two steps).
-- KEYS[1] ingest hash   KEYS[2] model meta hash   KEYS[3] the tenant's model set   KEYS[4] work stream
-- ARGV[1] the public model name, added to KEYS[3]   ARGV[2..] the stream entry's field, value pairs
-- Returns 1 when this call queued and counted the batch, 0 when an earlier call did (then nothing is
-- added: two retries of one reserved batch in flight at once put it on the stream once).
-- No allow-oom: at maxmemory the whole step is refused and nothing of it is written (backpressure).
redis.call('SADD', KEYS[3], ARGV[1])
if redis.call('HGET', KEYS[1], 'state') ~= 'reserved' then return 0 end
redis.call('XADD', KEYS[4], '*', unpack(ARGV, 2))
redis.call('HSET', KEYS[1], 'state', 'queued')
local n = redis.call('HGET', KEYS[1], 'n')
local ms = redis.call('HGET', KEYS[1], 'ms')
redis.call('HINCRBY', KEYS[2], 'accepted_predictions', n)
redis.call('HINCRBY', KEYS[2], 'accepted_batches', 1)
redis.call('HSETNX', KEYS[2], 'first_accept_ms', ms)
local last = tonumber(redis.call('HGET', KEYS[2], 'last_accept_ms') or '0')
if tonumber(ms) > last then redis.call('HSET', KEYS[2], 'last_accept_ms', ms) end
return 1

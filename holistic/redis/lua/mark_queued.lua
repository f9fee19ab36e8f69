#!lua flags=allow-oom
-- allow-oom: the batch is already on the stream; counting it must not fail at maxmemory.
-- After the batch is on the work stream: mark it queued and count it, exactly once.
-- KEYS[1] ingest hash   KEYS[2] model meta hash   KEYS[3] (one Redis only) the tenant's model set
-- ARGV[1] the public model name, added to KEYS[3]. A cluster keeps KEYS[3] in another slot, so
-- there the caller adds it with its own SADD.   ARGV[2] (optional) the families the batch is for,
-- comma separated: counted per family too.
-- Returns 1 when this call counted the batch, 0 when an earlier call did, -1 when the ingest hash is
-- gone: the model was deleted since the batch was numbered (the caller takes its entry off the stream).
-- count_accepted: accepted.lua, which holistic/redis/scripts.py puts before this script (after its flags).
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return -1 end
if KEYS[3] then redis.call('SADD', KEYS[3], ARGV[1]) end
if state ~= 'reserved' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'queued')
count_accepted(KEYS[2], redis.call('HGET', KEYS[1], 'n'), redis.call('HGET', KEYS[1], 'ms'), ARGV[2])
return 1

-- A deletion of one model begins (gateway/deletion.py): the model's submits are refused while the lock
-- lives, and its tombstone holds its last batch sequence number, so that no worker applies a batch
-- numbered up to it (one read before the deletion; apply.lua) and its next batch is numbered after it
-- (deletion.lua). A model without a sequence number or tombstone gets none: no batch was ever numbered.
-- KEYS[1] the model's sequence counter   KEYS[2] its deletion lock   KEYS[3] its tombstone
-- ARGV[1] the lock's lifetime (ms)   ARGV[2] the tombstone's lifetime (s)
-- Returns the tombstone's number (0: none).
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
local through = math.max(tonumber(redis.call('GET', KEYS[1]) or '0'), tonumber(redis.call('GET', KEYS[3]) or '0'))
if through > 0 then redis.call('SET', KEYS[3], through, 'EX', ARGV[2]) end
return through

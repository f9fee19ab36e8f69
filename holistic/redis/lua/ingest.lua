-- Reserve a sequence number for a new batch, or report the earlier answer for a known batch_id.
-- KEYS[1] ingest hash (model, batch_id)   KEYS[2] per-model sequence counter   KEYS[3] the model's
-- tombstone   KEYS[4] its deletion lock
-- ARGV[1] content sha256   ARGV[2] ttl seconds   ARGV[3] accept time (ms)   ARGV[4] predictions
-- Returns {is_new, seq, content hash, state, count, accept ms}, or {-1} while the model is being deleted.
-- next_seq: deletion.lua, which holistic/redis/scripts.py puts before this script.
if redis.call('EXISTS', KEYS[4]) == 1 then return {-1} end
local known = redis.call('HMGET', KEYS[1], 'seq', 'hash', 'state', 'n', 'ms')
if known[1] then
  return {0, tonumber(known[1]), known[2], known[3], tonumber(known[4]), tonumber(known[5])}
end
local seq = next_seq(KEYS[2], KEYS[3])
redis.call('HSET', KEYS[1], 'seq', seq, 'hash', ARGV[1], 'state', 'reserved', 'n', ARGV[4], 'ms', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {1, seq, ARGV[1], 'reserved', tonumber(ARGV[4]), tonumber(ARGV[3])}

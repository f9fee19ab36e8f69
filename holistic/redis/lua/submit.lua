-- One Redis: a submit in one atomic step, one round trip: recognise a known batch_id, check and
-- register a new batch's group tags against the caps, reserve its sequence number, put it on the work
-- stream and count it. (A cluster keeps the stream in another slot: there groups.lua, ingest.lua, XADD
-- and mark_queued.lua run as steps.) The envelope's sequence and accept time are known only here, so
-- this script writes them: it appends them to the header (field h, holistic/queue/envelope.py), encoded as
-- protobuf encodes BatchEnvelope's fields 100 and 101. The request's bytes go to field e as they
-- came: joining them with anything would make Lua build and hash another string of their size.
-- KEYS[1] ingest hash (model, batch_id)   KEYS[2] per-model sequence counter   KEYS[3] model meta hash
-- KEYS[4] the tenant's model set   KEYS[5] work stream   KEYS[6] the tenant's model index (a ZSET of the
-- same names, all scored 0: ListModels pages through it in name order)   KEYS[7] the model's tombstone
-- KEYS[8] its deletion lock   KEYS[9] the model's set of group keys   KEYS[10..] per group key, the set of
-- its values (KEYS[9..] only when the batch carries tags)
-- ARGV[1] content sha256   ARGV[2] ttl seconds   ARGV[3] accept time (ms)   ARGV[4] predictions
-- ARGV[5] the public model name, added to KEYS[4] and KEYS[6]   ARGV[6] envelope version   ARGV[7] internal model
-- ARGV[8] families (comma separated)   ARGV[9] the request's bytes (e)   ARGV[10] the encoded header
-- without fields 100 and 101 (h)   ARGV[11] the most models the tenant may have (HOLISTIC_TENANT_MAX_MODELS)
-- ARGV[12] max group keys   ARGV[13] max values per key   then per KEYS[10..]: key name, value count, values
-- Returns {0, seq, n, ms} queued now as a new batch; {1, seq, n, ms} a known batch_id with this content
-- (a retry: the earlier answer; one reserved by an older gateway's first step is queued now, once);
-- {2, seq} a known batch_id with other content; {3, key} key would pass the key cap; {4, key, value}
-- value would pass its key's value cap; {5, count} a new model would pass the tenant's model cap (3, 4
-- and 5 write nothing; a known batch_id is never refused by a cap: it was accepted under them); {6} while
-- the model is being deleted (nothing written: gateway/deletion.py).
-- No allow-oom: at maxmemory the first write (SADD) is refused and nothing is written (backpressure).
-- over_cap and register_tags: group_caps.lua; count_accepted: accepted.lua; next_seq: deletion.lua
-- (holistic/redis/scripts.py puts them before this script).
if redis.call('EXISTS', KEYS[8]) == 1 then return {6} end
local known = redis.call('HMGET', KEYS[1], 'seq', 'hash', 'state', 'n', 'ms')
local seq, n, ms = nil, ARGV[4], ARGV[3]
if known[1] then
  if known[2] ~= ARGV[1] then return {2, tonumber(known[1])} end
  if known[3] ~= 'reserved' then return {1, tonumber(known[1]), tonumber(known[4]), tonumber(known[5])} end
  seq, n, ms = tonumber(known[1]), known[4], known[5]
else
  local models = redis.call('SCARD', KEYS[4])
  if models >= tonumber(ARGV[11]) and redis.call('SISMEMBER', KEYS[4], ARGV[5]) == 0 then return {5, models} end
  if #KEYS > 8 then
    local over = over_cap(9, 14, tonumber(ARGV[12]), tonumber(ARGV[13]))
    if over then return {2 + #over, over[1], over[2]} end
  end
end

redis.call('SADD', KEYS[4], ARGV[5])
redis.call('ZADD', KEYS[6], 0, ARGV[5])  -- every time: it also indexes a model named before the index existed
if seq then
  redis.call('HSET', KEYS[1], 'state', 'queued')
else
  register_tags(9, 14)
  seq = next_seq(KEYS[2], KEYS[7])
  redis.call('HSET', KEYS[1], 'seq', seq, 'hash', ARGV[1], 'state', 'queued', 'n', n, 'ms', ms)
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end

local function varint(x)
  local out = {}
  while x >= 128 do
    out[#out + 1] = string.char(x % 128 + 128)
    x = math.floor(x / 128)
  end
  out[#out + 1] = string.char(x)
  return table.concat(out)
end
local at_ms = tonumber(ms)
local seconds, nanos = math.floor(at_ms / 1000), (at_ms % 1000) * 1000000
local stamp = ''
if seconds ~= 0 then stamp = '\8' .. varint(seconds) end
if nanos ~= 0 then stamp = stamp .. '\16' .. varint(nanos) end
local tail = '\160\6' .. varint(seq) .. '\170\6' .. varint(#stamp) .. stamp
redis.call('XADD', KEYS[5], '*', 'v', ARGV[6], 'm', ARGV[7], 's', seq, 'f', ARGV[8], 'e', ARGV[9], 'h', ARGV[10] .. tail)

count_accepted(KEYS[3], n, ms, ARGV[8])
if known[1] then return {1, seq, tonumber(n), at_ms} end
return {0, seq, tonumber(n), at_ms}

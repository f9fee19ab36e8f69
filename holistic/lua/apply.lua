#!lua flags=allow-oom
-- allow-oom: at maxmemory the gateway refuses new batches, but what was accepted must still be applied
-- (and acknowledged) so the janitor can trim the stream and free memory.
-- Merge one batch's partial statistics for one family, once per (model, family, seq).
-- KEYS[1] done bitmap   KEYS[2] updates stream   KEYS[3] the work stream, when ARGV[5] is not ''
-- then the statistics (and instance-state) hashes
-- ARGV[1] seq   ARGV[2] updates maxlen   ARGV[3] family   ARGV[4] predictions in the batch
-- ARGV[5] the entry's id on the work stream: applied only while it is pending for the family here,
-- so a worker that read it from a Redis process that then died never applies it to the next one
-- (where the entry, and its sequence number, may be gone); '' skips the check (a cluster keeps the
-- work stream in another slot)
-- then for each hash, in KEYS order: ttl seconds (0: keep), op count, then op triples
-- (op, field, value) with op one of  i: HINCRBY  f: HINCRBYFLOAT  <: keep min  >: keep max
-- h: merge a JSON object of bin -> count into the field's JSON object, bin by bin
-- H: the same, value "<cap> <json>": past cap bins the field becomes "over" for good
-- s: HSET   =: condition, the field holds value   !: condition, the field is absent.
-- Conditions are checked first: if one fails nothing is written and -1 is returned (the caller
-- read state that changed since; it reads again and retries). Instance state (holistic/instances.py)
-- uses them as compare-and-set, so its aggregates stay exact with any number of replicas.
-- Returns 1 when applied, 0 when the bit was already set (a redelivery or a replay) or the entry is
-- not pending here.
local first = 3
if ARGV[5] ~= '' then
  first = 4
  local pending = redis.pcall('XPENDING', KEYS[3], ARGV[3], ARGV[5], ARGV[5], 1)  -- errs if no stream or group
  if pending.err or #pending == 0 then return 0 end
end
if redis.call('GETBIT', KEYS[1], ARGV[1]) == 1 then return 0 end
local a = 6
for k = first, #KEYS do
  local nops = tonumber(ARGV[a + 1])
  a = a + 2
  for _ = 1, nops do
    local op = ARGV[a]
    if op == '=' then
      if redis.call('HGET', KEYS[k], ARGV[a + 1]) ~= ARGV[a + 2] then return -1 end
    elseif op == '!' then
      if redis.call('HEXISTS', KEYS[k], ARGV[a + 1]) == 1 then return -1 end
    end
    a = a + 3
  end
end
redis.call('SETBIT', KEYS[1], ARGV[1], 1)
local function merge_bins(current, value)
  local merged = cjson.decode(current)
  for bin, n in pairs(cjson.decode(value)) do merged[bin] = (merged[bin] or 0) + n end
  return merged
end
a = 6
for k = first, #KEYS do
  local key = KEYS[k]
  local ttl = tonumber(ARGV[a])
  local nops = tonumber(ARGV[a + 1])
  a = a + 2
  for _ = 1, nops do
    local op, field, value = ARGV[a], ARGV[a + 1], ARGV[a + 2]
    a = a + 3
    if op == 'i' then
      redis.call('HINCRBY', key, field, value)
    elseif op == 'f' then
      redis.call('HINCRBYFLOAT', key, field, value)
    elseif op == 'h' then
      local current = redis.call('HGET', key, field)
      if current then
        redis.call('HSET', key, field, cjson.encode(merge_bins(current, value)))
      else
        redis.call('HSET', key, field, value)
      end
    elseif op == 'H' then
      local sp = string.find(value, ' ', 1, true)
      local cap, bins = tonumber(string.sub(value, 1, sp - 1)), string.sub(value, sp + 1)
      local current = redis.call('HGET', key, field)
      if current ~= 'over' then
        local merged = merge_bins(current or '{}', bins)
        local count = 0
        for _ in pairs(merged) do count = count + 1 end
        redis.call('HSET', key, field, count > cap and 'over' or cjson.encode(merged))
      end
    elseif op == 's' then
      redis.call('HSET', key, field, value)
    elseif op == '<' or op == '>' then
      local current = redis.call('HGET', key, field)
      local v = tonumber(value)
      if not current or (op == '<' and v < tonumber(current)) or (op == '>' and v > tonumber(current)) then
        redis.call('HSET', key, field, value)
      end
    end
  end
  if ttl > 0 then redis.call('EXPIRE', key, ttl) end
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'family', ARGV[3], 'seq', ARGV[1], 'n', ARGV[4])
return 1

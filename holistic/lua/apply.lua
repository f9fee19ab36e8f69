-- Merge one batch's partial statistics for one family, once per (model, family, seq).
-- KEYS[1] done bitmap   KEYS[2] updates stream   KEYS[3..] statistics hashes
-- ARGV[1] seq   ARGV[2] updates maxlen   ARGV[3] family   ARGV[4] predictions in the batch
-- then for each statistics hash, in KEYS order: ttl seconds (0: keep), op count, then op triples
-- (op, field, value) with op one of  i: HINCRBY  f: HINCRBYFLOAT  <: keep min  >: keep max
-- h: merge a JSON object of bin -> count into the field's JSON object, bin by bin.
-- Returns 1 when applied, 0 when the bit was already set (a redelivery or a replay).
if redis.call('SETBIT', KEYS[1], ARGV[1], 1) == 1 then return 0 end
local a = 5
for k = 3, #KEYS do
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
        local merged = cjson.decode(current)
        for bin, n in pairs(cjson.decode(value)) do merged[bin] = (merged[bin] or 0) + n end
        redis.call('HSET', key, field, cjson.encode(merged))
      else
        redis.call('HSET', key, field, value)
      end
    else
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

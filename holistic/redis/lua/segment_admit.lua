-- Admits a batch's segment values to cells of their own: per segment key (KEYS[k], the set of its
-- admitted values), the values asked for in ARGV, first come first admitted until the set holds
-- ARGV[1] (HOLISTIC_SEGMENT_TOP_K) values. The set only grows, so a value's answer never changes
-- (until the model is deleted): every family and replica puts it in the same cell.
-- ARGV: top_k, then per key its value count and values. Returns, per key, the admitted values asked for.
local top_k = tonumber(ARGV[1])
local out = {}
local a = 2
for k = 1, #KEYS do
  local count = tonumber(ARGV[a])
  local admitted = {}
  local size = redis.call('SCARD', KEYS[k])
  for i = 1, count do
    local value = ARGV[a + i]
    if redis.call('SISMEMBER', KEYS[k], value) == 1 then
      admitted[#admitted + 1] = value
    elseif size < top_k then
      redis.call('SADD', KEYS[k], value)
      size = size + 1
      admitted[#admitted + 1] = value
    end
  end
  out[k] = admitted
  a = a + 1 + count
end
return out

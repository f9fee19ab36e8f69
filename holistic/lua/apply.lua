#!lua flags=allow-oom
-- allow-oom: at maxmemory the gateway refuses new batches, but what was accepted must still be applied
-- (and acknowledged) so the janitor can trim the stream and free memory.
-- Merge the partial statistics of one or more batches of one model for one family, once per
-- (model, family, seq).
-- KEYS[1] done bitmap   KEYS[2] updates stream   KEYS[3] the work stream, when ARGV[5] is not ''
-- then the statistics (and instance-state) hashes
-- ARGV[1] the batches' seqs, space separated   ARGV[2] updates maxlen   ARGV[3] family
-- ARGV[4] predictions in each batch, space separated
-- ARGV[5] the entries' ids on the work stream, space separated: applied only while every one is
-- pending for the family here, so a worker that read them from a Redis process that then died never
-- applies them to the next one (where the entries, and their sequence numbers, may be gone); '' skips
-- the check (a cluster keeps the work stream in another slot)
-- then for each hash, in KEYS order: ttl seconds (0: keep), op count, then op triples
-- (op, field, value) with op one of  i: add an integer  f: add a float  <: keep min  >: keep max
-- h: add a JSON object of bin -> count to the field's histogram (see hist_append below)
-- H: the same, value "<cap> <json>": past cap bins the field becomes "over" for good
-- s: set   =: condition, the field holds value   !: condition, the field is absent
-- n: condition, the field is absent; then set (a new instance)
-- @: condition, Redis's day is value, its clock shifted by field seconds (tests shift it; 0 in production):
-- an apply that creates instances in its day's hash was planned with that day (holistic/instances.py).
-- A negative op count -j: this hash takes the ops of the j-th hash (1-based, an earlier one), so the
-- tiers of one batch (every tier gets the same sums) send them once.
-- Conditions are checked first: if one fails nothing is written and -1 is returned (the caller
-- read state that changed since; it reads again and retries). Instance state (holistic/instances.py)
-- uses them as compare-and-set, so its aggregates stay exact with any number of replicas.
-- Each hash is read with one HMGET and written with one HSET: a redis.call per field cost more than
-- the merge itself. Sums are doubles written with 17 significant digits, so they read back exactly.
-- Every new value is computed before anything is written: a bad value (a sum that overflows to
-- infinity) fails the script with nothing written and the done bit unset.
-- Returns 1 when applied; when a bit was already set (a redelivery or a replay) or an entry is not
-- pending here: 0 for one batch, -2 for several (nothing written: the caller applies them one by one).
local CHUNK = 2000 -- arguments per HMGET/HSET call: unpack is bounded by Lua's C stack
local function words(text)
  local out = {}
  for w in string.gmatch(text, '%S+') do out[#out + 1] = w end
  return out
end
local seqs, counts = words(ARGV[1]), words(ARGV[4])
local not_now = #seqs > 1 and -2 or 0
local first = 3
if ARGV[5] ~= '' then
  first = 4
  for _, id in ipairs(words(ARGV[5])) do
    local pending = redis.pcall('XPENDING', KEYS[3], ARGV[3], id, id, 1)  -- errs if no stream or group
    if pending.err or #pending == 0 then return not_now end
  end
end
for _, seq in ipairs(seqs) do
  if redis.call('GETBIT', KEYS[1], seq) == 1 then return not_now end
end

-- hashes[i] = {key, ttl, at (ARGV index of its first op), n (op count)}
local hashes = {}
local a = 6
for k = first, #KEYS do
  local ttl, nops = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  a = a + 2
  if nops < 0 then
    local same = hashes[-nops]
    hashes[#hashes + 1] = {KEYS[k], ttl, same[3], same[4]}
  else
    hashes[#hashes + 1] = {KEYS[k], ttl, a, nops}
    a = a + 3 * nops
  end
end

local function hmget(key, fields)
  local out = {}
  for i = 1, #fields, CHUNK do
    local got = redis.call('HMGET', key, unpack(fields, i, math.min(i + CHUNK - 1, #fields)))
    for j = 1, #got do out[i + j - 1] = got[j] end
  end
  return out
end

-- what an ops block needs: its condition fields with their wanted values, and the fields it reads;
-- found once per block, however many hashes (tiers) share it
local blocks = {}
local function block(h)
  local b = blocks[h[3]]
  if b and b.n == h[4] then return b end
  b = {n = h[4], fields = {}, wanted = {}, reads = {}, num = {}, text = {}, days = {}}
  for o = h[3], h[3] + 3 * (h[4] - 1), 3 do
    local op = ARGV[o]
    if op == '=' then
      b.fields[#b.fields + 1] = ARGV[o + 1]
      b.wanted[#b.fields] = ARGV[o + 2]
    elseif op == '!' or op == 'n' then
      b.fields[#b.fields + 1] = ARGV[o + 1]
      b.wanted[#b.fields] = false
    elseif op == '@' then
      b.days[#b.days + 1] = {tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2])}
    elseif op ~= 's' then
      b.reads[#b.reads + 1] = ARGV[o + 1]
      if op ~= 'h' and op ~= 'H' then b.num[o] = tonumber(ARGV[o + 2]) end
      if op == 'f' then b.text[o] = string.format('%.17g', b.num[o]) end
    end
  end
  if h[4] > 0 then blocks[h[3]] = b end  -- an empty block starts where the next one does
  return b
end

-- conditions, every hash, before anything is written
local clock = nil
for _, h in ipairs(hashes) do
  local b = block(h)
  for _, d in ipairs(b.days) do
    clock = clock or redis.call('TIME')
    if math.floor((tonumber(clock[1]) + tonumber(clock[2]) / 1e6 + d[1]) / 86400) ~= d[2] then return -1 end
  end
  if #b.fields > 0 then
    local got = hmget(h[1], b.fields)
    for i = 1, #b.fields do
      if got[i] ~= b.wanted[i] then return -1 end
    end
  end
end

-- A histogram field holds JSON objects of bin -> count, one a line: the first the merged base, each
-- after it one apply's bins appended as they came, never decoded on the way in. When the appended
-- lines reach HIST_LINES times the base's length, every line is merged into a new base (decode, add,
-- encode once). So an apply costs about the bins it brings, not the whole history's (decoding and
-- re-encoding a coarse tier's thousands of bins on every apply was most of Redis's time for
-- calibration), and a field holds at most about HIST_LINES + 1 times its merged size. A merge decodes
-- and encodes the base whatever the lines bring: at 2 instead of 1, merges are half as frequent and
-- calibration's and efficiency's scripts cost ~25 % less, for reads of such a field ~17 % dearer on
-- average (docs/production.md). A capped histogram's field starts with a line "#<cap>";
-- a merge past the cap turns it "over" for good; readers (holistic/stats.py) sum the lines and see it
-- over exactly when the union of its bins is past the cap. A field written before, one JSON object
-- (or "over"), reads and grows the same way.
local HIST_LINES = 2

local function hist_add(merged, count, line)
  for bin, n in pairs(cjson.decode(line)) do
    local was = merged[bin]
    if was == nil then
      count = count + 1
      merged[bin] = n
    else
      merged[bin] = was + n
    end
  end
  return count
end

-- body's lines then bins (when given) summed: the first line's decoded table is the sum's start, so
-- the merged base is decoded once and never copied bin by bin (only a capped histogram counts its bins)
local function hist_merge(body, bins, cap)
  local merged, count = nil, 0
  for line in string.gmatch(body, '[^\n]+') do
    if merged == nil then
      merged = cjson.decode(line)
      if cap then
        for _ in pairs(merged) do count = count + 1 end
      end
    else
      count = hist_add(merged, count, line)
    end
  end
  merged = merged or {}
  if bins then count = hist_add(merged, count, bins) end
  if cap and count > cap then return 'over' end
  local text = cjson.encode(merged)
  return cap and ('#' .. cap .. '\n' .. text) or text
end

local function hist_append(now, bins, cap)
  if not now then return cap and hist_merge(bins, nil, cap) or bins end  -- absent (HMGET gives false)
  local body = now
  if string.byte(now, 1) == 35 then body = string.sub(now, string.find(now, '\n', 1, true) + 1) end  -- '#<cap>'
  local nl = string.find(body, '\n', 1, true)
  local base = nl and nl - 1 or #body
  if #body - base + #bins >= HIST_LINES * base then return hist_merge(body, bins, cap) end
  return (cap and ('#' .. cap .. '\n') or '') .. body .. '\n' .. bins
end

-- new values of every hash (ops in order, so a field written twice sees its first write)
local writes = {}
for w, h in ipairs(hashes) do
  local b = block(h)
  local reads, num, text = b.reads, b.num, b.text
  local current = {}
  local got = hmget(h[1], reads)
  for i = 1, #reads do
    if current[reads[i]] == nil then current[reads[i]] = got[i] end
  end
  local order, value = {}, {}
  for o = h[3], h[3] + 3 * (h[4] - 1), 3 do
    local op, field, arg = ARGV[o], ARGV[o + 1], ARGV[o + 2]
    local now = value[field]
    if now == nil then now = current[field] end
    local new = nil
    if op == 'i' then
      new = now and string.format('%d', tonumber(now) + num[o]) or arg
    elseif op == 'f' then
      local sum = now and tonumber(now) + num[o] or num[o]
      if sum ~= sum or sum == math.huge or sum == -math.huge then
        return redis.error_reply('ERR increment would produce NaN or Infinity: ' .. h[1] .. ' ' .. field)
      end
      new = now and string.format('%.17g', sum) or text[o]  -- a new field: formatted once per block
    elseif op == 'h' then
      new = hist_append(now, arg, nil)
    elseif op == 'H' then
      if now ~= 'over' then
        local sp = string.find(arg, ' ', 1, true)
        new = hist_append(now, string.sub(arg, sp + 1), tonumber(string.sub(arg, 1, sp - 1)))
      end
    elseif op == 's' or op == 'n' then
      new = arg
    elseif op == '<' or op == '>' then
      local v = num[o]
      if not now or (op == '<' and v < tonumber(now)) or (op == '>' and v > tonumber(now)) then new = arg end
    end
    if new ~= nil then
      if value[field] == nil then order[#order + 1] = field end
      value[field] = new
    end
  end
  local args = {}
  for _, field in ipairs(order) do
    args[#args + 1] = field
    args[#args + 1] = value[field]
  end
  writes[w] = args
end

for _, seq in ipairs(seqs) do redis.call('SETBIT', KEYS[1], seq, 1) end
for w, h in ipairs(hashes) do
  local args = writes[w]
  for i = 1, #args, CHUNK do
    redis.call('HSET', h[1], unpack(args, i, math.min(i + CHUNK - 1, #args)))
  end
  if h[2] > 0 then redis.call('EXPIRE', h[1], h[2]) end
end
for i, seq in ipairs(seqs) do
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'family', ARGV[3], 'seq', seq, 'n', counts[i])
end
return 1

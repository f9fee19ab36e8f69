#!lua flags=allow-oom
-- allow-oom: at maxmemory the gateway refuses new batches, but what was accepted must still be applied
-- (and acknowledged) so the janitor can trim the stream and free memory.
-- Merge the partial statistics of one or more batches of one model for one family, once per
-- (model, family, seq).
-- KEYS[1] done bitmap   KEYS[2] updates stream   KEYS[3] the model's tombstone (holistic/redis/keys.py
-- `deleted`)   KEYS[4] the work stream, when ARGV[5] is not ''   then the statistics (and
-- instance-state) hashes
-- ARGV[1] the batches' seqs, space separated   ARGV[2] updates maxlen   ARGV[3] family
-- ARGV[4] predictions in each batch, space separated
-- ARGV[5] the entries' ids on the work stream, space separated: applied only while every one is
-- pending for the family here, so a worker that read them from a Redis process that then died never
-- applies them to the next one (where the entries, and their sequence numbers, may be gone); '' skips
-- the check (a cluster keeps the work stream in another slot)
-- then for each hash, in KEYS order: ttl seconds (0: keep), op count, then op triples
-- (op, field, value) with op one of  i: add an integer  f: add a float  <: keep min  >: keep max
-- h: add a JSON object of bin -> count to the field's histogram (see hist_add_bins below)
-- H: the same, value "<cap> <json>": past cap bins the field becomes "over" for good
-- s: set   =: condition, the field holds value   !: condition, the field is absent
-- n: condition, the field is absent; then set (a new instance)
-- @: condition, Redis's day is value, its clock shifted by field seconds (tests shift it; 0 in production):
-- an apply that creates instances in its day's hash was planned with that day (holistic/stats/instances.py).
-- A negative op count -j: this hash takes the ops of the j-th hash (1-based, an earlier one), so the
-- tiers of one batch (every tier gets the same sums) send them once.
-- A field is written by one op at most per hash (a condition on it besides is fine): a block that writes
-- one twice fails the script, nothing written.
-- Conditions are checked first: if one fails nothing is written and -1 is returned (the caller
-- read state that changed since; it reads again and retries). Instance state (holistic/stats/instances.py)
-- uses them as compare-and-set, so its aggregates stay exact with any number of replicas.
-- Each hash is read with one HMGET and written with one HSET: a redis.call per field cost more than
-- the merge itself. Sums are doubles written with 17 significant digits, so they read back exactly.
-- Every new value is computed before anything is written: a bad value (a sum that overflows to
-- infinity) fails the script with nothing written and the done bit unset.
-- Returns 1 when applied; when a bit was already set (a redelivery or a replay), an entry is not
-- pending here, or a batch is numbered up to the tombstone's number (read before the model was deleted:
-- applying it would bring the model back): 0 for one batch, -2 for several (nothing written: the caller
-- applies them one by one).
local CHUNK = 2000 -- arguments per HMGET/HSET call: unpack is bounded by Lua's C stack
-- histograms (see hist_add_bins): merged once the chunks reach HIST_LINES times the base, or MOST_CHUNKS
-- of them (a hash's field count stays bounded); field <F># holds the meta, <F>+k the k-th chunk
local HIST_LINES, MOST_CHUNKS = 4, 64
local META, PART = '#', '+'
local function words(text)
  local out = {}
  for w in string.gmatch(text, '%S+') do out[#out + 1] = w end
  return out
end
local seqs, counts = words(ARGV[1]), words(ARGV[4])
local not_now = #seqs > 1 and -2 or 0
local first = 4
if ARGV[5] ~= '' then
  first = 5
  for _, id in ipairs(words(ARGV[5])) do
    local pending = redis.pcall('XPENDING', KEYS[4], ARGV[3], id, id, 1)  -- errs if no stream or group
    if pending.err or #pending == 0 then return not_now end
  end
end
local deleted = redis.call('GET', KEYS[3])
if deleted then
  for _, seq in ipairs(seqs) do
    if tonumber(seq) <= tonumber(deleted) then return not_now end  -- read before the model was deleted
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
  local written = {}
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
    elseif op == 'h' or op == 'H' then
      b.reads[#b.reads + 1] = ARGV[o + 1] .. META  -- the histogram's meta field, never its bins
    elseif op ~= 's' then
      b.reads[#b.reads + 1] = ARGV[o + 1]
      b.num[o] = tonumber(ARGV[o + 2])
      if op == 'f' then b.text[o] = string.format('%.17g', b.num[o]) end
    end
    if op ~= '=' and op ~= '!' and op ~= '@' then  -- a write ('n' both checks and writes)
      if written[ARGV[o + 1]] then b.twice = ARGV[o + 1] end
      written[ARGV[o + 1]] = true
    end
  end
  if h[4] > 0 then blocks[h[3]] = b end  -- an empty block starts where the next one does
  return b
end

-- conditions, every hash, before anything is written
local clock = nil
for _, h in ipairs(hashes) do
  local b = block(h)
  if b.twice then return redis.error_reply('ERR ' .. h[1] .. ': field written twice in one apply: ' .. b.twice) end
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

-- A histogram <F> (a field name ending in "|hist") is a merged base in field <F>: one JSON object of
-- bin -> count (a capped one behind a line "#<cap>"), and what applies brought since, never decoded on
-- the way in: apply k's JSON object in its own field <F>+k, and in <F># the meta "<chunks> <their bytes>
-- <base bytes>" ("over" once a capped one is past its cap, for good). An apply reads the meta, writes
-- its bins as the next chunk and the meta: it costs the bins it brings, not the history's. Once the
-- chunks would reach HIST_LINES times the base's length, the base, the chunks and the new bins are
-- merged into a new base (decode, add, encode once) and the chunks deleted. (Before, the chunks were
-- lines appended to <F> itself, merged at twice the base: Redis's Lua hashes every byte of every string
-- it makes, so each apply paid for the whole field, and appends cost as much as merges saved.) Merges
-- are most of what is left: at 4, a quarter as frequent as at 1, for a histogram at most ~5 times its
-- merged size, ~3 times on average, which readers sum (docs/production.md). A capped histogram turns
-- "over" exactly when the union of its bins is past the cap; readers (holistic/stats/mergeable.py) sum base and
-- chunks and see the same. A field written before (no meta: one JSON object, lines appended to it,
-- or "over") is merged by its next apply.

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

-- the lines (JSON objects) summed, then bins: the first line's decoded table is the sum's start, so the
-- merged base is decoded once and never copied bin by bin (only a capped histogram counts its bins)
local function hist_merge(lines, bins, cap)
  local merged, count = nil, 0
  for _, line in ipairs(lines) do
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
  count = hist_add(merged, count, bins)
  if cap and count > cap then return 'over' end
  local text = cjson.encode(merged)
  return cap and ('#' .. cap .. '\n' .. text) or text
end

-- a base's JSON lines, after its "#<cap>" line (a field written before may hold several lines)
local function base_lines(text, out)
  local body = text
  if string.byte(text, 1) == 35 then body = string.sub(text, string.find(text, '\n', 1, true) + 1) end
  for line in string.gmatch(body, '[^\n]+') do out[#out + 1] = line end
end

-- histogram field of hash key gets bins (cap: nil, or its cap): put(field, value) for each field it
-- sets, the chunk fields to delete into dels; meta is the meta field's value (false: none)
local function hist_add_bins(key, field, meta, bins, cap, put, dels)
  if meta == 'over' then return end
  local chunks, bytes, base = 0, 0, 0
  if meta then
    local c, a, b = string.match(meta, '^(%d+) (%d+) (%d+)$')
    chunks, bytes, base = tonumber(c), tonumber(a), tonumber(b)
    if bytes + #bins < HIST_LINES * base and chunks < MOST_CHUNKS then
      put(field .. PART .. (chunks + 1), bins)
      put(field .. META, (chunks + 1) .. ' ' .. (bytes + #bins) .. ' ' .. base)
      return
    end
  end
  local names = {field}
  for k = 1, chunks do names[#names + 1] = field .. PART .. k end
  local got = hmget(key, names)
  if got[1] == 'over' then  -- written before the meta field
    put(field .. META, 'over')
    return
  end
  if not got[1] and not cap and #got == 1 then  -- a new histogram: its bins as they came are its base
    put(field, bins)
    put(field .. META, '0 0 ' .. #bins)
    return
  end
  local lines = {}
  if got[1] then base_lines(got[1], lines) end
  for k = 2, #got do
    if got[k] then lines[#lines + 1] = got[k] end
  end
  local merged = hist_merge(lines, bins, cap)
  put(field, merged)
  put(field .. META, merged == 'over' and 'over' or ('0 0 ' .. #merged))
  for k = 2, #names do dels[#dels + 1] = names[k] end
end

-- a hash's HSET arguments (and histogram chunks to delete), in one pass over its ops: each field is
-- written by one op at most, so the block's reads are its numeric and histogram ops' fields in op order
-- (a histogram's own fields, <F># and <F>+k, are never another op's). Before, a table of current and
-- one of new values per hash let a field be written twice; no caller does, and the tables cost ~7 % of
-- the script (benchmarks: the replayed applies of every family).
local function writes_of(h, b)
  local got, num, text = hmget(h[1], b.reads), b.num, b.text
  local args, dels, na, r = {}, {}, 0, 0
  local function put(field, new)
    args[na + 1] = field
    args[na + 2] = new
    na = na + 2
  end
  for o = h[3], h[3] + 3 * (h[4] - 1), 3 do
    local op = ARGV[o]
    local new = nil
    if op == 'h' then
      r = r + 1
      hist_add_bins(h[1], ARGV[o + 1], got[r], ARGV[o + 2], nil, put, dels)
    elseif op == 'H' then
      r = r + 1
      local arg = ARGV[o + 2]
      local sp = string.find(arg, ' ', 1, true)
      hist_add_bins(h[1], ARGV[o + 1], got[r], string.sub(arg, sp + 1), tonumber(string.sub(arg, 1, sp - 1)), put, dels)
    elseif op == 'n' or op == 's' then
      new = ARGV[o + 2]
    elseif op == 'f' then
      r = r + 1
      local now = got[r]
      if now then
        local sum = tonumber(now) + num[o]
        if sum ~= sum or sum == math.huge or sum == -math.huge then
          return nil, redis.error_reply('ERR increment would produce NaN or Infinity: ' .. h[1] .. ' ' .. ARGV[o + 1])
        end
        new = string.format('%.17g', sum)
      else
        new = text[o]  -- a new field: formatted once per block
      end
    elseif op == 'i' then
      r = r + 1
      local now = got[r]
      new = now and string.format('%d', tonumber(now) + num[o]) or ARGV[o + 2]
    elseif op == '<' or op == '>' then
      r = r + 1
      local now, v = got[r], num[o]
      if not now or (op == '<' and v < tonumber(now)) or (op == '>' and v > tonumber(now)) then new = ARGV[o + 2] end
    end
    if new ~= nil then put(ARGV[o + 1], new) end
  end
  return {args, dels}
end

-- new values of every hash, before anything is written
local writes = {}
for w, h in ipairs(hashes) do
  local b = block(h)
  local out, err = writes_of(h, b)
  if err then return err end
  writes[w] = out
end

for _, seq in ipairs(seqs) do redis.call('SETBIT', KEYS[1], seq, 1) end
for w, h in ipairs(hashes) do
  local args, dels = writes[w][1], writes[w][2]
  for i = 1, #args, CHUNK do
    redis.call('HSET', h[1], unpack(args, i, math.min(i + CHUNK - 1, #args)))
  end
  for i = 1, #dels, CHUNK do
    redis.call('HDEL', h[1], unpack(dels, i, math.min(i + CHUNK - 1, #dels)))
  end
  if h[2] > 0 then redis.call('EXPIRE', h[1], h[2]) end
end
for i, seq in ipairs(seqs) do
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'family', ARGV[3], 'seq', seq, 'n', counts[i])
end
return 1

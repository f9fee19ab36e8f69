-- A batch's counts once it is on the work stream, shared by submit.lua and mark_queued.lua
-- (holistic/redis/scripts.py puts this file before each): the model's accepted predictions and batches,
-- its first and last accept time. n, ms: the batch's prediction count and accept time (ms).
-- families: the families the batch is for, comma separated (or nil): each gets its own counts,
-- fields accepted_predictions:<family> and accepted_batches:<family>, which Profile.pending
-- compares with what the family applied (a family deployed later was never sent the earlier batches).
local function count_accepted(meta, n, ms, families)
  redis.call('HINCRBY', meta, 'accepted_predictions', n)
  redis.call('HINCRBY', meta, 'accepted_batches', 1)
  for family in string.gmatch(families or '', '[^,]+') do
    redis.call('HINCRBY', meta, 'accepted_predictions:' .. family, n)
    redis.call('HINCRBY', meta, 'accepted_batches:' .. family, 1)
  end
  redis.call('HSETNX', meta, 'first_accept_ms', ms)
  local last = tonumber(redis.call('HGET', meta, 'last_accept_ms') or '0')
  if tonumber(ms) > last then redis.call('HSET', meta, 'last_accept_ms', ms) end
end


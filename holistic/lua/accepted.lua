-- A batch's counts once it is on the work stream, shared by submit.lua and mark_queued.lua
-- (holistic/scripts.py puts this file before each): the model's accepted predictions and batches,
-- its first and last accept time. n, ms: the batch's prediction count and accept time (ms).
local function count_accepted(meta, n, ms)
  redis.call('HINCRBY', meta, 'accepted_predictions', n)
  redis.call('HINCRBY', meta, 'accepted_batches', 1)
  redis.call('HSETNX', meta, 'first_accept_ms', ms)
  local last = tonumber(redis.call('HGET', meta, 'last_accept_ms') or '0')
  if tonumber(ms) > last then redis.call('HSET', meta, 'last_accept_ms', ms) end
end


-- A model's next batch sequence number, shared by submit.lua and ingest.lua (holistic/redis/scripts.py puts
-- this file before each): INCR, except that a deleted model (its tombstone, holistic/redis/keys.py `deleted`,
-- holding the last number it had) goes on after that number, so no new batch shares a number, and a
-- done bit, with a batch read before the deletion (which apply.lua refuses by the same tombstone).
local function next_seq(seq_key, deleted_key)
  local seq = redis.call('INCR', seq_key)
  if seq == 1 then
    local through = tonumber(redis.call('GET', deleted_key) or '0')
    if through > 0 then
      seq = through + 1
      redis.call('SET', seq_key, seq)
    end
  end
  return seq
end


-- Put one dead letter back on the work stream and drop it from the dead-letter stream.
-- Safe for every group: those that applied the batch already skip it by its done bit.
-- KEYS[1] dead-letter stream   KEYS[2] work stream (same hash tag)   ARGV[1] dead-letter id
-- Returns the new work stream id, or false when there is no such dead letter.
local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #e == 0 then return false end
local fields = e[1][2]
local out = {}
for i = 1, #fields, 2 do
  local name = fields[i]
  if name == 'v' or name == 'm' or name == 's' or name == 'e' or name == 'h' or name == 't' then
    table.insert(out, name)
    table.insert(out, fields[i + 1])
  end
end
if #out == 0 then
  redis.call('XDEL', KEYS[1], ARGV[1])
  return false
end
local id = redis.call('XADD', KEYS[2], '*', unpack(out))
redis.call('XDEL', KEYS[1], ARGV[1])
return id

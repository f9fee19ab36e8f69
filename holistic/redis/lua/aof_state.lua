#!lua flags=no-writes,allow-stale
-- Where this Redis process's AOF stands: the fields of INFO server + persistence that the gateway's
-- AOF barrier reads (gateway/durability.py), parsed here so that a submit does not parse all of INFO
-- in Python. Returns {run_id, aof_enabled, aof_current_size, aof_buffer_length, aof_rewrites,
-- aof_rewrite_in_progress}; a field this Redis does not report (no AOF) is "0".
local info = redis.call('INFO', 'server') .. redis.call('INFO', 'persistence')
local out = {}
for i, name in ipairs({'run_id', 'aof_enabled', 'aof_current_size', 'aof_buffer_length', 'aof_rewrites',
                       'aof_rewrite_in_progress'}) do
  out[i] = string.match(info, '\n' .. name .. ':([^\r\n]*)') or '0'
end
return out

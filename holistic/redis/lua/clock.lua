#!lua flags=no-writes,allow-stale
-- Redis's clock (TIME) on the node that holds KEYS[1], which is not read: in a cluster, the node of a
-- model's instance-state hashes, whose clock apply.lua's '@' condition reads too (holistic/stats/instances.py).
-- A plain TIME cannot be pipelined in a cluster and would go to any node. Returns {seconds, micros}.
local t = redis.call('TIME')
return {t[1], t[2]}

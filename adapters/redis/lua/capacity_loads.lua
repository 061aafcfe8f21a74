-- capacity_loads.lua: read-only report of nodes (run with EVALSHA_RO, so a
-- replica may serve it); counts pend entries above now without purging.
-- KEYS: hb, pend, acked per node. ARGV: now_ms ('' = TIME).
-- Returns per node: epoch, seq, running, max, recv, cpu, mem, gpu, hasgpu
-- (strings, '' when there is no heartbeat), pending, acked-uncounted.
local now = clock(ARGV[1])
local out = {}
for i = 1, #KEYS, 3 do
  local h = redis.call('HMGET', KEYS[i], 'epoch', 'seq', 'running', 'max', 'recv', 'cpu', 'mem', 'gpu', 'hasgpu')
  local row = {}
  for j = 1, 9 do
    row[j] = h[j] or ''
  end
  local seq = h[2] or '0'
  row[10] = redis.call('ZCOUNT', KEYS[i + 1], '(' .. ms(now), '+inf')
  row[11] = redis.call('ZCOUNT', KEYS[i + 2], '(' .. seq, '+inf')
  out[#out + 1] = row
end
return out

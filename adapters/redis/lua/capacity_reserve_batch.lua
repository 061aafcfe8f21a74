-- capacity_reserve_batch.lua: reserve several slots, decided in order, in one
-- atomic call: TIME once, purge once per node.
-- KEYS: hb, pend, acked of each distinct node.
-- ARGV: now_ms ('' = TIME), heartbeat_timeout_ms, accounting, mode
--       ('all' = all or nothing, 'partial'), then per item five values:
--       node index (1-based), rid, max, ttl_ms, running.
-- Returns committed (1/0), then five values per item as capacity_reserve.
local now = clock(ARGV[1])
local hbto, acct, mode = tonumber(ARGV[2]), ARGV[3], ARGV[4]
local nodes = {}
for i = 1, #KEYS, 3 do
  nodes[#nodes + 1] = node(KEYS[i], KEYS[i + 1], KEYS[i + 2], now)
end
local out, granted, refused = {1}, {}, false
for i = 5, #ARGV, 5 do
  local n = nodes[tonumber(ARGV[i])]
  local r = decide(n, now, ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), hbto, acct, tonumber(ARGV[i + 4]))
  if r[1] == OK then
    granted[#granted + 1] = {n, ARGV[i + 1]}
  elseif r[1] ~= DUPLICATE then
    refused = true
  end
  for _, v in ipairs(r) do
    out[#out + 1] = v
  end
end
if refused and mode == 'all' then
  for _, g in ipairs(granted) do
    undo(g[1], g[2])
  end
  out[1] = 0
else
  for _, n in ipairs(nodes) do
    settle(n, now)
  end
end
return out

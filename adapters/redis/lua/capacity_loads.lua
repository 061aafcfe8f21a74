-- capacity_loads.lua: read-only report of nodes (run with EVALSHA_RO, so a
-- replica may serve it); counts the leases live at now without purging.
-- KEYS: each node's hash. ARGV: now_ms ('' = TIME).
-- Returns per node: the state words (hx epoch seq running recv max ax kx cpu
-- mem gpu hasgpu; '' when no live heartbeat is known), pending,
-- acked-uncounted.
local now = clock(ARGV[1])
local out = {}
for i = 1, #KEYS do
  local n = readnode(KEYS[i], now, nil)
  local w = ''
  if n.known then
    local p = n.w
    w = ms(p[1]) .. ' ' .. p[2] .. ' ' .. ms(p[3]) .. ' ' .. ms(p[4]) .. ' ' .. ms(p[5]) .. ' ' .. ms(p[6]) .. ' ' ..
      ms(p[7]) .. ' ' .. ms(p[8]) .. ' ' .. p[9]
  end
  out[i] = {w, n.live, n.unc}
end
return out

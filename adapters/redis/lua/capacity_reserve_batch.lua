-- capacity_reserve_batch.lua: reserve several slots, decided in order, in one
-- atomic call. TIME once; each node's hash is read once (HGETALL); the items
-- are decided in Lua against the nodes' state; each node's grants are then
-- written with one HSET (and its lapsed leases deleted with one HDEL). A
-- refused all-or-nothing batch writes no grant.
-- KEYS: the hash of each distinct node.
-- ARGV: now_ms ('' = TIME), heartbeat_timeout_ms, accounting, mode
--       ('all' = all or nothing, 'partial'), the store's default max, then
--       per item five values: node index (1-based), rid, max (0 = the
--       node's), ttl_ms, running.
-- Returns committed (1/0), then five values per item as capacity_reserve.
local now = clock(ARGV[1])
local hbto, sum, mode, defmax = tonumber(ARGV[2]), ARGV[3] ~= 'max', ARGV[4], tonumber(ARGV[5])
local want = {}
for i = 6, #ARGV, 5 do
  local j = tonumber(ARGV[i])
  local w = want[j]
  if not w then
    w = {}
    want[j] = w
  end
  w[ARGV[i + 1]] = true
end
local nodes = {}
for j = 1, #KEYS do
  nodes[j] = readnode(KEYS[j], now, nil, want[j])
end
local out, k, refused = {1}, 1, false
local grants = {}
for i = 6, #ARGV, 5 do
  local j, rid = tonumber(ARGV[i]), ARGV[i + 1]
  local n = nodes[j]
  local st = decide(n, n.val[rid] or false, now, limit(n, tonumber(ARGV[i + 2]), defmax), tonumber(ARGV[i + 3]), hbto, sum,
    tonumber(ARGV[i + 4]), out, k)
  if st == OK then
    local exp = out[k + 3]
    n.val[rid] = exp
    local g = grants[j]
    if not g then
      g = {}
      grants[j] = g
    end
    g[#g + 1] = rid
    g[#g + 1] = ms(exp)
    if exp > (n.last or 0) then
      n.last = exp
    end
  elseif st ~= DUPLICATE then
    refused = true
  end
  k = k + 5
end
if refused and mode == 'all' then
  out[1] = 0
  grants = {}
end
for j = 1, #KEYS do
  local key, n, g = KEYS[j], nodes[j], grants[j]
  purge(key, n)
  if g then
    local kx = lives(key, n, now, n.last + 60000)
    if kx then
      g[#g + 1] = ''
      g[#g + 1] = state(n, n.ax, kx)
    end
    redis.call('HSET', key, unpack(g))
  end
end
return out

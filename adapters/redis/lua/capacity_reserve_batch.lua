-- capacity_reserve_batch.lua: reserve several slots, decided in order, in one
-- atomic call. TIME once; each node is read once (readhot: HMGET of its
-- state and the rids asked of it, or HGETALL when the state cannot answer);
-- the items are decided in Lua against them; each node's grants and new
-- state are then written with one HSET, and its lapsed leases deleted with
-- one HDEL. A refused all-or-nothing batch writes no grant.
-- The node's hash is as capacity_lib.lua describes.
-- KEYS: the hash of each distinct node.
-- ARGV: now_ms ('' = TIME), heartbeat_timeout_ms, accounting, mode
--       ('all' = all or nothing, 'partial'), the store's default max, then
--       per item five values: node index (1-based), rid, max (0 = the
--       node's), ttl_ms, running.
-- Returns committed (1/0), then five values per item as capacity_reserve.
local now = clock(ARGV[1])
local hbto, sum, mode, defmax = tonumber(ARGV[2]), ARGV[3] ~= 'max', ARGV[4], tonumber(ARGV[5])
local nodes = #KEYS
-- The distinct rids each node is asked for.
local asked, seen = {}, {}
for i = 6, #ARGV, 5 do
  local j, rid = tonumber(ARGV[i]), ARGV[i + 1]
  local a = asked[j]
  if not a then
    asked[j], seen[j] = {rid}, {[rid] = true}
  elseif not seen[j][rid] then
    seen[j][rid] = true
    a[#a + 1] = rid
  end
end
-- Node j's table, with its live count as the items are decided (cnt), its
-- grants (rid, expiry pairs) and their latest expiry.
local N = {}
for j = 1, nodes do
  local n = readhot(KEYS[j], now, asked[j] or {})
  n.cnt, n.grants, n.last = n.live, false, 0
  N[j] = n
end
local out, k, refused = {1}, 1, false
for i = 6, #ARGV, 5 do
  local j, rid = tonumber(ARGV[i]), ARGV[i + 1]
  local n = N[j]
  local maxj, hm = tonumber(ARGV[i + 2]), n.max
  if hm > 0 and maxj > 0 and hm ~= maxj then
    maxj = -1
  elseif hm > 0 then
    maxj = hm
  elseif maxj == 0 then
    maxj = defmax
  end
  local running = 0
  if not sum then
    running = tonumber(ARGV[i + 4])
  end
  local h = n.held[rid]
  local eff
  if sum then
    eff = n.run + n.cnt + n.unc
  else
    eff = math.max(running, n.cnt)
  end
  local status, expiry, earliest = 0, 0, 0
  if maxj < 0 then
    status = RESERVE_LIMIT
  elseif h then
    status = RESERVE_DUPLICATE
    if h > 0 then
      expiry = h
    end
  elseif sum and not n.known then
    status = RESERVE_UNKNOWN_NODE
  elseif sum and now - n.recv > hbto then
    status = RESERVE_STALE
  elseif eff >= maxj then
    status, earliest = RESERVE_FULL, n.first
  else
    status, expiry = RESERVE_OK, now + tonumber(ARGV[i + 3])
    n.cnt = n.cnt + 1
    if n.first == 0 or expiry < n.first then
      n.first = expiry
    end
    if expiry > n.last then
      n.last = expiry
    end
    if sum then
      eff = eff + 1
    else
      eff = math.max(running, n.cnt)
    end
    n.held[rid] = expiry
    local g = n.grants
    if g then
      g[#g + 1] = rid
      g[#g + 1] = expiry
    else
      n.grants = {rid, expiry}
    end
  end
  if status ~= RESERVE_OK and status ~= RESERVE_DUPLICATE then
    refused = true
  end
  out[k + 1], out[k + 2], out[k + 3], out[k + 4], out[k + 5] = status, n.epoch, expiry, eff, earliest
  k = k + 5
end
local commit = not (refused and mode == 'all')
if not commit then
  out[1] = 0
end
for j = 1, nodes do
  local key, n = KEYS[j], N[j]
  local g = commit and n.grants
  if g then
    purge(key, n)
    local args = {}
    for x = 1, #g, 2 do
      local expiry = g[x + 1]
      n.live = n.live + 1
      n.lexp[n.live], n.lrid[n.live] = expiry, g[x]
      args[x] = g[x]
      if expiry < 1e14 then
        args[x + 1] = expiry .. '' -- '%.14g' is exact for ms times until the year 5138
      else
        args[x + 1] = ms(expiry)
      end
    end
    -- The leases would outlive the key: extend it, only ever forward.
    local kx = lives(key, n, now, n.last + 60000) or n.kx
    args[#g + 1], args[#g + 2] = '', state(n, n.ax, kx)
    redis.call('HSET', key, unpack(args))
  else
    flush(key, n)
  end
end
return out

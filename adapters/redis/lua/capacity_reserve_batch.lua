-- capacity_reserve_batch.lua: reserve several slots, decided in order, in one
-- atomic call. TIME once; each node's hash is read once (HGETALL) into flat
-- per-node arrays (no table per node: a call's server time is mostly fixed
-- overhead per node); the items are decided in Lua against them; each
-- node's grants are then written with one HSET, and its lapsed leases
-- deleted with one HDEL. A refused all-or-nothing batch writes no grant.
-- The node's hash is read as capacity_lib.lua describes.
-- KEYS: the hash of each distinct node.
-- ARGV: now_ms ('' = TIME), heartbeat_timeout_ms, accounting, mode
--       ('all' = all or nothing, 'partial'), the store's default max, then
--       per item five values: node index (1-based), rid, max (0 = the
--       node's), ttl_ms, running.
-- Returns committed (1/0), then five values per item as capacity_reserve.
local now = clock(ARGV[1])
local hbto, sum, mode, defmax = tonumber(ARGV[2]), ARGV[3] ~= 'max', ARGV[4], tonumber(ARGV[5])
local nodes = #KEYS
-- The rids each node is asked for: one[j] when it is asked for one, else
-- the set want[j].
-- js holds each item's node index, converted once.
local one, want, js = {}, {}, {}
for i = 6, #ARGV, 5 do
  local j, rid = tonumber(ARGV[i]), ARGV[i + 1]
  js[#js + 1] = j
  local o = one[j]
  if not o then
    one[j] = rid
  else
    local w = want[j]
    if not w then
      w = {[o] = true}
      want[j] = w
    end
    w[rid] = true
  end
end
-- A string argument or value repeated from the previous item or node (the
-- same epoch, max and TTL, as a batch usually has) is converted once: each
-- tonumber costs as much as a small command.
local le, lepoch = false, 0
-- Node j's state, one array per field.
local KNOWN, EPOCH, RUN, RECV, HMAX, LIVE, FIRST, UNC, KX, AX, W, DEAD, ND, FOUND, LAST =
  {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}
for j = 1, nodes do
  local a = redis.call('HGETALL', KEYS[j])
  local rid, wj = one[j], want[j]
  local w, live, first, nd, na, dead, aseq, afield, found = false, 0, 0, 0, 0, false, false, false, false
  for i = 1, #a, 2 do
    local f = a[i]
    if f == '' then
      w = a[i + 1]
    else
      local v = tonumber(a[i + 1])
      if v > 0 and v <= now then
        nd = nd + 1
        if nd == 1 then
          dead = {f}
        else
          dead[nd] = f
        end
      else
        if v > 0 then
          live = live + 1
          if first == 0 or v < first then
            first = v
          end
        else
          na = na + 1
          if na == 1 then
            aseq, afield = {-v}, {f}
          else
            aseq[na], afield[na] = -v, f
          end
        end
        if f == rid or (wj and wj[f]) then
          if not found then
            found = {}
          end
          found[f] = v
        end
      end
    end
  end
  local known, epoch, seq, run, recv, hmax, ax, kx = false, 0, '0', 0, 0, 0, 0, 0
  if w then
    -- The state's first eight values (capacity_lib.lua); epoch and seq are
    -- strings, seq converted only when acked entries are counted.
    local _, hx, e, s, r, rc, m, x, k = cmsgpack.unpack_limit(w, 8)
    ax, kx = x, k
    if hx > 0 and now <= hx then
      if e ~= le then
        le, lepoch = e, tonumber(e)
      end
      known, epoch, seq, run, recv, hmax = true, lepoch, s, r, rc, m
    end
  end
  local unc = 0
  if na > 0 then
    seq = tonumber(seq)
    if now > ax then
      -- The acked entries outlived their lifetime: they go.
      for x = 1, na do
        nd = nd + 1
        if nd == 1 then
          dead = {afield[x]}
        else
          dead[nd] = afield[x]
        end
        if found and found[afield[x]] then
          found[afield[x]] = nil
        end
      end
    else
      for x = 1, na do
        if aseq[x] > seq then
          unc = unc + 1
        end
      end
    end
  end
  KNOWN[j], EPOCH[j], RUN[j], RECV[j], HMAX[j], LIVE[j], FIRST[j], UNC[j], KX[j], AX[j], W[j], DEAD[j], ND[j], FOUND[j], LAST[j] =
    known, epoch, run, recv, hmax, live, first, unc, kx, ax, w, dead, nd, found, 0
end
local out, k, refused, q = {1}, 1, false, 0
local lmaxs, lmax, lttls, lexpiry, lexps = false, 0, false, 0, ''
local grants = {}
for i = 6, #ARGV, 5 do
  q = q + 1
  local j, rid, maxs = js[q], ARGV[i + 1], ARGV[i + 2]
  if maxs ~= lmaxs then
    lmaxs, lmax = maxs, tonumber(maxs)
  end
  local maxj, hm = lmax, HMAX[j]
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
  local found = FOUND[j]
  local h = found and found[rid]
  local eff
  if sum then
    eff = RUN[j] + LIVE[j] + UNC[j]
  else
    eff = math.max(running, LIVE[j])
  end
  local status, expiry, earliest = 0, 0, 0
  if maxj < 0 then
    status = 6 -- LIMIT_MISMATCH
  elseif h then
    status = 2 -- DUPLICATE
    if h > 0 then
      expiry = h
    end
  elseif sum and not KNOWN[j] then
    status = 4 -- UNKNOWN_NODE
  elseif sum and now - RECV[j] > hbto then
    status = 5 -- STALE_HEARTBEAT
  elseif eff >= maxj then
    status, earliest = 3, FIRST[j] -- FULL
  else
    local ttls = ARGV[i + 3]
    if ttls ~= lttls then
      lttls, lexpiry = ttls, now + tonumber(ttls)
      if lexpiry < 1e14 then
        lexps = lexpiry .. '' -- '%.14g' is exact for ms times until the year 5138
      else
        lexps = string.format('%d', lexpiry)
      end
    end
    status, expiry = 1, lexpiry -- OK
    LIVE[j] = LIVE[j] + 1
    if FIRST[j] == 0 or expiry < FIRST[j] then
      FIRST[j] = expiry
    end
    if expiry > LAST[j] then
      LAST[j] = expiry
    end
    if sum then
      eff = eff + 1
    else
      eff = math.max(running, LIVE[j])
    end
    if want[j] then
      -- Only a node asked for more than one item can see this rid again.
      if not found then
        found = {}
        FOUND[j] = found
      end
      found[rid] = expiry
    end
    local exps = lexps
    local g = grants[j]
    if g then
      g[#g + 1] = rid
      g[#g + 1] = exps
    else
      grants[j] = {rid, exps}
    end
  end
  if status ~= 1 and status ~= 2 then
    refused = true
  end
  out[k + 1], out[k + 2], out[k + 3], out[k + 4], out[k + 5] = status, EPOCH[j], expiry, eff, earliest
  k = k + 5
end
if refused and mode == 'all' then
  out[1] = 0
  grants = {}
end
for j = 1, nodes do
  local key, g = KEYS[j], grants[j]
  if ND[j] > 0 then
    redis.call('HDEL', key, unpack(DEAD[j], 1, ND[j]))
  end
  if g then
    if LAST[j] + 60000 > KX[j] then
      -- The leases would outlive the key: extend it, only ever forward, and
      -- note the new end in the state.
      local kx = LAST[j] + 120000
      redis.call('PEXPIRE', key, kx - now)
      local w = W[j]
      g[#g + 1] = ''
      if w then
        local hx, e, s, r, rc, m, x, _, u = cmsgpack.unpack(w)
        g[#g + 1] = cmsgpack.pack(hx, e, s, r, rc, m, x, kx, u)
      else
        g[#g + 1] = cmsgpack.pack(0, '0', '0', 0, 0, 0, 0, kx, '- - - 0')
      end
    end
    redis.call('HSET', key, unpack(g))
  end
end
return out

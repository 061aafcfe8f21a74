-- capacity_reserve_batch.lua: reserve several slots, decided in order, in one
-- atomic call. TIME once; each node's hash is read once (HGETALL) into flat
-- per-node arrays (no table per node: a call's server time is mostly fixed
-- overhead per node and per argument); the items are decided in Lua against
-- them; each node's grants are then written with one HSET, and its lapsed
-- leases deleted with one HDEL. A refused all-or-nothing batch writes no
-- grant. The node's hash is read as capacity_lib.lua describes; like
-- capacity_reserve.lua, this script does not include the library (whose
-- closures each call would build again).
-- KEYS: the hash of each distinct node.
-- ARGV: now_ms ('' = TIME), heartbeat_timeout_ms, accounting, mode
--       ('all' = all or nothing, 'partial'), the store's default max, then
--       the items in one of three forms, so that a batch whose items share
--       their limit, TTL and running count (as most do) sends no value
--       twice:
--       'each' max ttl_ms running, then one value per item: its rid; item
--              q is on node q (every item on its own node, in key order).
--       'same' max ttl_ms running, then two values per item: node index
--              (1-based), rid.
--       'full' then five values per item: node index, rid, max (0 = the
--              node's), ttl_ms, running.
-- Returns one string: committed (1/0), then five numbers per item as
-- capacity_reserve.lua answers, all space-separated.
-- The clock as in capacity_reserve.lua (and capacity_lib.lua's clock),
-- written out here so that this script needs no closure.
local now = ARGV[1]
if now ~= '' then
  now = now + 0
else
  local t = redis.call('TIME')
  local us = t[2] + 0
  now = t[1] * 1000 + (us - us % 1000) / 1000
end
local hbto, sum, mode, defmax = ARGV[2] + 0, ARGV[3] ~= 'max', ARGV[4], ARGV[5] + 0
local nodes = #KEYS
-- Each item's node index and rid, and in the 'full' form its own max, TTL
-- and running as strings (converted when they differ from the previous
-- item's).
local js, rids, maxs, ttls, runs = {}, {}, false, false, false
local form, items = ARGV[6], 0
if form == 'full' then
  maxs, ttls, runs = {}, {}, {}
  for i = 7, #ARGV, 5 do
    items = items + 1
    js[items], rids[items], maxs[items], ttls[items], runs[items] = ARGV[i] + 0, ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  end
elseif form == 'same' then
  for i = 10, #ARGV, 2 do
    items = items + 1
    js[items], rids[items] = ARGV[i] + 0, ARGV[i + 1]
  end
else
  for i = 10, #ARGV do
    items = items + 1
    js[items], rids[items] = items, ARGV[i]
  end
end
-- The rids each node is asked for: one[j] when it is asked for one, else
-- the set want[j].
local one, want = {}, {}
for q = 1, items do
  local j, rid = js[q], rids[q]
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
-- Node j's state, one array per field: BASE is the heartbeat's running
-- count plus the acked jobs it has not counted, RECV the heartbeat's receive
-- time or false when no live heartbeat is known, DEAD the fields to delete
-- or false.
local EPOCH, BASE, RECV, HMAX, LIVE, FIRST, KX, W, DEAD, FOUND, LAST = {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}
for j = 1, nodes do
  local a = redis.call('HGETALL', KEYS[j])
  local rid, wj = one[j], want[j]
  local w, live, first, nd, na, dead, aseq, afield, found = false, 0, 0, 0, 0, false, false, false, false
  for i = 1, #a, 2 do
    local f = a[i]
    if f == '' then
      w = a[i + 1]
    else
      local v = a[i + 1] + 0
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
  local known, epoch, seq, run, recv, hmax, ax, kx = false, 0, 0, 0, 0, 0, 0, 0
  if w then
    -- The state's first eight values (capacity_lib.lua).
    local _, hx, e, s, r, rc, m, x, k = cmsgpack.unpack_limit(w, 8)
    ax, kx = x, k
    if hx > 0 and now <= hx then
      known, epoch, seq, run, recv, hmax = true, e, s, r, rc, m
    end
  end
  local unc = 0
  if na > 0 then
    seq = seq + 0 -- a string in states written by earlier revisions
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
  EPOCH[j], BASE[j], RECV[j], HMAX[j], LIVE[j], FIRST[j], KX[j], W[j], DEAD[j], FOUND[j], LAST[j] =
    epoch, run + unc, known and recv, hmax, live, first, kx, w, dead, found, 0
end
local out, k, refused = {1}, 1, false
-- A max or TTL repeated from the previous item (as a batch usually has) is
-- converted once: each conversion costs a good part of a small command.
local lmaxs, lmax, lttls, lexpiry, lexps = false, 0, false, 0, ''
if not maxs then
  -- The 'each' and 'same' forms: one max, TTL and running for all items.
  lmax = ARGV[7] + 0
end
local grants = {}
for q = 1, items do
  local j, rid = js[q], rids[q]
  if maxs then
    local m = maxs[q]
    if m ~= lmaxs then
      lmaxs, lmax = m, m + 0
    end
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
    running = (runs and runs[q] or ARGV[9]) + 0
  end
  local found = FOUND[j]
  local h = found and found[rid]
  local eff
  if sum then
    eff = BASE[j] + LIVE[j]
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
  elseif sum and not RECV[j] then
    status = 4 -- UNKNOWN_NODE
  elseif sum and now - RECV[j] > hbto then
    status = 5 -- STALE_HEARTBEAT
  elseif eff >= maxj then
    status, earliest = 3, FIRST[j] -- FULL
  else
    local t = ttls and ttls[q] or ARGV[8]
    if t ~= lttls then
      lttls, lexpiry = t, now + t
      lexps = string.format('%d', lexpiry)
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
  if status == 2 then
    -- Written again as it is (a lease's expiry, or an acked job's negated
    -- seq), so that a WAIT after this call covers it: a retry after a WAIT
    -- that fell short must not answer DUPLICATE (a grant) for a lease the
    -- replicas have not received.
    local v
    if h > 0 then
      v = string.format('%d', h)
    else
      v = string.format('-%d', -h)
    end
    local g = grants[j]
    if g then
      g[#g + 1] = rid
      g[#g + 1] = v
    else
      grants[j] = {rid, v}
    end
  elseif status ~= 1 then
    refused = true
  end
  if status == 1 then
    -- The strings at hand, as capacity_reserve.lua answers.
    out[k + 1], out[k + 2], out[k + 3], out[k + 4], out[k + 5] = '1', EPOCH[j], lexps, eff, '0'
  else
    out[k + 1], out[k + 2], out[k + 3], out[k + 4], out[k + 5] = status, EPOCH[j], expiry, eff, earliest
  end
  k = k + 5
end
if refused and mode == 'all' then
  out[1] = 0
  grants = {}
end
for j = 1, nodes do
  local key, g, kx = KEYS[j], grants[j], false
  if DEAD[j] then
    redis.call('HDEL', key, unpack(DEAD[j]))
  end
  if g then
    if LAST[j] + 60000 > KX[j] then
      -- The leases would outlive the key: extend it, only ever forward, and
      -- note the new end in the state.
      kx = LAST[j] + 120000
      local w = W[j]
      g[#g + 1] = ''
      if w then
        local hx, e, s, r, rc, m, x, _, u = cmsgpack.unpack(w)
        g[#g + 1] = cmsgpack.pack(hx, e, s, r, rc, m, x, kx, u)
      else
        g[#g + 1] = cmsgpack.pack(0, '0', 0, 0, 0, 0, 0, kx, '- - - 0')
      end
    end
    redis.call('HSET', key, unpack(g))
    if kx then
      -- After the HSET, which creates the key of a node Redis has not
      -- seen: a PEXPIRE before it would do nothing.
      redis.call('PEXPIRE', key, kx - now)
    end
  end
end
-- One string, not an array: Redis turns a Lua table into a reply at several
-- times the cost of a string. table.concat prints a number as '%.14g' (a
-- sprintf each, which is why a grant's values are strings already), exact
-- for these: statuses, loads and ms times (until the year 5138); epochs are
-- the heartbeats' own strings.
return table.concat(out, ' ')

-- capacity_reserve.lua: reserve one slot. One key, and on the accept path
-- two commands: HGETALL, then one HSET (plus HDEL when leases lapsed, PEXPIRE
-- when the lease outlives what the key is known to live).
-- The node's hash is read as capacity_lib.lua describes; this script does
-- not include the library and is written out flat, without tables or
-- closures, because it is the hot path: a call's server time is mostly fixed
-- overhead, so every argument, C call and string conversion counts
-- (arithmetic converts a numeric string at half the cost of tonumber, and
-- string.format at half the cost of concatenation). The tests hold it to
-- the same answers as capacity_reserve_batch.lua, MemoryStore and the
-- ledger.
-- KEYS: the node's hash.
-- ARGV: rid; the numbers max (positive: the caller's limit; else the
--       node's, or -max when the node states none: the store's default),
--       ttl_ms and heartbeat_timeout_ms as three MessagePack integers in one
--       string (one C call decodes them, where converting three decimal
--       strings costs three strtod); now_ms (absent or '' = TIME); and only
--       in the seed's 'max' accounting the caller's running count (without
--       this fourth value the accounting is 'sum').
-- Returns one string of five numbers, space-separated: status, epoch, lease
-- expiry, effective load, earliest pending expiry (statuses as in
-- capacity_lib.lua).
local now = ARGV[3]
if now and now ~= '' then
  now = now + 0
else
  local t = redis.call('TIME')
  local us = t[2] + 0
  now = t[1] * 1000 + (us - us % 1000) / 1000
end
local key, rid = KEYS[1], ARGV[1]
local a = redis.call('HGETALL', key)
local w, held, live, first, nd, na = false, false, 0, 0, 0, 0
local dead, aseq, afield, hraw
for i = 1, #a, 2 do
  local f = a[i]
  if f == '' then
    w = a[i + 1]
  else
    local v = a[i + 1] + 0
    if v > now then
      live = live + 1
      if first == 0 or v < first then
        first = v
      end
      if f == rid then
        held, hraw = v, a[i + 1]
      end
    elseif v > 0 then
      nd = nd + 1
      if nd == 1 then
        dead = {f}
      else
        dead[nd] = f
      end
    else
      na = na + 1
      if na == 1 then
        aseq, afield = {-v}, {f}
      else
        aseq[na], afield[na] = -v, f
      end
      if f == rid then
        held, hraw = v, a[i + 1]
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
    end
    if held and held <= 0 then
      held = false
    end
  else
    for x = 1, na do
      if aseq[x] > seq then
        unc = unc + 1
      end
    end
  end
end
local running = ARGV[4]
local sum = not running
local maxj, ttl, hbto = cmsgpack.unpack(ARGV[2])
if hmax > 0 and maxj > 0 and hmax ~= maxj then
  maxj = -1
elseif hmax > 0 then
  maxj = hmax
elseif maxj < 0 then
  maxj = -maxj
end
if not sum then
  running = running + 0
end
local eff
if sum then
  eff = run + live + unc
else
  eff = math.max(running, live)
end
local status, expiry, earliest = 0, 0, 0
if maxj < 0 then
  status = 6 -- LIMIT_MISMATCH
elseif held then
  status = 2 -- DUPLICATE
  if held > 0 then
    expiry = held
  end
elseif sum and not known then
  status = 4 -- UNKNOWN_NODE
elseif sum and now - recv > hbto then
  status = 5 -- STALE_HEARTBEAT
elseif eff >= maxj then
  status, earliest = 3, first -- FULL
else
  status, expiry = 1, now + ttl -- OK
  if sum then
    eff = eff + 1
  else
    eff = math.max(running, live + 1)
  end
end
if nd > 0 then
  redis.call('HDEL', key, unpack(dead, 1, nd))
end
if status == 2 then
  -- Written again as it is, so that this call replicates something: the
  -- WAIT that follows covers the connection's last write, and a retry after
  -- a WAIT that fell short must not answer DUPLICATE (a grant) for a lease
  -- the replicas have not received.
  redis.call('HSET', key, rid, hraw)
end
if status == 1 then
  local exps = string.format('%d', expiry)
  if expiry + 60000 > kx then
    -- The lease would outlive the key: extend it, only ever forward, and
    -- note the new end in the state so that the next minute's calls skip it.
    kx = expiry + 120000
    local st
    if w then
      local hx, e, s, r, rc, m, x, _, u = cmsgpack.unpack(w)
      st = cmsgpack.pack(hx, e, s, r, rc, m, x, kx, u)
    else
      st = cmsgpack.pack(0, '0', 0, 0, 0, 0, 0, kx, '- - - 0')
    end
    redis.call('HSET', key, rid, exps, '', st)
    -- After the HSET: on a node Redis has not seen, the HSET creates the
    -- key, and a PEXPIRE before it would do nothing.
    redis.call('PEXPIRE', key, kx - now)
  else
    redis.call('HSET', key, rid, exps)
  end
  -- One string, not an array: Redis turns a Lua table into a reply at
  -- several times the cost of a string. It is joined from the strings at
  -- hand (the epoch as stored, the expiry as written), since every number
  -- printed is a sprintf: the reply costs one, for the load.
  return '1 ' .. epoch .. ' ' .. exps .. ' ' .. eff .. ' 0'
end
return string.format('%d %s %d %d %d', status, epoch, expiry, eff, earliest)

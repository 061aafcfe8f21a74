-- capacity_reserve_hot.lua is the start of the reserve script (before
-- capacity_lib.lua and capacity_reserve.lua): the hot path, written out
-- flat without the library's tables and closures, because a call's server
-- time is mostly fixed overhead per command and per allocation. When the
-- node's heartbeat is live and no acked entry can have lapsed, the state's
-- counts are exact, and a reserve is two commands: HMGET of the state and
-- the rid, then one HSET of the lease and the new state (plus HDEL when
-- leases lapsed, PEXPIRE when the lease outlives what the key is known to
-- live); a refusal writes nothing. It decodes only the state's head and the
-- (expiry, rid) pairs, and writes the new state by appending the new pair
-- to the state's bytes (MessagePack values concatenate). Otherwise it falls
-- through to capacity_reserve.lua, which reads the node whole. Arguments and
-- reply are capacity_reserve.lua's.
local now
if ARGV[7] ~= '' then
  now = tonumber(ARGV[7])
else
  local t = redis.call('TIME')
  now = t[1] * 1000 + math.floor(t[2] / 1000)
end
local key, rid = KEYS[1], ARGV[1]
local hot = redis.call('HMGET', key, '', rid)
local s = hot[1]
local off, hx, recv, run, hmax, unc, na, ax, kx, epoch
if s then
  off, hx, recv, run, hmax, unc, na, ax, kx, epoch = cmsgpack.unpack_limit(s, 9)
end
if s and hx > 0 and now <= hx and (na == 0 or now <= ax) then
  local held = hot[2]
  if held then
    held = tonumber(held)
    if held > 0 and held <= now then
      held = false -- a lapsed lease: listed below, deleted on accept
    end
  end
  -- Skip seq and usage, then read the (expiry, rid) pairs.
  local p = cmsgpack.unpack_limit(s, 2, off)
  local head = #s
  if p ~= -1 then
    head = p
  end
  local live, first, nd, dead, keep = 0, 0, 0, nil, nil
  while p ~= -1 do
    local q, x, r = cmsgpack.unpack_limit(s, 2, p)
    if x > now then
      live = live + 1
      if first == 0 or x < first then
        first = x
      end
      if keep then
        if q == -1 then
          keep[#keep + 1] = string.sub(s, p + 1)
        else
          keep[#keep + 1] = string.sub(s, p + 1, q)
        end
      end
    else
      nd = nd + 1
      if nd == 1 then
        dead = {r}
        keep = {string.sub(s, head + 1, p)}
      else
        dead[nd] = r
      end
    end
    p = q
  end
  local maxj = tonumber(ARGV[2])
  if hmax > 0 and maxj > 0 and hmax ~= maxj then
    maxj = -1
  elseif hmax > 0 then
    maxj = hmax
  elseif maxj == 0 then
    maxj = tonumber(ARGV[8])
  end
  local sum, running = ARGV[5] ~= 'max', 0
  local eff
  if sum then
    eff = run + live + unc
  else
    running = tonumber(ARGV[6])
    eff = math.max(running, live)
  end
  local en = tonumber(epoch)
  if maxj < 0 then
    return {6, en, 0, eff, 0} -- LIMIT_MISMATCH
  elseif held then
    if held > 0 then
      return {2, en, held, eff, 0} -- DUPLICATE
    end
    return {2, en, 0, eff, 0}
  elseif sum and now - recv > tonumber(ARGV[4]) then
    return {5, en, 0, eff, 0} -- STALE_HEARTBEAT
  elseif eff >= maxj then
    return {3, en, 0, eff, first} -- FULL
  end
  local expiry = now + tonumber(ARGV[3])
  if sum then
    eff = eff + 1
  else
    eff = math.max(running, live + 1)
  end
  if nd > 0 then
    redis.call('HDEL', key, unpack(dead, 1, nd))
  end
  local st
  if expiry + 60000 > kx then
    -- The lease would outlive the key: extend it, only ever forward, and
    -- note the new end in the state's head.
    kx = expiry + 120000
    redis.call('PEXPIRE', key, kx - now)
    local _, seq, usage = cmsgpack.unpack_limit(s, 2, off)
    st = cmsgpack.pack(hx, recv, run, hmax, unc, na, ax, kx, epoch, seq, usage)
  else
    st = string.sub(s, 1, head)
  end
  if nd > 0 then
    st = st .. table.concat(keep)
  elseif head < #s then
    st = st .. string.sub(s, head + 1)
  end
  -- A ms time prints exactly as '%.14g' (Lua's own number format) until
  -- the year 5138; string.format is slower.
  local exps
  if expiry < 1e14 then
    exps = expiry .. ''
  else
    exps = string.format('%d', expiry)
  end
  redis.call('HSET', key, rid, exps, '', st .. cmsgpack.pack(expiry, rid))
  return {1, en, expiry, eff, 0}
end

-- capacity_lib.lua is prepended to every capacity script: the clock, the
-- status codes and the reading of a node's hash, so that every script reads
-- a node the same way.
--
-- A node is ONE hash, <prefix>{n:<id>}:
--   field ''     the node's state, one string of space-separated words:
--                hx epoch seq running recv max ax kx cpu mem gpu hasgpu
--                (hx: when the heartbeat lapses, 0 = none; ax: when the acked
--                entries lapse; kx: how long the key is known to live; all
--                store ms). A rid is never empty, so '' is never a rid.
--   field <rid>  a reservation: a positive number is a pending lease's
--                expiry (store ms); '-<seq>' (zero or negative) is an acked
--                job with the node seq it was accepted at.
-- A lapsed lease is deleted by the next call that reads the node, so a node
-- holds at most M pending leases, plus the jobs acked since its previous
-- heartbeat.
-- Statuses mirror capacity.ReserveStatus, capacity.AckStatus and
-- capacity.HeartbeatStatus.
redis.replicate_commands()

local OK, DUPLICATE, FULL, UNKNOWN_NODE, STALE_HEARTBEAT, LIMIT_MISMATCH = 1, 2, 3, 4, 5, 6
local ACK_OK, ACK_DUPLICATE, ACK_EPOCH_MISMATCH, ACK_EXPIRED, ACK_LATE = 1, 2, 3, 4, 5
local HB_APPLIED, HB_STALE = 1, 2

-- clock returns the store time in ms: Redis TIME, unless the store was built
-- with a client clock (compatibility mode and boundary tests), in which case
-- the caller passes it.
local function clock(arg)
  if arg ~= '' then
    return tonumber(arg)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function ms(n)
  return string.format('%d', n)
end

local STATE = '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (.*)$'

-- readnode reads node key at now into table n and returns n: the state
-- words (n.w, false without a state field), whether a live heartbeat is
-- known, its numbers, the live leases (count and earliest expiry), the acked
-- entries (n.na of them, their seqs and fields, n.unc above the
-- heartbeat's seq), the fields to delete (lapsed
-- leases, and acked entries past their lifetime), and the value of rid and
-- of each rid in want (a table rid -> true, or nil) into n.val.
local function readnode(key, now, rid, want)
  local a = redis.call('HGETALL', key)
  local w, live, first, dead, nd = false, 0, 0, {}, 0
  local aseq, afield, na = {}, {}, 0
  local held, val = false, {}
  for i = 1, #a, 2 do
    local f = a[i]
    if f == '' then
      w = a[i + 1]
    else
      local v = tonumber(a[i + 1])
      if v > 0 then
        if v > now then
          live = live + 1
          if first == 0 or v < first then
            first = v
          end
        else
          nd = nd + 1
          dead[nd] = f
          v = false
        end
      else
        na = na + 1
        aseq[na], afield[na] = -v, f
      end
      if v then
        if f == rid then
          held = v
        elseif want and want[f] then
          val[f] = v
        end
      end
    end
  end
  local n = {w = false, known = false, epoch = 0, seq = 0, run = 0, recv = 0, max = 0, ax = 0, kx = 0,
    live = live, first = first, unc = 0, na = na, aseq = aseq, afield = afield, dead = dead, nd = nd, held = held, val = val}
  if w then
    local p = {string.match(w, STATE)}
    n.w = p
    local hx = tonumber(p[1])
    n.ax, n.kx = tonumber(p[7]), tonumber(p[8])
    if hx > 0 and now <= hx then
      n.known, n.epoch, n.seq, n.run, n.recv, n.max = true, tonumber(p[2]), tonumber(p[3]), tonumber(p[4]), tonumber(p[5]), tonumber(p[6])
    end
  end
  if na > 0 then
    if now > n.ax then
      -- The acked entries outlived their lifetime (a store without
      -- heartbeats for that long): they go, as their own key would have.
      for x = 1, na do
        nd = nd + 1
        dead[nd] = afield[x]
        if afield[x] == rid then
          n.held = false
        elseif val[afield[x]] then
          val[afield[x]] = nil
        end
      end
      n.nd, n.na = nd, 0
    else
      local u = 0
      for x = 1, na do
        if aseq[x] > n.seq then
          u = u + 1
        end
      end
      n.unc = u
    end
  end
  return n
end

-- state returns n's state words with ax and kx replaced, or a fresh state
-- (no heartbeat) when n has none.
local function state(n, ax, kx)
  local p = n.w
  if not p then
    return '0 0 0 0 0 0 ' .. ms(ax) .. ' ' .. ms(kx) .. ' - - - 0'
  end
  return p[1] .. ' ' .. p[2] .. ' ' .. p[3] .. ' ' .. p[4] .. ' ' .. p[5] .. ' ' .. p[6] .. ' ' .. ms(ax) .. ' ' .. ms(kx) .. ' ' .. p[9]
end

-- purge deletes n's lapsed fields (no command when there are none).
local function purge(key, n)
  if n.nd > 0 then
    redis.call('HDEL', key, unpack(n.dead, 1, n.nd))
  end
end

-- lives makes key live until at least until (store ms): when that is past
-- what n's state records (kx), it sets the key's TTL to until plus a minute
-- of slack, so that the next minute's calls skip it, and returns the new kx
-- for the caller to store; else it returns false. kx only grows, so a key's
-- lifetime is only ever extended.
local function lives(key, n, now, until_ms)
  if until_ms <= n.kx then
    return false
  end
  local kx = until_ms + 60000
  redis.call('PEXPIRE', key, kx - now)
  return kx
end

-- limit is the M a reservation asking maxj (0: none) enforces on node n:
-- the M its heartbeat states, else maxj, else defmax (the store's MaxJobs);
-- -1 when the heartbeat states an M and maxj is another (capacity.limit).
local function limit(n, maxj, defmax)
  local hm = n.max
  if hm > 0 and maxj > 0 and hm ~= maxj then
    return -1
  elseif hm > 0 then
    return hm
  elseif maxj > 0 then
    return maxj
  end
  return defmax
end

-- load is node n's effective load: running + live leases + acked jobs no
-- heartbeat has counted, or the seed's max(running, reserved) with the
-- caller's running when sum is false.
local function load(n, sum, running)
  if sum then
    return n.run + n.live + n.unc
  end
  return math.max(running, n.live)
end

-- decide applies one reservation to node n (read by readnode; h is the
-- rid's value there, false if absent): the reserve transition, or the
-- seed's max(running, reserved) when sum is false. It writes status, epoch,
-- lease expiry, effective load and, for FULL, the earliest pending expiry
-- to out[k+1..k+5], updates n for a grant, and returns the status.
local function decide(n, h, now, maxj, ttl, hbto, sum, running, out, k)
  local status, expiry, earliest = 0, 0, 0
  if maxj < 0 then
    status = LIMIT_MISMATCH
  elseif h then
    status = DUPLICATE
    if h > 0 then
      expiry = h
    end
  elseif sum and not n.known then
    status = UNKNOWN_NODE
  elseif sum and now - n.recv > hbto then
    status = STALE_HEARTBEAT
  elseif load(n, sum, running) >= maxj then
    status, earliest = FULL, n.first
  else
    status, expiry = OK, now + ttl
    n.live = n.live + 1
    if n.first == 0 or expiry < n.first then
      n.first = expiry
    end
  end
  out[k + 1], out[k + 2], out[k + 3], out[k + 4], out[k + 5] = status, n.epoch, expiry, load(n, sum, running), earliest
  return status
end

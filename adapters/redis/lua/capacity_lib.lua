-- capacity_lib.lua is prepended to every capacity script: the clock, the
-- status codes and the reading of a node's hash, so that every script reads
-- a node the same way.
--
-- A node is ONE hash, <prefix>{n:<id>}:
--   field ''     the node's state, nine MessagePack values (cmsgpack.pack):
--                hx epoch seq running recv max ax kx usage
--                (hx: when the heartbeat lapses, 0 = none; ax: when the acked
--                entries lapse; kx: how long the key is known to live; all
--                store ms; epoch is a string of digits, which the reserves
--                answer with as it is; seq a number, exact as the store
--                refuses values above 2^53-1; usage is 'cpu mem gpu hasgpu' as the
--                heartbeat gave them). MessagePack keeps the numbers as
--                numbers: decoding them is several times cheaper than
--                matching words and converting each with tonumber, which
--                was the largest part of a reserve's own Lua time. A rid is
--                never empty, so '' is never a rid.
--   field <rid>  a reservation: a positive number is a pending lease's
--                expiry (store ms); '-<seq>' (zero or negative) is an acked
--                job with the node seq it was accepted at.
-- A lapsed lease is deleted by the next call that reads the node, so a node
-- holds at most M pending leases, plus the jobs acked since its previous
-- heartbeat.
-- Statuses mirror capacity.ReserveStatus, capacity.AckStatus and
-- capacity.HeartbeatStatus.
redis.replicate_commands()

-- Reserve statuses (capacity_reserve.lua and capacity_reserve_batch.lua
-- write them as literals): OK 1, DUPLICATE 2, FULL 3, UNKNOWN_NODE 4,
-- STALE_HEARTBEAT 5, LIMIT_MISMATCH 6.
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

-- readnode reads node key at now into table n and returns n: the state
-- values (n.w, false without a state field), whether a live heartbeat is
-- known, its numbers, the live leases (count and earliest expiry), the acked
-- entries (n.na of them, their seqs and fields, n.unc above the
-- heartbeat's seq), the fields to delete (lapsed
-- leases, and acked entries past their lifetime), and the value of rid
-- (n.held: a live lease's expiry, an acked job's negated seq, or false).
-- capacity_reserve.lua and capacity_reserve_batch.lua read a node the same
-- way, written out flat for speed.
local function readnode(key, now, rid)
  local a = redis.call('HGETALL', key)
  local w, live, first, dead, nd = false, 0, 0, {}, 0
  local aseq, afield, na = {}, {}, 0
  local held = false
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
      if v and f == rid then
        held = v
      end
    end
  end
  local n = {w = false, known = false, epoch = 0, seq = 0, run = 0, recv = 0, max = 0, ax = 0, kx = 0,
    live = live, first = first, unc = 0, na = na, aseq = aseq, afield = afield, dead = dead, nd = nd, held = held}
  if w then
    local p = {cmsgpack.unpack(w)}
    n.w = p
    local hx = p[1]
    n.ax, n.kx = p[7], p[8]
    if hx > 0 and now <= hx then
      n.known, n.epoch, n.seq, n.run, n.recv, n.max = true, tonumber(p[2]), tonumber(p[3]), p[4], p[5], p[6]
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

-- state returns n's state with ax and kx replaced, or a fresh state (no
-- heartbeat) when n has none.
local function state(n, ax, kx)
  local p = n.w
  if not p then
    return cmsgpack.pack(0, '0', 0, 0, 0, 0, ax, kx, '- - - 0')
  end
  return cmsgpack.pack(p[1], p[2], p[3], p[4], p[5], p[6], ax, kx, p[9])
end

-- purge deletes n's lapsed fields (no command when there are none).
local function purge(key, n)
  if n.nd > 0 then
    redis.call('HDEL', key, unpack(n.dead, 1, n.nd))
  end
end

-- lives returns the key's new known lifetime (kx, store ms) when it must
-- live until at least until_ms and n's state records less: until plus a
-- minute of slack, so that the next minute's calls skip it; else false. kx
-- only grows, so a key's lifetime is only ever extended. The caller writes
-- the returned kx into the state and then calls expire: AFTER the write,
-- since on a node Redis has not seen that write creates the key, and a
-- PEXPIRE on a missing key does nothing (the key would never expire).
local function lives(n, until_ms)
  if until_ms <= n.kx then
    return false
  end
  return until_ms + 60000
end

-- expire sets key's TTL to end at kx (from lives), if kx is set.
local function expire(key, now, kx)
  if kx then
    redis.call('PEXPIRE', key, kx - now)
  end
end

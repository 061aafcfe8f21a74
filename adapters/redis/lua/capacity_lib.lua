-- capacity_lib.lua is prepended to every capacity script: the clock, the
-- status codes and the reading and writing of a node's hash, so that every
-- script reads a node the same way.
--
-- A node is ONE hash, <prefix>{n:<id>}:
--   field ''     the node's state, a sequence of MessagePack values
--                (cmsgpack.pack), in this order:
--                  1 hx     when the heartbeat lapses (store ms, 0 = none)
--                  2 recv   when it was received (store ms)
--                  3 run    its running count
--                  4 max    its M (0 = the store's default)
--                  5 unc    how many acked entries have a seq above the
--                           state's seq
--                  6 na     how many acked entries the hash holds
--                  7 ax     when the acked entries lapse (store ms)
--                  8 kx     how long the key is known to live (store ms)
--                  9 epoch  the heartbeat's epoch (a string of digits)
--                 10 seq    its seq (a string of digits)
--                 11 usage  'cpu mem gpu hasgpu' as the heartbeat gave them
--                 (the numbers a reserve needs first, so that it decodes
--                 only those),
--                 then one (expiry, rid) pair per lease field the hash
--                 holds, live or lapsed: the state mirrors the lease
--                 fields, so that a reserve reads the state and its own rid
--                 (HMGET) instead of the whole hash.
--                A rid is never empty, so '' is never a rid.
--   field <rid>  a reservation: a positive number is a pending lease's
--                expiry (store ms); '-<seq>' (zero or negative) is an acked
--                job with the node seq it was accepted at.
-- A lapsed lease is deleted by the next call that writes the node, so a
-- node holds at most M lease fields, plus the jobs acked since its previous
-- heartbeat. The acked entries are only ever counted from the hash itself
-- (HGETALL) when they may have lapsed (now past ax) or the heartbeat is not
-- live: then a reserve takes the full read, as ack, release and heartbeat
-- always do.
-- Statuses mirror capacity.ReserveStatus, capacity.AckStatus and
-- capacity.HeartbeatStatus.
redis.replicate_commands()

local RESERVE_OK, RESERVE_DUPLICATE, RESERVE_FULL, RESERVE_UNKNOWN_NODE, RESERVE_STALE, RESERVE_LIMIT = 1, 2, 3, 4, 5, 6
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
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

local function ms(n)
  return string.format('%d', n)
end

-- newnode returns an empty node table at state p (false = no state field).
local function newnode(p)
  return {p = p, known = false, epoch = 0, seq = 0, run = 0, recv = 0, max = 0, ax = 0, kx = 0,
    live = 0, first = 0, lexp = {}, lrid = {}, dead = {}, nd = 0, na = 0, aseq = {}, afield = {},
    unc = 0, sunc = 0, held = {}}
end

-- setstate fills n's heartbeat numbers from its state at now.
local function setstate(n, now)
  local p = n.p
  if not p then
    return
  end
  n.ax, n.kx = p[7], p[8]
  if p[1] > 0 and now <= p[1] then
    n.known, n.epoch, n.seq, n.run, n.recv, n.max = true, tonumber(p[9]), tonumber(p[10]), p[3], p[2], p[4]
  end
end

-- readnode reads node key at now with HGETALL into a node table: its state
-- (n.p, false without a state field), whether a live heartbeat is known and
-- its numbers, the live leases (n.live of them in n.lexp and n.lrid, the
-- earliest expiry n.first), the acked entries (n.na of them, their seqs and
-- fields; n.unc of them above the live heartbeat's seq, n.sunc above the
-- state's seq), the fields to delete (lapsed leases, and acked entries past
-- their lifetime) and n.held[r] for each rid r in rids: a live lease's
-- expiry or an acked job's negated seq.
local function readnode(key, now, rids)
  local a = redis.call('HGETALL', key)
  local ask = {}
  for i = 1, #rids do
    ask[rids[i]] = true
  end
  local n = newnode(false)
  for i = 1, #a, 2 do
    local f = a[i]
    if f == '' then
      n.p = {cmsgpack.unpack(a[i + 1])}
    else
      local v = tonumber(a[i + 1])
      if v > 0 then
        if v > now then
          n.live = n.live + 1
          n.lexp[n.live], n.lrid[n.live] = v, f
          if n.first == 0 or v < n.first then
            n.first = v
          end
          if ask[f] then
            n.held[f] = v
          end
        else
          n.nd = n.nd + 1
          n.dead[n.nd] = f
        end
      else
        n.na = n.na + 1
        n.aseq[n.na], n.afield[n.na] = -v, f
        if ask[f] then
          n.held[f] = v
        end
      end
    end
  end
  setstate(n, now)
  if n.na > 0 then
    if now > n.ax then
      -- The acked entries outlived their lifetime (a store without
      -- heartbeats for that long): they go, as their own key would have.
      for x = 1, n.na do
        n.nd = n.nd + 1
        n.dead[n.nd] = n.afield[x]
        n.held[n.afield[x]] = nil
      end
      n.na = 0
    else
      local sseq = tonumber(n.p and n.p[10] or 0)
      for x = 1, n.na do
        if n.aseq[x] > n.seq then
          n.unc = n.unc + 1
        end
        if n.aseq[x] > sseq then
          n.sunc = n.sunc + 1
        end
      end
    end
  end
  return n
end

-- readhot reads node key at now for a reserve: with one HMGET of the state
-- and the rids asked for when the state shows a live heartbeat and acked
-- entries that cannot have lapsed, so that the state's counts are exact;
-- else with readnode. The node table is readnode's (without the acked
-- entries' seqs and fields, which a reserve does not use). The lapsed
-- leases the state lists are to be deleted, the same as readnode's.
local function readhot(key, now, rids)
  local a = redis.call('HMGET', key, '', unpack(rids))
  local s = a[1]
  if not s then
    return readnode(key, now, rids)
  end
  local p = {cmsgpack.unpack(s)}
  if p[1] == 0 or now > p[1] or (p[6] > 0 and now > p[7]) then
    return readnode(key, now, rids)
  end
  local n = newnode(p)
  setstate(n, now)
  n.na, n.unc, n.sunc = p[6], p[5], p[5]
  for i = 1, #rids do
    local v = a[i + 1]
    if v then
      v = tonumber(v)
      if v <= 0 or v > now then
        n.held[rids[i]] = v
      end
    end
  end
  local live, first, lexp, lrid, nd, dead = 0, 0, n.lexp, n.lrid, 0, n.dead
  for i = 12, #p, 2 do
    local x = p[i]
    if x > now then
      live = live + 1
      lexp[live], lrid[live] = x, p[i + 1]
      if first == 0 or x < first then
        first = x
      end
    else
      nd = nd + 1
      dead[nd] = p[i + 1]
    end
  end
  n.live, n.first, n.nd = live, first, nd
  return n
end

-- state returns n's state with ax and kx replaced, mirroring n's live
-- leases (n.lexp and n.lrid, as the caller left them) and n.na acked
-- entries, n.sunc of them above the state's seq; a fresh state (no
-- heartbeat) when n has none.
local function state(n, ax, kx)
  local p = n.p
  local t
  if p then
    t = {p[1], p[2], p[3], p[4], n.sunc, n.na, ax, kx, p[9], p[10], p[11]}
  else
    t = {0, 0, 0, 0, n.sunc, n.na, ax, kx, '0', '0', '- - - 0'}
  end
  local k = 11
  for i = 1, n.live do
    t[k + 1], t[k + 2] = n.lexp[i], n.lrid[i]
    k = k + 2
  end
  return cmsgpack.pack(unpack(t, 1, k))
end

-- droplease removes rid from n's live leases (it became acked or was
-- released).
local function droplease(n, rid)
  for i = 1, n.live do
    if n.lrid[i] == rid then
      n.lexp[i], n.lrid[i] = n.lexp[n.live], n.lrid[n.live]
      n.lexp[n.live], n.lrid[n.live] = nil, nil
      n.live = n.live - 1
      return
    end
  end
end

-- purge deletes n's lapsed fields (no command when there are none).
local function purge(key, n)
  if n.nd > 0 then
    redis.call('HDEL', key, unpack(n.dead, 1, n.nd))
  end
end

-- flush deletes n's lapsed fields and writes its state to match, when there
-- are any (a call that changes nothing else).
local function flush(key, n)
  if n.nd > 0 then
    purge(key, n)
    if n.p or n.live > 0 or n.na > 0 then
      redis.call('HSET', key, '', state(n, n.ax, n.kx))
    end
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

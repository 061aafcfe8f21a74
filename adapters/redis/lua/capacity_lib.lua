-- capacity_lib.lua is prepended to every capacity script: the clock, the
-- status codes, and the per-node decision of a reservation, so reserve and
-- reserve_batch decide with one body of code. Keys of a node are
-- hb (HASH), pend (ZSET rid -> lease expiry ms), acked (ZSET rid -> node seq),
-- all under one {n:<id>} hash tag. Statuses mirror capacity.ReserveStatus,
-- capacity.AckStatus and capacity.HeartbeatStatus.
redis.replicate_commands()

local OK, DUPLICATE, FULL, UNKNOWN_NODE, STALE_HEARTBEAT = 1, 2, 3, 4, 5
local ACK_OK, ACK_DUPLICATE, ACK_EPOCH_MISMATCH, ACK_EXPIRED, ACK_LATE = 1, 2, 3, 4, 5
local HB_APPLIED, HB_STALE = 1, 2

-- clock returns the store time in ms: Redis TIME, unless the store was built
-- with a client clock (compatibility mode and boundary tests), in which case
-- the caller passes it.
local function clock(arg)
  if arg ~= nil and arg ~= '' then
    return tonumber(arg)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function ms(n)
  return string.format('%d', n)
end

-- extend sets key's TTL to ttl_ms unless it already lives longer: a key's
-- lifetime is only ever extended (PEXPIRE ... GT, spelled out for Redis 5/6).
local function extend(key, ttl_ms)
  local cur = redis.call('PTTL', key)
  if cur == -2 then
    return
  end
  if cur < ttl_ms then
    redis.call('PEXPIRE', key, ttl_ms)
  end
end

-- node purges lapsed leases at now and reads one node's state: the
-- heartbeat, the pending count and the acked set (small: a heartbeat prunes
-- it), once per node so that a batch pays for them once per node, not once
-- per item. The purge matters under client clocks: a scheduler whose clock
-- runs ahead must delete a lapsed lease before handing its slot out, so that
-- the lease's late ACK answers EXPIRED (the fence).
local function node(hb, pend, acked, now)
  redis.call('ZREMRANGEBYSCORE', pend, '-inf', ms(now))
  local h = redis.call('HMGET', hb, 'epoch', 'seq', 'running', 'recv', 'pendexp')
  local seq = tonumber(h[2]) or 0
  local a = redis.call('ZRANGE', acked, 0, -1, 'WITHSCORES')
  local ackedset, uncounted = {}, 0
  for i = 1, #a, 2 do
    ackedset[a[i]] = true
    if tonumber(a[i + 1]) > seq then
      uncounted = uncounted + 1
    end
  end
  local live = redis.call('ZCARD', pend)
  return {
    hb = hb, pend = pend,
    known = h[1] ~= false,
    epoch = tonumber(h[1]) or 0,
    running = tonumber(h[3]) or 0,
    recv = tonumber(h[4]) or 0,
    pendexp = tonumber(h[5]) or 0,
    pending = live,
    pending0 = live,
    acked = ackedset,
    uncounted = uncounted,
    maxexp = 0,
  }
end

local function load(n, acct, running)
  if acct == 'max' then
    return math.max(running, n.pending)
  end
  return n.running + n.pending + n.uncounted
end

-- decide applies one reservation to node n: the spec's reserve script, or
-- the seed's max(running, reserved) when acct is 'max'.
-- It returns status, epoch, lease expiry, effective load, and for FULL the
-- earliest pending expiry.
local function decide(n, now, rid, maxj, ttl, hbto, acct, running)
  local status, expiry, earliest = 0, 0, 0
  if acct ~= 'max' and n.acked[rid] then
    status = DUPLICATE
  elseif (acct ~= 'max' and (not n.known or now - n.recv > hbto)) or load(n, acct, running) >= maxj then
    local held = tonumber(redis.call('ZSCORE', n.pend, rid))
    if held then
      status, expiry = DUPLICATE, held
    elseif acct ~= 'max' and not n.known then
      status = UNKNOWN_NODE
    elseif acct ~= 'max' and now - n.recv > hbto then
      status = STALE_HEARTBEAT
    else
      status = FULL
      local first = redis.call('ZRANGE', n.pend, 0, 0, 'WITHSCORES')
      earliest = tonumber(first[2]) or 0
    end
  else
    -- Room: add unless the rid is there; NX answers both in one command.
    expiry = now + ttl
    if redis.call('ZADD', n.pend, 'NX', ms(expiry), rid) == 1 then
      status = OK
    else
      status, expiry = DUPLICATE, tonumber(redis.call('ZSCORE', n.pend, rid))
    end
    if status == OK then
      n.pending = n.pending + 1
      if expiry > n.maxexp then
        n.maxexp = expiry
      end
    end
  end
  return {status, n.epoch, expiry, load(n, acct, running), earliest}
end

-- undo removes a lease decide granted (an all-or-nothing batch refused).
local function undo(n, rid)
  redis.call('ZREM', n.pend, rid)
end

-- settle keeps pend alive until its longest lease plus at least 60 s, and
-- only ever extends it. To spare a command per call, it extends by 120 s and
-- notes the new end in hb's pendexp, so later calls within a minute skip it.
-- A key with no lease before this call is new (no TTL yet): it gets a plain
-- PEXPIRE.
local function settle(n, now)
  if n.maxexp == 0 or (n.pending0 > 0 and n.pendexp >= n.maxexp + 60000) then
    return
  end
  local ttl = n.maxexp - now + 120000
  if n.pending0 == 0 then
    redis.call('PEXPIRE', n.pend, ttl)
  elseif redis.REDIS_VERSION_NUM then -- Redis 7: GT
    redis.call('PEXPIRE', n.pend, ttl, 'GT')
  else
    extend(n.pend, ttl)
  end
  if n.known then
    redis.call('HSET', n.hb, 'pendexp', ms(n.maxexp + 120000))
  end
end

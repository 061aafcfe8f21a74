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

-- Node state. A script reads each of its nodes once into these parallel
-- arrays, indexed by the node's number j in the call (flat arrays, not one
-- table per node: a batch of 16 nodes would otherwise build 16 hash tables
-- that cost more than the decisions). decide then works on them in Lua,
-- calling Redis only to write a lease or, off the hot path, to look up a
-- refused rid.
local N_known, N_epoch, N_run, N_recv, N_pendexp = {}, {}, {}, {}, {}
local N_pend, N_pend0, N_unc, N_acked, N_maxexp = {}, {}, {}, {}, {}

-- readnode purges node j's lapsed leases at now and reads its state: the
-- heartbeat, the pending count and the acked set (small: a heartbeat prunes
-- it), four commands, once per node however many items a batch has for it.
-- The purge matters under client clocks: a scheduler whose clock runs ahead
-- must delete a lapsed lease before handing its slot out, so that the
-- lease's late ACK answers EXPIRED (the fence).
local function readnode(j, hb, pend, acked, nowms)
  redis.call('ZREMRANGEBYSCORE', pend, '-inf', nowms)
  local h = redis.call('HMGET', hb, 'epoch', 'seq', 'running', 'recv', 'pendexp')
  N_known[j] = h[1] ~= false
  N_epoch[j] = tonumber(h[1]) or 0
  N_run[j] = tonumber(h[3]) or 0
  N_recv[j] = tonumber(h[4]) or 0
  N_pendexp[j] = tonumber(h[5]) or 0
  local a = redis.call('ZRANGE', acked, 0, -1, 'WITHSCORES')
  local u, set = 0, false
  if #a > 0 then
    local seq = tonumber(h[2]) or 0
    set = {}
    for i = 1, #a, 2 do
      set[a[i]] = true
      if tonumber(a[i + 1]) > seq then
        u = u + 1
      end
    end
  end
  N_unc[j], N_acked[j] = u, set
  local live = redis.call('ZCARD', pend)
  N_pend[j], N_pend0[j], N_maxexp[j] = live, live, 0
end

-- load is node j's effective load: running + pending + acked-uncounted, or
-- the seed's max(running, reserved) with the caller's running when sum is
-- false.
local function load(j, sum, running)
  if sum then
    return N_run[j] + N_pend[j] + N_unc[j]
  end
  return math.max(running, N_pend[j])
end

-- decide applies one reservation to node j (keys read by readnode): the
-- spec's reserve script, or the seed's max(running, reserved) when sum is
-- false. It writes status, epoch, lease expiry, effective load and, for
-- FULL, the earliest pending expiry to out[k+1..k+5], and returns the
-- status. expstr is ms(now + ttl), which a batch computes once per TTL.
--
-- held is nil, or node j's rids already looked up in pend (rid -> expiry or
-- false; see capacity_reserve_batch.lua). Without it, a grant is written at
-- once with ZADD NX, whose answer also tells whether the rid was held. With
-- it, decide calls Redis for nothing on the accept path: a grant is noted in
-- held (so a rid repeated in the batch is a duplicate of it) and in the
-- node's write list, which the caller writes with one ZADD.
local N_wn, N_wmin = {}, {}
local function decide(j, pend, now, rid, maxj, ttl, expstr, hbto, sum, running, out, k, held, writes)
  local status, expiry, earliest = 0, 0, 0
  local set = N_acked[j]
  if sum and set and set[rid] then
    status = DUPLICATE
  elseif (sum and (not N_known[j] or now - N_recv[j] > hbto)) or load(j, sum, running) >= maxj then
    local h
    if held then
      h = held[rid]
    else
      h = tonumber(redis.call('ZSCORE', pend, rid))
    end
    if h then
      status, expiry = DUPLICATE, h
    elseif sum and not N_known[j] then
      status = UNKNOWN_NODE
    elseif sum and now - N_recv[j] > hbto then
      status = STALE_HEARTBEAT
    else
      status = FULL
      local first = redis.call('ZRANGE', pend, 0, 0, 'WITHSCORES')
      earliest = tonumber(first[2]) or 0
      local w = N_wmin[j]
      if w and (earliest == 0 or w < earliest) then
        earliest = w -- a lease granted earlier in this batch, not yet written
      end
    end
  elseif held then
    local h = held[rid]
    if h then
      status, expiry = DUPLICATE, h
    else
      status, expiry = OK, now + ttl
      held[rid] = expiry
      local n = (N_wn[j] or 0) + 2
      writes[n - 1], writes[n], N_wn[j] = expstr, rid, n
      if not N_wmin[j] or expiry < N_wmin[j] then
        N_wmin[j] = expiry
      end
    end
  else
    -- Room: add unless the rid is there; NX answers both in one command.
    expiry = now + ttl
    if redis.call('ZADD', pend, 'NX', expstr, rid) == 1 then
      status = OK
    else
      status, expiry = DUPLICATE, tonumber(redis.call('ZSCORE', pend, rid))
    end
  end
  if status == OK then
    N_pend[j] = N_pend[j] + 1
    if expiry > N_maxexp[j] then
      N_maxexp[j] = expiry
    end
  end
  out[k + 1], out[k + 2], out[k + 3], out[k + 4], out[k + 5] = status, N_epoch[j], expiry, load(j, sum, running), earliest
  return status
end

-- settle keeps node j's pend alive until its longest lease plus at least
-- 60 s, and only ever extends it. To spare a command per call, it extends by
-- 120 s and notes the new end in hb's pendexp, so later calls within a
-- minute skip it. A key with no lease before this call is new (no TTL yet):
-- it gets a plain PEXPIRE.
local function settle(j, now, hb, pend)
  local mx = N_maxexp[j]
  if mx == 0 or (N_pend0[j] > 0 and N_pendexp[j] >= mx + 60000) then
    return
  end
  local ttl = mx - now + 120000
  if N_pend0[j] == 0 then
    redis.call('PEXPIRE', pend, ttl)
  elseif redis.REDIS_VERSION_NUM then -- Redis 7: GT
    redis.call('PEXPIRE', pend, ttl, 'GT')
  else
    extend(pend, ttl)
  end
  if N_known[j] then
    redis.call('HSET', hb, 'pendexp', ms(mx + 120000))
  end
end

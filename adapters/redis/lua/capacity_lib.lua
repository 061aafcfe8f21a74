-- capacity_lib.lua is prepended to every capacity script: the clock, the
-- status codes, and the per-node decision of a reservation, so reserve and
-- reserve_batch decide with one body of code. Keys of a node are
-- hb (HASH), pend (ZSET rid -> lease expiry ms), acked (ZSET rid -> node seq),
-- all under one {n:<id>} hash tag. Statuses mirror capacity.ReserveStatus,
-- capacity.AckStatus and capacity.HeartbeatStatus.
redis.replicate_commands()

local OK, DUPLICATE, FULL, UNKNOWN_NODE, STALE_HEARTBEAT, LIMIT_MISMATCH = 1, 2, 3, 4, 5, 6
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

-- Node state. A script reads each of its nodes once into one flat array N,
-- node j's fields at N[(j - 1) * NF + field]: one table for the whole call
-- (preallocated for one node, all a single reserve needs) rather than a
-- table per field or per node, whose allocation and collection cost the
-- single reserve a tenth of its server time. decide then works on N in Lua,
-- calling Redis only to write a lease or, off the hot path, to look up a
-- refused rid.
local NF = 13
local KNOWN, EPOCH, RUN, RECV, PENDEXP, PEND, PEND0, UNC, ACKED, MAXEXP, WN, WMIN, HMAX = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
local N = {false, false, false, false, false, false, false, false, false, false, false, false, false}

-- readnode purges node j's lapsed leases at now and reads its state: the
-- heartbeat, the pending count and the acked set (small: a heartbeat prunes
-- it), four commands, once per node however many items a batch has for it.
-- The purge matters under client clocks: a scheduler whose clock runs ahead
-- must delete a lapsed lease before handing its slot out, so that the
-- lease's late ACK answers EXPIRED (the fence).
local function readnode(j, hb, pend, acked, nowms)
  local b = (j - 1) * NF
  redis.call('ZREMRANGEBYSCORE', pend, '-inf', nowms)
  local h = redis.call('HMGET', hb, 'epoch', 'seq', 'running', 'recv', 'pendexp', 'max')
  N[b + KNOWN] = h[1] ~= false
  N[b + EPOCH] = tonumber(h[1]) or 0
  N[b + RUN] = tonumber(h[3]) or 0
  N[b + RECV] = tonumber(h[4]) or 0
  N[b + PENDEXP] = tonumber(h[5]) or 0
  N[b + HMAX] = tonumber(h[6]) or 0
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
  N[b + UNC], N[b + ACKED] = u, set
  local live = redis.call('ZCARD', pend)
  N[b + PEND], N[b + PEND0], N[b + MAXEXP], N[b + WN], N[b + WMIN] = live, live, 0, 0, false
end

-- load is node j's effective load: running + pending + acked-uncounted, or
-- the seed's max(running, reserved) with the caller's running when sum is
-- false.
local function load(j, sum, running)
  local b = (j - 1) * NF
  if sum then
    return N[b + RUN] + N[b + PEND] + N[b + UNC]
  end
  return math.max(running, N[b + PEND])
end

-- limit is the M a reservation asking maxj (0: none) enforces on node j:
-- the M its heartbeat states, else maxj, else defmax (the store's MaxJobs);
-- -1 when the heartbeat states an M and maxj is another (capacity.limit).
local function limit(j, maxj, defmax)
  local hm = N[(j - 1) * NF + HMAX]
  if hm > 0 and maxj > 0 and hm ~= maxj then
    return -1
  elseif hm > 0 then
    return hm
  elseif maxj > 0 then
    return maxj
  end
  return defmax
end

-- decide applies one reservation to node j (keys read by readnode): the
-- reserve transition, or the seed's max(running, reserved) when sum is
-- false. maxj is limit's answer: -1 refuses with LIMIT_MISMATCH. It writes status, epoch, lease expiry, effective load and, for
-- FULL, the earliest pending expiry to out[k+1..k+5], and returns the
-- status. expstr is ms(now + ttl), which a batch computes once per TTL.
--
-- held is nil, or node j's rids already looked up in pend (rid -> expiry or
-- false; see capacity_reserve_batch.lua). Without it, a grant is written at
-- once with ZADD NX, whose answer also tells whether the rid was held. With
-- it, decide calls Redis for nothing on the accept path: a grant is noted in
-- held (so a rid repeated in the batch is a duplicate of it) and in the
-- node's write list, which the caller writes with one ZADD.
local function decide(j, pend, now, rid, maxj, ttl, expstr, hbto, sum, running, out, k, held, writes)
  local b = (j - 1) * NF
  local status, expiry, earliest = 0, 0, 0
  local set = N[b + ACKED]
  if maxj < 0 then
    status = LIMIT_MISMATCH
  elseif sum and set and set[rid] then
    status = DUPLICATE
  elseif (sum and (not N[b + KNOWN] or now - N[b + RECV] > hbto)) or load(j, sum, running) >= maxj then
    local h
    if held then
      h = held[rid]
    else
      h = tonumber(redis.call('ZSCORE', pend, rid))
    end
    if h then
      status, expiry = DUPLICATE, h
    elseif sum and not N[b + KNOWN] then
      status = UNKNOWN_NODE
    elseif sum and now - N[b + RECV] > hbto then
      status = STALE_HEARTBEAT
    else
      status = FULL
      local first = redis.call('ZRANGE', pend, 0, 0, 'WITHSCORES')
      earliest = tonumber(first[2]) or 0
      local w = N[b + WMIN]
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
      local n = N[b + WN] + 2
      writes[n - 1], writes[n], N[b + WN] = expstr, rid, n
      if not N[b + WMIN] or expiry < N[b + WMIN] then
        N[b + WMIN] = expiry
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
    N[b + PEND] = N[b + PEND] + 1
    if expiry > N[b + MAXEXP] then
      N[b + MAXEXP] = expiry
    end
  end
  out[k + 1], out[k + 2], out[k + 3], out[k + 4], out[k + 5] = status, N[b + EPOCH], expiry, load(j, sum, running), earliest
  return status
end

-- settle keeps node j's pend alive until its longest lease plus at least
-- 60 s, and only ever extends it. To spare a command per call, it extends by
-- 120 s and notes the new end in hb's pendexp, so later calls within a
-- minute skip it. A key with no lease before this call is new (no TTL yet):
-- it gets a plain PEXPIRE.
local function settle(j, now, hb, pend)
  local b = (j - 1) * NF
  local mx = N[b + MAXEXP]
  if mx == 0 or (N[b + PEND0] > 0 and N[b + PENDEXP] >= mx + 60000) then
    return
  end
  local ttl = mx - now + 120000
  if N[b + PEND0] == 0 then
    redis.call('PEXPIRE', pend, ttl)
  elseif redis.REDIS_VERSION_NUM then -- Redis 7: GT
    redis.call('PEXPIRE', pend, ttl, 'GT')
  else
    extend(pend, ttl)
  end
  if N[b + KNOWN] then
    redis.call('HSET', hb, 'pendexp', ms(mx + 120000))
  end
end

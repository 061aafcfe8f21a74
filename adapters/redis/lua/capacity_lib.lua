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

-- node reads one node's state after purging lapsed leases at now.
local function node(hb, pend, acked, now)
  redis.call('ZREMRANGEBYSCORE', pend, '-inf', ms(now))
  local h = redis.call('HMGET', hb, 'epoch', 'seq', 'running', 'recv')
  return {
    hb = hb, pend = pend, acked = acked,
    known = h[1] ~= false,
    epoch = tonumber(h[1]) or 0,
    seq = h[2] or '0',
    running = tonumber(h[3]) or 0,
    recv = tonumber(h[4]) or 0,
    maxexp = 0,
  }
end

local function load(n, acct, running)
  local pending = redis.call('ZCARD', n.pend)
  if acct == 'max' then
    return math.max(running, pending)
  end
  return n.running + pending + redis.call('ZCOUNT', n.acked, '(' .. n.seq, '+inf')
end

local function earliest(n)
  local e = redis.call('ZRANGE', n.pend, 0, 0, 'WITHSCORES')
  if #e == 0 then
    return 0
  end
  return tonumber(e[2])
end

-- decide applies one reservation to node n: the spec's reserve script, or
-- the seed's max(running, reserved) when acct is 'max'.
-- It returns status, epoch, lease expiry, effective load, earliest expiry.
local function decide(n, now, rid, maxj, ttl, hbto, acct, running)
  local status, expiry = 0, 0
  local held = redis.call('ZSCORE', n.pend, rid)
  if held then
    status, expiry = DUPLICATE, tonumber(held)
  elseif acct ~= 'max' and redis.call('ZSCORE', n.acked, rid) then
    status = DUPLICATE
  elseif acct ~= 'max' and not n.known then
    status = UNKNOWN_NODE
  elseif acct ~= 'max' and now - n.recv > hbto then
    status = STALE_HEARTBEAT
  elseif load(n, acct, running) >= maxj then
    status = FULL
  else
    status, expiry = OK, now + ttl
    redis.call('ZADD', n.pend, ms(expiry), rid)
    if expiry > n.maxexp then
      n.maxexp = expiry
    end
  end
  return {status, n.epoch, expiry, load(n, acct, running), earliest(n)}
end

-- settle extends pend's lifetime to its longest new lease plus 60 s.
local function settle(n, now)
  if n.maxexp > 0 then
    extend(n.pend, n.maxexp - now + 60000)
  end
end

-- capacity_reserve.lua: reserve one slot, reading the node whole (HGETALL)
-- as capacity_lib.lua describes; it runs only when
-- capacity_reserve_hot.lua, which starts the script, cannot answer from the
-- node's state (no live heartbeat, or acked entries that may have lapsed).
-- The tests hold both paths to the same answers as
-- capacity_reserve_batch.lua, MemoryStore and the ledger.
-- KEYS: the node's hash.
-- ARGV: rid, max (0 = the node's), ttl_ms, heartbeat_timeout_ms, accounting
--       ('sum' or 'max'), running (the caller's copy, read only by 'max'),
--       now_ms ('' = TIME), the store's default max.
-- Returns status, epoch, lease expiry, effective load, earliest pending expiry
-- (statuses as in capacity_lib.lua).
-- now, key and rid are capacity_reserve_hot.lua's.
local n = readnode(key, now, {rid})
local held = n.held[rid]
local sum = ARGV[5] ~= 'max'
local maxj, hmax = tonumber(ARGV[2]), n.max
if hmax > 0 and maxj > 0 and hmax ~= maxj then
  maxj = -1
elseif hmax > 0 then
  maxj = hmax
elseif maxj == 0 then
  maxj = tonumber(ARGV[8])
end
local running = 0
if not sum then
  running = tonumber(ARGV[6])
end
local eff
if sum then
  eff = n.run + n.live + n.unc
else
  eff = math.max(running, n.live)
end
local status, expiry, earliest = 0, 0, 0
if maxj < 0 then
  status = RESERVE_LIMIT
elseif held then
  status = RESERVE_DUPLICATE
  if held > 0 then
    expiry = held
  end
elseif sum and not n.known then
  status = RESERVE_UNKNOWN_NODE
elseif sum and now - n.recv > tonumber(ARGV[4]) then
  status = RESERVE_STALE
elseif eff >= maxj then
  status, earliest = RESERVE_FULL, n.first
else
  status, expiry = RESERVE_OK, now + tonumber(ARGV[3])
  if sum then
    eff = eff + 1
  else
    eff = math.max(running, n.live + 1)
  end
end
purge(key, n)
if status == RESERVE_OK then
  n.live = n.live + 1
  n.lexp[n.live], n.lrid[n.live] = expiry, rid
  -- The lease would outlive the key: extend it, only ever forward.
  local kx = lives(key, n, now, expiry + 60000) or n.kx
  -- A ms time prints exactly as '%.14g' (Lua's own number format) until
  -- the year 5138; string.format is slower.
  local exps
  if expiry < 1e14 then
    exps = expiry .. ''
  else
    exps = ms(expiry)
  end
  redis.call('HSET', key, rid, exps, '', state(n, n.ax, kx))
elseif n.nd > 0 then
  redis.call('HSET', key, '', state(n, n.ax, n.kx))
end
return {status, n.epoch, expiry, eff, earliest}

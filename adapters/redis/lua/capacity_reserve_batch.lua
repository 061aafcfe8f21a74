-- capacity_reserve_batch.lua: reserve several slots, decided in order, in one
-- atomic call. TIME once; each node is purged and read once (readnode); the
-- items are then decided in Lua against the nodes' state.
--   * A node with one item writes its lease with ZADD NX as it is decided:
--     one command both adds the lease and says whether the rid was held.
--   * A node with several items (Redis 7, for ZMSCORE) looks all of its rids
--     up in pend with one ZMSCORE, its items are decided without calling
--     Redis, and its grants are written at the end with one ZADD; a refused
--     all-or-nothing batch writes nothing for it.
-- Lifetimes are then settled once per node.
-- KEYS: hb, pend, acked of each distinct node.
-- ARGV: now_ms ('' = TIME), heartbeat_timeout_ms, accounting, mode
--       ('all' = all or nothing, 'partial'), the store's default max, then
--       per item five values: node index (1-based), rid, max (0 = the
--       node's), ttl_ms, running.
-- Returns committed (1/0), then five values per item as capacity_reserve.
local now = clock(ARGV[1])
local nowms = ms(now)
local hbto, sum, mode, defmax = tonumber(ARGV[2]), ARGV[3] ~= 'max', ARGV[4], tonumber(ARGV[5])
local nodes = #KEYS / 3
for j = 1, nodes do
  readnode(j, KEYS[3 * j - 2], KEYS[3 * j - 1], KEYS[3 * j], nowms)
end
-- held[j] and writes[j] exist only for nodes with several items.
local held, writes = {}, {}
if redis.REDIS_VERSION_NUM and #ARGV > 10 then -- Redis 7 (ZMSCORE is 6.2+), two items or more
  local cnt, multi = {}, false
  for i = 6, #ARGV, 5 do
    local j = tonumber(ARGV[i])
    local c = (cnt[j] or 0) + 1
    cnt[j] = c
    multi = multi or c > 1
  end
  if multi then
    local rids = {}
    for i = 6, #ARGV, 5 do
      local j = tonumber(ARGV[i])
      if cnt[j] > 1 then
        local r = rids[j]
        if r then
          r[#r + 1] = ARGV[i + 1]
        else
          rids[j] = {ARGV[i + 1]}
        end
      end
    end
    for j = 1, nodes do
      local r = rids[j]
      if r then
        local sc = redis.call('ZMSCORE', KEYS[3 * j - 1], unpack(r))
        local h = {}
        for x = 1, #r do
          h[r[x]] = tonumber(sc[x]) or false
        end
        held[j], writes[j] = h, {}
      end
    end
  end
end
-- Items mostly share one TTL: format its expiry once.
local lastttl, expstr = -1, ''
local out, k, refused = {1}, 1, false
local gj, grid, ng = {}, {}, 0
for i = 6, #ARGV, 5 do
  local j, rid, ttl = tonumber(ARGV[i]), ARGV[i + 1], tonumber(ARGV[i + 3])
  if ttl ~= lastttl then
    lastttl, expstr = ttl, ms(now + ttl)
  end
  local st = decide(j, KEYS[3 * j - 1], now, rid, limit(j, tonumber(ARGV[i + 2]), defmax), ttl, expstr, hbto, sum, tonumber(ARGV[i + 4]),
    out, k, held[j], writes[j])
  k = k + 5
  if st == OK and not held[j] then
    ng = ng + 1
    gj[ng], grid[ng] = j, rid
  elseif st ~= OK and st ~= DUPLICATE then
    refused = true
  end
end
if refused and mode == 'all' then
  -- All or nothing: take back the leases written above; deferred ones are
  -- simply not written.
  for g = 1, ng do
    redis.call('ZREM', KEYS[3 * gj[g] - 1], grid[g])
  end
  out[1] = 0
  return out
end
for j = 1, nodes do
  local w = writes[j]
  if w and #w > 0 then
    redis.call('ZADD', KEYS[3 * j - 1], unpack(w))
  end
end
for j = 1, nodes do
  settle(j, now, KEYS[3 * j - 2], KEYS[3 * j - 1])
end
return out

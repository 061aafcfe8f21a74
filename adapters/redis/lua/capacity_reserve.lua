-- capacity_reserve.lua: reserve one slot. One key, and on the accept path
-- two commands: HGETALL, then one HSET (plus HDEL when leases lapsed, PEXPIRE
-- when the lease outlives what the key is known to live).
-- KEYS: the node's hash.
-- ARGV: rid, max (0 = the node's), ttl_ms, heartbeat_timeout_ms, accounting
--       ('sum' or 'max'), running (the caller's copy, read only by 'max'),
--       now_ms ('' = TIME), the store's default max.
-- Returns status, epoch, lease expiry, effective load, earliest pending expiry.
local now = clock(ARGV[7])
local key, rid = KEYS[1], ARGV[1]
local n = readnode(key, now, rid, nil)
local out = {0, 0, 0, 0, 0}
local st = decide(n, n.held, now, limit(n, tonumber(ARGV[2]), tonumber(ARGV[8])), tonumber(ARGV[3]), tonumber(ARGV[4]),
  ARGV[5] ~= 'max', tonumber(ARGV[6]), out, 0)
purge(key, n)
if st == OK then
  local exp = out[3]
  local kx = lives(key, n, now, exp + 60000)
  if kx then
    redis.call('HSET', key, rid, ms(exp), '', state(n, n.ax, kx))
  else
    redis.call('HSET', key, rid, ms(exp))
  end
end
return out

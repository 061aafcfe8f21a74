-- capacity_reserve.lua: reserve one slot.
-- KEYS: hb, pend, acked of one node.
-- ARGV: rid, max (0 = the node's), ttl_ms, heartbeat_timeout_ms, accounting
--       ('sum' or 'max'), running (the caller's copy, read only by 'max'),
--       now_ms ('' = TIME), the store's default max.
-- Returns status, epoch, lease expiry, effective load, earliest pending expiry.
local now = clock(ARGV[7])
readnode(1, KEYS[1], KEYS[2], KEYS[3], ms(now))
local ttl = tonumber(ARGV[3])
local out = {0, 0, 0, 0, 0}
decide(1, KEYS[2], now, ARGV[1], limit(1, tonumber(ARGV[2]), tonumber(ARGV[8])), ttl, ms(now + ttl), tonumber(ARGV[4]), ARGV[5] ~= 'max',
  tonumber(ARGV[6]), out, 0)
settle(1, now, KEYS[1], KEYS[2])
return out

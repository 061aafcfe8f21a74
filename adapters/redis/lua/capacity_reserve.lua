-- capacity_reserve.lua: reserve one slot.
-- KEYS: hb, pend, acked of one node.
-- ARGV: rid, max, ttl_ms, heartbeat_timeout_ms, accounting ('sum' or 'max'),
--       running (the caller's copy, read only by 'max'), now_ms ('' = TIME).
-- Returns status, epoch, lease expiry, effective load, earliest pending expiry.
local now = clock(ARGV[7])
local n = node(KEYS[1], KEYS[2], KEYS[3], now)
local r = decide(n, now, ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6]))
settle(n, now)
return r

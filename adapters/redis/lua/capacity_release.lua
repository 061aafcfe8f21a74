-- capacity_release.lua: drop a pending lease; acked jobs leave only through
-- heartbeats. KEYS: hb, pend, acked. ARGV: rid, now_ms ('' = TIME).
-- Returns 1 if a lease was dropped, else 0.
local now = clock(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ms(now))
return redis.call('ZREM', KEYS[2], ARGV[1])

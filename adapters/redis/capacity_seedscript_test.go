package redis_test

// seedReserveLua is the seed scheduler's Redis reservation script, as the
// seed document of this project prints it (seed 002, "node capacity", its
// section 2.4.2, the multi-instance implementation), unchanged except that
// its comments are translated into English. It is held here only so that
// BenchmarkCapacityVsSeedScript can drive it beside CapacityStore through
// the same client on the same server. It oversells (max instead of a sum,
// the caller's own running count, the client's clock); no test relies on
// its answers beyond "accepted".
//
// KEYS[1]: the node's reservation ZSET. ARGV: now (client ms), ttl_ms,
// running, max_concurrent_jobs, job id. Returns 1 (reserved) or 0 (full).
const seedReserveLua = `
local now = tonumber(ARGV[1])
local ttl_ms = tonumber(ARGV[2])
local running = tonumber(ARGV[3])  -- the current_jobs of the node's heartbeat
local maxj = tonumber(ARGV[4])     -- max_concurrent_jobs
local job = ARGV[5]

-- 1. purge expired reservations (ZSET members with score < now)
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now)

-- 2. count the current reservations
local reserved = redis.call('ZCARD', KEYS[1])

-- 3. effective load (the maximum)
local effective = reserved
if running > reserved then effective = running end

-- 4. check the capacity (atomically)
if effective >= maxj then
  return 0  -- full, the reservation fails
end

-- 5. reserved: add to the ZSET (score = expiry)
redis.call('ZADD', KEYS[1], now + ttl_ms, job)
redis.call('EXPIRE', KEYS[1], math.max(60, math.floor(ttl_ms/1000) + 60))
return 1  -- reserved
`

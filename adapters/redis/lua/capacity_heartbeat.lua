-- capacity_heartbeat.lua: apply a node's heartbeat.
-- KEYS: hb, pend, acked of one node.
-- ARGV: epoch, seq, running, max, cpu, mem, gpu, hasgpu, lifetime_ms,
--       now_ms ('' = TIME).
-- Returns status, then for a stale same-epoch heartbeat whose seq went
-- backwards 1 and the stored seq, else 0 and 0.
local now = clock(ARGV[10])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ms(now))
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'seq')
local e, s = tonumber(ARGV[1]), tonumber(ARGV[2])
if cur[1] then
  local ce, cs = tonumber(cur[1]), tonumber(cur[2])
  if e < ce then
    return {HB_STALE, 0, 0}
  end
  if e == ce and s <= cs then
    if s < cs then
      return {HB_STALE, 1, cur[2]}
    end
    return {HB_STALE, 0, 0}
  end
  if e == ce then
    -- Entries the previous heartbeat covered were tombstones for ACK
    -- retries during one interval; now they go.
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', cur[2])
  else
    redis.call('DEL', KEYS[3])
  end
else
  redis.call('DEL', KEYS[3])
end
redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'seq', ARGV[2], 'running', ARGV[3], 'max', ARGV[4],
  'cpu', ARGV[5], 'mem', ARGV[6], 'gpu', ARGV[7], 'hasgpu', ARGV[8], 'recv', ms(now))
local life = tonumber(ARGV[9])
redis.call('PEXPIRE', KEYS[1], life)
extend(KEYS[3], life)
return {HB_APPLIED, 0, 0}

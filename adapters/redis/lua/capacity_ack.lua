-- capacity_ack.lua: commit a node's ACK.
-- KEYS: hb, pend, acked of one node.
-- ARGV: rid, epoch, seq, fenced ('1' or '0'), lifetime_ms, accounting
--       ('sum' or 'max'), now_ms ('' = TIME).
-- Returns the status.
local now = clock(ARGV[7])
local rid = ARGV[1]
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ms(now))
if ARGV[6] == 'max' then
  -- The seed releases the reservation on ACK and has no fence.
  if redis.call('ZREM', KEYS[2], rid) == 1 then
    return ACK_OK
  end
  return ACK_LATE
end
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if not epoch or epoch ~= ARGV[2] then
  return ACK_EPOCH_MISMATCH
end
if redis.call('ZSCORE', KEYS[3], rid) then
  return ACK_DUPLICATE
end
local status = ACK_OK
if redis.call('ZREM', KEYS[2], rid) == 0 then
  if ARGV[4] == '1' then
    return ACK_EXPIRED
  end
  status = ACK_LATE
end
redis.call('ZADD', KEYS[3], ARGV[3], rid)
extend(KEYS[3], tonumber(ARGV[5]))
return status

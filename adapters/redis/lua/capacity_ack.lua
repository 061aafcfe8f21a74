-- capacity_ack.lua: commit a node's ACK.
-- KEYS: the node's hash.
-- ARGV: rid, epoch, seq, fenced ('1' or '0'), lifetime_ms, accounting
--       ('sum' or 'max'), now_ms ('' = TIME).
-- Returns the status.
local now = clock(ARGV[7])
local key, rid = KEYS[1], ARGV[1]
local n = readnode(key, now, rid)
local h = n.held
if ARGV[6] == 'max' then
  -- The seed releases the reservation on ACK and has no fence.
  if h and h > 0 then
    n.nd = n.nd + 1
    n.dead[n.nd] = rid
    purge(key, n)
    return ACK_OK
  end
  purge(key, n)
  return ACK_LATE
end
if not n.known or n.epoch ~= tonumber(ARGV[2]) then
  purge(key, n)
  return ACK_EPOCH_MISMATCH
end
if h and h <= 0 then
  purge(key, n)
  if ARGV[4] == '1' and -h ~= tonumber(ARGV[3]) then
    -- Acknowledged for another acceptance (another seq): this one's lease
    -- is gone with it, and the job must not start again uncounted.
    return ACK_EXPIRED
  end
  -- Written again as it is, so that a WAIT after this call covers it: a
  -- retry after a WAIT that fell short must not answer DUPLICATE for an
  -- ACK the replicas have not received.
  redis.call('HSET', key, rid, string.format('-%d', -h))
  return ACK_DUPLICATE
end
local status = ACK_OK
if not h then
  if ARGV[4] == '1' then
    purge(key, n)
    return ACK_EXPIRED
  end
  status = ACK_LATE
end
purge(key, n)
-- The acked entries live a lifetime from now (only ever extended while
-- there are any), and the key at least as long.
local ax = now + tonumber(ARGV[5])
if n.na > 0 and n.ax > ax then
  ax = n.ax
end
local newkx = lives(n, ax)
redis.call('HSET', key, rid, '-' .. ARGV[3], '', state(n, ax, newkx or n.kx))
expire(key, now, newkx)
return status

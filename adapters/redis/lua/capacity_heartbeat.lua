-- capacity_heartbeat.lua: apply a node's heartbeat.
-- KEYS: the node's hash.
-- ARGV: epoch, seq, running, max, usage ('cpu mem gpu hasgpu'), lifetime_ms,
--       now_ms ('' = TIME).
-- Returns status, then for a stale same-epoch heartbeat whose seq went
-- backwards 1 and the stored seq, else 0 and 0.
local now = clock(ARGV[7])
local key = KEYS[1]
local n = readnode(key, now, nil)
local e, s = tonumber(ARGV[1]), tonumber(ARGV[2])
if n.known then
  if e < n.epoch then
    purge(key, n)
    return {HB_STALE, 0, 0}
  end
  if e == n.epoch and s <= n.seq then
    purge(key, n)
    if s < n.seq then
      return {HB_STALE, 1, n.w[3]}
    end
    return {HB_STALE, 0, 0}
  end
end
-- A new boot drops every acked entry (whatever still runs is in running);
-- the same boot drops the entries the previous heartbeat covered, which
-- were tombstones for ACK retries during one interval.
local keep, same = 0, n.known and e == n.epoch
for x = 1, n.na do
  if same and n.aseq[x] > n.seq then
    keep = keep + 1
  else
    n.nd = n.nd + 1
    n.dead[n.nd] = n.afield[x]
  end
end
purge(key, n)
local hx = now + tonumber(ARGV[6])
local ax = n.ax
if keep > 0 and ax < hx then
  ax = hx
end
local newkx = lives(n, math.max(hx, ax))
redis.call('HSET', key, '', cmsgpack.pack(hx, ARGV[1], s, tonumber(ARGV[3]), now, tonumber(ARGV[4]), ax, newkx or n.kx, ARGV[5]))
expire(key, now, newkx)
return {HB_APPLIED, 0, 0}

-- lock_get.lua: plancore lock read, for a store that waits for its replicas.
-- KEYS[1]  the lock key
-- KEYS[2]  its epoch high-water mark
-- Returns {value or nil, epoch or nil}. A present value is written again as
-- it is (its server-side expiry kept), so that the WAIT which follows this
-- call covers it: the replication stream is applied in order, so once the
-- replicas have this write they have the value read. A holder that re-reads
-- after a write whose WAIT fell short is thus told it holds the lock only
-- once the replicas have it.
local v = redis.call('GET', KEYS[1])
local e = redis.call('GET', KEYS[2])
if v then
  redis.call('SET', KEYS[1], v, 'KEEPTTL')
end
return {v, e}

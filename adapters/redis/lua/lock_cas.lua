-- lock_cas.lua: plancore lock compare-and-swap (acquire and steal).
-- KEYS[1]  the lock key          plancore:lock:{<lock name>:<node>}
-- KEYS[2]  its epoch high-water  plancore:lock:{<lock name>:<node>}:epoch
-- ARGV[1]  "1" if the lock must hold ARGV[2], "0" if it must be absent
-- ARGV[2]  the observed raw value (ignored when ARGV[1] is "0")
-- ARGV[3]  the new raw value (the extended record)
-- ARGV[4]  the epoch high-water mark the write expects (decimal; "0" if none)
-- ARGV[5]  the new epoch (decimal), ARGV[4] + 1, computed by the client
-- ARGV[6]  server-side expiry in milliseconds, "0" for none
-- ARGV[7]  the change channel to publish KEYS[1] on
-- Returns 1 when written, 0 when the value differs, -1 when the epoch does.
-- Epochs are compared as strings: Lua numbers are doubles and would lose
-- uint64 precision.
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if cur ~= ARGV[2] then return 0 end
elseif cur then
  return 0
end
local high = redis.call('GET', KEYS[2]) or '0'
if high ~= ARGV[4] then return -1 end
if ARGV[6] ~= '0' then
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[6])
else
  redis.call('SET', KEYS[1], ARGV[3])
end
redis.call('SET', KEYS[2], ARGV[5])
redis.call('PUBLISH', ARGV[7], KEYS[1])
return 1

-- lock_cad.lua: plancore lock compare-and-delete (release).
-- KEYS[1]  the lock key
-- ARGV[1]  the observed raw value; the key is deleted only if it still holds it
-- ARGV[2]  the change channel to publish KEYS[1] on
-- The epoch key is never touched: a release does not lower the high-water mark.
-- Returns 1 when deleted, 0 when the value differs or is absent.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], KEYS[1])
return 1

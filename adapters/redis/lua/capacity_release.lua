-- capacity_release.lua: drop a pending lease; acked jobs leave only through
-- heartbeats. KEYS: the node's hash. ARGV: rid, now_ms ('' = TIME).
-- Returns 1 if a lease was dropped, else 0.
local now = clock(ARGV[2])
local key, rid = KEYS[1], ARGV[1]
local n = readnode(key, now, rid)
local h = n.held
if h and h > 0 then
  n.nd = n.nd + 1
  n.dead[n.nd] = rid
  purge(key, n)
  return 1
end
purge(key, n)
return 0

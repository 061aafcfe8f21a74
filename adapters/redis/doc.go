// Package redis holds plancore's Redis executors and stores, on
// github.com/redis/go-redis/v9 (imported here as goredis): the capacity slot
// store, the lock store and the vcluster flush/publish executor.
//
// Every multi-key operation is one Lua script, run with EVALSHA and reloaded on
// NOSCRIPT (goredis.Script.Run does both), so a restart of Redis costs one extra
// round trip, never a wrong answer. Keys of one node share a {n:<id>} hash tag
// so scripts stay single-slot on Redis Cluster. Time inside scripts is Redis's
// own TIME, never the client's clock. When Redis cannot be reached the stores
// fail closed: an error, never a "yes".
//
// Tests run against a real redis-server started on a free loopback port by
// package internal/redistest; none uses a mock.
package redis

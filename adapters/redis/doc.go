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
// # Deadlines
//
// With go-redis's default options a command ignores its context's deadline
// while Redis stalls (a long script, a fork, DEBUG SLEEP): it waits for the
// client's ReadTimeout, 3 s by default, however short the caller's deadline.
// Set ContextTimeoutEnabled in the client's options
// (goredis.Options, ClusterOptions, FailoverOptions, UniversalOptions), and a
// call returns when its context is done, with an error wrapping
// capacity.ErrStoreUnavailable: closed, never a lease. NewCapacityStore and
// NewLockStore refuse a *goredis.Client, *goredis.ClusterClient or
// *goredis.Ring without it (CheckDeadlines); another client type cannot be
// inspected and is trusted to honour contexts.
//
// # Compatibility
//
// The capacity store keeps each node in one hash, <prefix>{n:<id>}, since
// plancore's first release of this layout: the field named "" holds the node's
// state (heartbeat and bookkeeping) as nine MessagePack values, and every
// other field one reservation (a pending lease's expiry, or an acked job);
// lua/capacity_lib.lua describes it. Data written by the earlier layout
// (three keys per node, <prefix>{n:<id>}:hb, :pend and :acked) is neither
// read nor migrated: there were no users yet. A scheduler started on the
// new layout sees every node as unknown until its next heartbeat, which
// fails closed, and the old keys expire on their own. A state written as
// space-separated words (an unreleased revision of this layout) decodes
// as a heartbeat that lapsed in 1970, so such a node too reads as unknown
// until its next heartbeat.
//
// Tests run against a real redis-server started on a free loopback port by
// package internal/redistest; none uses a mock.
package redis

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
// # Failover
//
// Redis replicates asynchronously, so a failover loses the writes a replica
// had not received. By default the capacity store (Reserve, ReserveBatch,
// Ack) and the lock store (acquire, steal, release, and a Get that finds a
// lock) follow each such write with WAIT on the connection that wrote, in
// the same pipeline, and answer only once every replica the primary streams
// to (as ROLE lists them) has it; fewer in time is an error, an unknown
// outcome, never a grant. The lock's epoch high-water mark is written by the
// same script as the lock, so a promoted replica holds every epoch the store
// acknowledged and never issues one again. What each deployment gets:
//
//   - One primary without replicas: acknowledged grants survive everything
//     but the loss of its data (run it with persistence where lock epochs
//     must survive a restart). The store sends no WAIT and no ROLE per call;
//     it asks ROLE again at most once a second and after a failed call, so a
//     replica that attaches is waited for at most a second later (durability.go
//     says why that window is the price of a free call).
//   - A primary with replicas, Sentinel: acknowledged grants survive the
//     crash of the primary and the promotion of any replica connected when
//     they were made. Each call also sends ROLE, so a replica that attaches
//     while others are connected is waited for from the next call, and one
//     that leaves costs a call one WaitTimeout.
//   - Redis Cluster: the same per shard, each shard's calls waiting for that
//     shard's replicas, with ROLE on every call.
//   - AcceptLossOnFailover (any deployment): no WAIT; a failover can grant
//     the same slots twice and a lock to two holders with one epoch.
//
// WAIT cannot help when a replica is promoted while cut off from the
// primary (a partition, Sentinel split brain): ROLE no longer lists it, so it
// is not waited for. Setting WaitReplicas to the deployment's replica count
// makes the stores fail closed while one is away instead. Whatever the store
// says, a node never runs more than M jobs: capacity.NodeGate's hard limit
// refuses the surplus of a lost grant. Heartbeats and releases do not wait:
// losing one refuses a node until its next heartbeat, or counts a free slot.
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

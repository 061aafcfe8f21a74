// Package capacity dispatches jobs to worker nodes without overselling them:
// node selection with an explained exclusion breakdown, and slot reservation
// whose accounting never promises a node more than its M concurrent jobs, in
// one process (MemoryStore) or across scheduler instances sharing Redis (the
// store in github.com/plancore/plancore/adapters/redis).
//
// # Usage
//
// A scheduler reads the nodes' loads, selects, and reserves:
//
//	loads, err := store.Loads(ctx, nodeIDs)
//	sel, err := capacity.Decide(capacity.Input{Nodes: loads, Now: now}, capacity.Options{SpreadKey: jobID})
//	res, err := capacity.Dispatch(ctx, store, sel, rid, capacity.DispatchOptions{Clock: fixedClock(now)})
//	if res.Outcome == capacity.NoCapacity { requeue after res.RequeueAfter }
//	// send the job with res.Lease; on a send failure or NACK: store.Release.
//
// The node (NodeGate, or the fake.NodeAgent of package fake) accepts a dispatch
// under its own mutex, checks the epoch and its own hard limit running < M,
// takes a sequence number, commits the ACK to the store with store.Ack, and
// starts the job only if the answer's Start() is true. It sends heartbeats
// (epoch, seq, running, usage) sampled under the same mutex.
//
// Accounting: a node's effective load is
//
//	running_h + pending leases with expiry > now + acked jobs with seq > s_h
//
// where running_h and s_h come from the last applied heartbeat. A job is
// charged from its reservation until a heartbeat sampled after it started
// counts it, exactly once; pending leases lapse at their TTL (default 5 s),
// but acknowledged jobs never stop counting on a timer. With nothing pending
// and a heartbeat newer than the last ACK, the load equals running_h exactly.
//
// NodeLedger is the pure value core of one node's accounting (every method
// takes now and returns a new ledger); MemoryStore and the Redis store implement
// the same transitions and answer as it does, which the tests check.
//
// CheckLinearizable checks a recorded concurrent history of store calls
// against NodeLedger (any SlotStore implementation can be held to it), and
// CountingStore with Metrics counts the answers a scheduler should export
// (reserve_total, ack_total, excluded nodes by reason, dispatch attempts).
//
// # Determinism
//
// Nothing here reads the clock: Select, NodeLedger and NodeGate take now, and
// MemoryStore requires a Clock. Select sorts with explicit tie-breaks
// (utilisation by exact cross-multiplication, effective load, highest usage,
// an optional hash of SpreadKey and node id, node id), lists exclusions in
// input order, and never changes its input; the same input renders the same
// String() byte for byte.
//
// # Compatibility
//
// The seed scheduler computes effective = max(current_jobs, reserved_jobs)
// with the caller's own copy of current_jobs, releases the reservation on ACK,
// and expires leases on the scheduler's clock. That oversells:
//
//   - max undercounts by the smaller term: with M = 5 and a heartbeat saying 3
//     running, five reservations are admitted, 8 jobs on 5 slots;
//   - releasing on ACK charges the job nowhere until the next heartbeat counts
//     it (even summing leaks one slot per ACK for a heartbeat interval);
//   - a heartbeat must be ordered by the node's sampling (a sequence number),
//     never by arrival;
//   - a lease that lapses before a slow ACK hands its slot out twice unless the
//     node refuses to start a job whose lease lapsed (the fence);
//   - clients' clocks disagree, so the expiry must use the store's clock.
//
// Accounting SeedMax reproduces the seed's decisions for migration and shadow
// runs. It oversells and is never the default; even in that mode a store error
// stays an error (the seed's Redis wrapper maps errors to "full") and a
// repeated rid answers ReserveDuplicate without extending its lease (the seed
// moves it forward when there is room and refuses it on a full node). The
// seed's usage threshold (90 %, exactly 90 passes) and default M (4) and TTL
// (5 s) are kept; its threshold check after reserving moves into Select,
// before reserving.
package capacity

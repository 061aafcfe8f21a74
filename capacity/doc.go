// Package capacity dispatches jobs to worker nodes without overselling them:
// node selection with an explained exclusion breakdown, and slot reservation
// whose accounting never promises a node more than its M concurrent jobs, in
// one process (MemoryStore) or across scheduler instances sharing Redis (the
// store in github.com/plancore/plancore/adapters/redis).
//
// # Usage
//
// A scheduler reads the nodes' loads, decides, and reserves:
//
//	loads, err := store.Loads(ctx, nodeIDs)
//	plan, err := capacity.Decide(capacity.Input{Nodes: loads, Now: now, SpreadKey: jobID}, capacity.Options{})
//	res, err := capacity.Dispatch(ctx, store, plan, rid, capacity.DispatchOptions{})
//	if res.Verdict == capacity.NoCapacity { requeue after res.RequeueAfter }
//	// send the job with res.Lease; on a send failure or NACK: store.Release.
//
// Dispatcher is that loop, written once: Submit jobs, Run it (in a
// controller-runtime manager as manager.RunnableFunc(d.Run)), and give it
// the one step that is yours, Send:
//
//	d := &capacity.Dispatcher{Store: store, Nodes: capacity.StaticNodes("n1", "n2"),
//		Send: func(ctx context.Context, job capacity.Job, l capacity.Lease) error { return sendToNode(ctx, job, l) }}
//	_ = d.Submit(capacity.Job{ID: "job-1"})
//	err := d.Run(ctx) // until ctx ends; jobs not yet sent stay in d.Pending()
//
// It reads the loads, decides, reserves, sends, releases the lease of a
// failed send (and sends again under a new attempt rid), requeues a job that
// found no room at the dispatch's RequeueAfter, bounds the jobs in flight,
// joins every goroutine before Run returns, and reports each attempt to a
// DispatcherObserver (adapters/metrics implements one with Prometheus).
//
// Decide is the pure step: it ranks the nodes that qualify and lists every
// other one with a Reason (a ReasonCode such as CapacityExceeded or
// StaleHeartbeat, and the numbers), counted in a Breakdown. It refuses only a
// zero Now (Validate) and bad options (Options.Validate), each a
// *plancore.InvalidError naming every field; a bad node (an empty id, a
// negative count, a count above MaxCount, a repeated id) is an exclusion, so
// one node's bad heartbeat never blocks scheduling on the others. Dispatch
// is the shell that walks the plan through a SlotStore, the capacity core's
// Apply: it is not called Apply because the store, not the plan, is the
// decision point for a reservation (a reserve re-checks the node
// atomically). A nil store is an error wrapping ErrNilStore and
// ErrInvalidInput; its clock is a k8s.io/utils/clock.PassiveClock, the wall
// clock when nil.
//
// A node states its limit M once, in its heartbeat (Heartbeat.Max): the store
// keeps it, Loads reports it (or the store's Options.MaxJobs when the node
// states none), Decide reads it, and a reserve enforces it. A reservation
// whose Max differs from the M the node stated is refused
// (ReserveLimitMismatch), never granted under another limit; when the node
// states none, the reservation's Max (Dispatch passes the M Decide read) or
// Options.MaxJobs is the limit.
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
// takes now and returns a new ledger). It keeps now as its first parameter,
// unlike Decide's input, because it is a stateful helper called once per
// store event; a zero now is refused all the same. MemoryStore and the Redis
// store implement the same transitions and answer as it does, which the tests
// check.
//
// CheckLinearizable checks a recorded concurrent history of store calls
// against NodeLedger (any SlotStore implementation can be held to it), and
// CountingStore with Metrics counts the answers a scheduler should export
// (reserve_total, ack_total, excluded nodes by reason, dispatch attempts).
//
// # Obligations
//
//  1. Read the nodes' loads from the store the reservations go through
//     (SlotStore.Loads), with Now from the scheduler's clock.
//  2. Reserve through the store (Dispatch, or the Dispatcher), never on
//     Decide's word alone: the store's reserve is the decision point, so
//     several schedulers never oversell a node.
//  3. Send the job with its Lease; on a failed send or a NACK, Release the
//     lease at once.
//  4. The node ACKs with the lease's epoch and sequence; it keeps its own
//     hard limit (NodeGate), the backstop when a store lost a grant.
//  5. A NoCapacity outcome is a requeue after its RequeueAfter, never an
//     error; a store error is an unknown outcome: retry the same rid.
//
// # Determinism
//
// Nothing in the pure parts reads the clock: Decide takes Input.Now, and
// NodeLedger and NodeGate take now; MemoryStore and Dispatch read the
// clock.PassiveClock they are given, and Dispatcher the clock.Clock it is
// given (a fake.Clock in tests). Decide sorts with explicit tie-breaks
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
// Seed returns the options that reproduce the seed's decisions for migration
// and shadow runs: SeedMax accounting, ranking by jobs alone, a selection
// that ignores heartbeat age, and a zero or negative limit or TTL clamped to
// 1, as the seed's Redis wrapper does. It oversells and is never the default;
// even in that mode a store error
// stays an error (the seed's Redis wrapper maps errors to "full") and a
// repeated rid answers ReserveDuplicate without extending its lease (the seed
// moves it forward when there is room and refuses it on a full node). The
// seed's usage threshold (90 %, exactly 90 passes) and default M (4) and TTL
// (5 s) are kept; its threshold check after reserving moves into Decide,
// before reserving. Counts are range-checked where they enter (a heartbeat's
// Running and a reservation's Running at most MaxCount; a node's limit M, in
// Options.MaxJobs, a heartbeat's Max and a reservation's Max, at most
// MaxLimit, which bounds a store's state per node) and
// every sum of counts saturates, so a crafted heartbeat cannot wrap a node's
// load into room. The seed has no public issue tracker; its behaviour is
// described in these points instead.
package capacity

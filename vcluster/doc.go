// Package vcluster plans virtual cluster hierarchies in the style of Ray
// virtual clusters (Ant Group's ant-ray GCS): carving logical clusters out of
// a primary cluster of whole nodes, dividing job clusters out of divisible
// ones, resizing, removing, replenishing dead nodes, garbage-collecting
// finished job clusters, and repairing the hierarchy from stored records
// after a control-plane restart.
//
// The hierarchy has three levels. The primary cluster (PrimaryID) holds every
// node not handed to a logical cluster. A logical cluster is divisible (it
// lends nodes to job clusters and never schedules work) or indivisible (it
// schedules work). A job cluster, id parent + "##" + job, is divided from the
// primary or a logical divisible cluster for one job. Each cluster keeps its
// nodes in buckets per template (node type): Undivided, plus one bucket per
// job cluster in a divisible cluster. A job cluster's members are its
// parent's bucket of its name, so every node is in exactly one leaf bucket
// and V_divisible = V_undivided + Σ V_job holds by construction.
//
// # Usage
//
// Keep the current State; plan a change with one of the PlanX functions,
// each of the form PlanX(in XInput) (Plan, error) (PlanReplenish, the one
// planner with options, takes Options too); write the plan
// out through an Executor with Apply (package fake has an in-memory one,
// adapters/redis a Redis one); keep plan.After as the next state:
//
//	s, _ := vcluster.NewState(nodes)
//	plan, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{
//		State:    s,
//		Request:  vcluster.Request{ID: "serve", ReplicaSets: vcluster.ReplicaSet{"8c16g": 8}},
//		Revision: rev,
//	})
//	switch {
//	case err != nil: // invalid input: errors.Is(err, vcluster.ErrInvalidInput)
//	case plan.Refused(): // plan.Refusal.Reason, .Recommend, .FailedNodes
//	default:
//		_, err = vcluster.Apply(ctx, plan, exec) // flush, then publish
//		s = plan.After
//	}
//
// The operations are PlanCreateOrUpdate, PlanCreateJobCluster, PlanRemove,
// PlanRemoveNodes, PlanReplenish, PlanGC, PlanScale and PlanRecover. Every
// round (the anchor uses 30 s) the caller plans PlanReplenish and PlanGC
// the same way; PlanReplenish can be scoped to one cluster's subtree. After
// a restart, PlanRecover rebuilds the state from the node table and the
// stored records (in its plan's After) and says which records to rewrite.
// Node events (Join, SetNode, and SetNodes for many at once) and the
// caller's detached-object counts and job liveness (SetDetached, SetJobDead)
// return new states and write nothing. The node table (State.Nodes, a
// NodeTable) is a persistent map: a node event copies O(log n) of it, not
// the whole table, and the older State keeps its own view unchanged.
//
// Invalid input (the anchor's InvalidArgument and NotFound statuses) is an
// error: a *plancore.InvalidError wrapping ErrInvalidInput (and ErrNotFound
// when only missing clusters or nodes are at fault) that names every field
// path at fault with the anchor's message as detail. A call that is valid
// but cannot act now (the anchor's OutOfResource and UnsafeToRemove) is not
// an error: its plan is a Refusal with a Reason (the anchor's message byte
// for byte), the replica sets to recommend and the failed and busy nodes,
// and nothing moves (all-or-nothing). Every move carries a Reason too.
//
// Beyond the anchor, and off unless asked for: Limits (per-cluster bounds
// and the primary's MinFree/MaxFree reserve) on create and update,
// PlanScale for an autoscaler (demand clamped to bounds, planned best
// effort, with the nodes to Launch and the idle primary nodes to Release),
// swap and move budgets (Options.MaxSwaps, ScaleRequest.MaxMoves), BusyNodes
// on refused node removals, and Plan.Deltas for executors that publish
// deltas.
//
// # Obligations
//
//  1. Keep the current State, and plan every change from it (one planner
//     call per request or round).
//  2. Act on a refusal (retry with Refusal.Recommend, drain the busy
//     nodes) instead of applying it: Apply refuses it.
//  3. Write the plan out with Apply: each record is written BEFORE it is
//     published, job records before their parent's.
//  4. Keep Plan.After as the next State only once Apply succeeded; after a
//     failure, apply the same plan again (every call is idempotent).
//  5. After a restart, rebuild the State with PlanRecover from the node
//     table and the stored records, and apply its plan.
//
// # Determinism
//
// Every function is pure: no IO, no clock, no randomness, no goroutines, no
// package-level state, and no input is modified (maps and slices reachable
// from a State are shared between states and never written). Revisions come
// from the caller. Nodes are chosen by ascending id after an optional
// caller-given preference, never in map order, so equal inputs give
// deep-equal plans whose String renderings are equal byte for byte.
//
// # Compatibility
//
// Messages, status codes (as reason codes and invalid-input errors), the
// four replenishment scenarios, the flush and publish rules and the record
// layout follow ant-ray's virtual cluster manager. AntRay() sets its pacing.
// Where the anchor is nondeterministic or inconsistent, plancore differs,
// and the function comments say where:
//
//   - Nodes are picked in sorted order; the anchor uses hash order.
//   - A scale-down returns dead nodes first; the anchor may keep dead nodes
//     and hand back alive ones.
//   - One replenish plan heals every replaceable dead node; the anchor heals
//     one per template per cluster per round (AntRay() restores that).
//   - A job cluster healed from its parent updates the parent's bucket; the
//     anchor leaves the node owned twice.
//   - The primary's dead undivided nodes are purged from the model; the
//     anchor swaps them against the primary itself and its counts go stale.
//   - Failover repair takes repaired nodes out of the primary and flushes the
//     parent; the anchor leaves them in both and repeats the repair at every
//     restart.
//   - Logical ids containing "##" are refused; the anchor accepts them and
//     reloads them as job clusters after a restart.
//   - Remove-nodes (ant-ray #557, #599) ignores job buckets, bumps the
//     revision, and reports a missing cluster as not found; the anchor can
//     move a job's node out from under it, keeps the revision, and
//     dereferences null for a missing cluster.
//   - Revisions are stored and survive a restart; the anchor resets them to
//     the load time. Job churn never changes a parent's revision. A cluster
//     whose revision is already the largest uint64 is refused rather than
//     wrapped to 0.
//   - A job cluster request with a negative count or an empty job name is
//     invalid input; the anchor skips negative counts and accepts the name.
//   - Removing a job cluster that is in use is refused as unsafe to remove;
//     the anchor returns a generic invalid status.
//   - Replica counts above 2^31-1 are invalid input (the anchor's counts are
//     32-bit).
//   - Out of resource and unsafe to remove are plan outcomes, not errors,
//     and invalid input names every fault at once, not the first.
//   - Limits and PlanScale follow the autoscaling proposal of ant-ray #579.
package vcluster

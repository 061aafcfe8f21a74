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
// Keep the current State; plan a change, apply the plan to the state, and
// write the plan out through an Executor (package fake has an in-memory one,
// adapters/redis a Redis one):
//
//	s, _ := vcluster.NewState(nodes)
//	plan, err := vcluster.PlanCreateOrUpdate(s, vcluster.Request{
//		ID: "serve", ReplicaSets: vcluster.ReplicaSet{"8c16g": 8},
//	}, rev)
//	var e *vcluster.Error
//	if errors.As(err, &e) {
//		// e.Code, e.Message (the anchor's text), e.Recommend, e.FailedNodes
//	}
//	next, _ := s.Apply(plan)
//	_, err = vcluster.Apply(ctx, plan, next, exec) // flush, then publish
//	s = next
//
// Every round (the anchor uses 30 s) the caller plans PlanReplenish and
// PlanGC the same way. After a restart, PlanRecover rebuilds the state from
// the node table and the stored records and says which records to rewrite.
// Node events (Join, SetNode) and the caller's detached-object counts and job
// liveness (SetDetached, SetJobDead) return new states and write nothing.
//
// Beyond the anchor, and off unless asked for: Limits (per-cluster bounds
// and the primary's MinFree/MaxFree reserve) on create and update, PlanScale
// for an autoscaler (demand clamped to bounds, planned best effort, with the
// nodes to Launch and the idle primary nodes to Release), swap and move
// budgets (ReplenishOptions, ScaleRequest.MaxMoves), BusyNodes on refused
// node removals, and Plan.Deltas for executors that publish deltas.
//
// A refused call returns an *Error with one of the anchor's four codes
// (InvalidArgument, OutOfResource, UnsafeToRemove, NotFound), wrapping the
// matching sentinel (ErrInvalidArgument, ...), the anchor's message byte for
// byte, the field at fault, and the replica sets to recommend; the plan is
// empty then, so nothing moves (all-or-nothing).
//
// # Determinism
//
// Every function is pure: no IO, no clock, no randomness, no goroutines, no
// package-level state, and no input is modified (maps and slices reachable
// from a State are shared between states and never written). Revisions come
// from the caller. Nodes are chosen by ascending id after an optional
// caller-given preference, never in map order, so equal inputs give deep-equal
// plans whose String renderings are equal byte for byte.
//
// # Compatibility
//
// Messages, codes, the four replenishment scenarios, the flush and publish
// rules and the record layout follow the anchor. Where the anchor is
// nondeterministic or inconsistent, plancore differs, and the function
// comments say where: nodes are picked in sorted order (the anchor uses hash
// order); scale-down returns dead nodes first; one replenish plan heals every
// replaceable dead node (the anchor one per template per cluster per round);
// a job cluster healed from its parent updates the parent's bucket; failover
// repair takes repaired nodes out of the primary and flushes the parent;
// logical ids containing "##" are refused; remove-nodes ignores job buckets
// and bumps the revision; revisions are stored and survive a restart; job
// churn never changes a parent's revision.
package vcluster

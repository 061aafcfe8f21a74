// Package reconcile is KubeRay's RayCluster pod reconciliation (reconcilePods
// and reconcileMultiHostWorkerGroup, v1.7.0) as a pure function: one snapshot
// of a Ray-style cluster in, one plan of pod actions out.
//
// # Usage
//
// Build a Snapshot from the informer cache (the cluster object, its pods, the
// expectations verdict, the formation records, the clock), call Decide, and
// hand the plan to Apply with an Executor:
//
//	plan, err := reconcile.Decide(snap, reconcile.Options{OperatorVersion: "v1.7.0"})
//	if err != nil {
//		return err // malformed input only; wraps ErrInvalidCluster, ErrInvalidOptions, ...
//	}
//	report := reconcile.Apply(ctx, plan, exec, reconcile.ApplyOptions{Expectations: rec})
//	return ctrl.Result{RequeueAfter: plan.Outcome.RequeueAfter}, report.Err()
//
// The decision chain is KubeRay's (§2 of the spec): spec hash, suspend,
// Recreate upgrade, head pod, then worker groups in spec order. Every
// situation KubeRay answers with a requeue error is a plan outcome with
// KubeRay's exact message; Decide errors only on input from which no valid pod
// can be built. Plan.Explain renders the plan with a reason on every action.
//
// # Determinism
//
// Decide reads nothing but its arguments: no clock (Snapshot.Now), no random
// source, no environment variables or feature-gate registry (KubeRay reads
// ENABLE_RANDOM_POD_DELETE and its gates during the decision, D13). The same
// snapshot and options give a deep-equal plan and a byte-identical Explain
// text; the order of Snapshot.Pods does not matter, map iteration never
// reaches the output, and every tie is broken by name. Generated names —
// replica group names <group>-<5 chars> and, with NameModeDerived, pod names —
// are derived from Snapshot.Seed, the cluster UID, the group, the replica and
// host index, and an attempt counter that grows until the name collides with
// no pod in the snapshot. The snapshot is never written: templates are deep-
// copied into each created pod (KubeRay wrote defaults into its input, D1).
//
// # Compatibility
//
// With Options.Compat = AnchorV170() the plan reproduces KubeRay v1.7.0's
// decisions exactly, including its defects. By default plancore fixes them:
// terminating pods are not counted (D4), workersToDelete only deletes members
// of the group (D3), numOfHosts ≤ 0 means 1 (D2), surplus pods are ranked like
// ReplicaSet victims instead of taken in list order (D6), replica groups are
// ranked instead of chosen in map order (D7), unlabelled multi-host pods are
// handled as one legacy group (D8), a partially created replica group is
// completed instead of deleted and re-created in a loop (D9, #4540), and a
// requeue in one group no longer stalls the later groups (D11). Each fix has a
// switch in Compat. Where the anchor chose in list or map order, plancore
// chooses in name order in compat mode.
package reconcile

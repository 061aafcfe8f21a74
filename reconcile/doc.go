// Package reconcile is KubeRay's RayCluster pod reconciliation (reconcilePods
// and reconcileMultiHostWorkerGroup, v1.7.0) as a pure function: one snapshot
// of a Ray-style cluster in, one plan of pod actions out.
//
// # Usage
//
// Build a Snapshot from the informer cache (the cluster object, its pods, the
// expectations state, the formation records, the clock reading in Now), call
// Decide, and hand the plan to Apply with an Executor, or to an Applier that
// also keeps the plan's expectations in a Tracker:
//
//	plan, err := reconcile.Decide(snap, reconcile.Options{OperatorVersion: "v1.7.0"})
//	if err != nil {
//		return err // ErrInvalidInput or ErrInvalidOptions, naming every bad field
//	}
//	applier := reconcile.Applier{Expectations: tracker}
//	report, err := applier.Apply(ctx, plan, exec)
//	forming = reconcile.UpdateForming(forming, plan, report)
//	return ctrl.Result{RequeueAfter: plan.Verdict.RequeueAfter}, err
//
// Decide follows KubeRay's decision chain: spec hash, suspend, Recreate
// upgrade, head pod, then worker groups in spec order. Every situation
// KubeRay answers with a requeue error is a plan outcome with KubeRay's exact
// message and a RequeueAfter of 2s; Decide errors only on input it cannot
// plan, and refuses exactly what Snapshot.Validate refuses (a zero Now, pods
// listed twice, and Cluster.Validate's problems), all at once. Plan.Explain
// renders the plan with a reason on every action. KubeRayV170 returns the
// options that reproduce KubeRay v1.7.0 exactly.
//
// # Obligations
//
// The caller's part, in order, on every pass:
//
//  1. Read the cluster and its pods from the informer cache, never a fresh
//     List, and hand the expectations Tracker's Snapshot and the formation
//     records kept from the last pass with them: a cache that lags is what
//     the expectations are for.
//  2. Refuse nothing yourself: Decide names every invalid field
//     (ErrInvalidInput) and such an object is not retried
//     (adapters/kube.TerminalIfInvalid), since only a new spec changes it.
//  3. Apply the plan through an Applier holding the same Tracker, so each
//     create or delete is recorded BEFORE its call; an executor of your own
//     keeps Plan's order and concurrency rules (Plan.Runs).
//  4. Keep Report's formation records (UpdateForming) for the next pass.
//  5. Compute Status from the same snapshot and the report, and write it
//     BEFORE the next pass when Verdict.AwaitsStatus: the suspend and resume
//     steps wait on the conditions it sets.
//  6. Return Verdict.RequeueAfter as the wake-up, and Apply's error as the
//     error (a failed call is retried on the next pass, never patched).
//
// # Steps
//
// Decide reads as a sequence of named steps, each a function in the file
// named after it:
//
//  1. validate the snapshot and options (validate.go, controller_rules.go:
//     KubeRay's own checks before it reconciles pods);
//  2. checkExpectations settles the in-flight creates and deletes, and
//     bucket sorts the snapshot's pods by group in one pass (bucket.go);
//  3. suspend and recreate, the cluster-wide stages that delete every pod
//     (suspend.go);
//  4. head: one head pod, created, restarted or waited for (head.go);
//  5. group, for each worker group in spec order (groups.go, which also
//     computes each group's desired pods): singleHost for one pod per
//     replica, in KubeRay's order deleteUnhealthyWorkers, workersToDelete,
//     then scaleUp or scaleDown (singlehost.go); multiHost for replica
//     groups of numOfHosts pods (multihost.go);
//  6. name gives every created pod its GenerateName or derived name
//     (names.go), and victims ranks scale-down victims (victims.go);
//  7. finish totals the counters and sets the wake-up (decide.go).
//
// # In and out of the API
//
// DecodeRayCluster reads a ray.io/v1 RayCluster (YAML or JSON) into the
// Cluster Decide plans for and the status the object holds, refusing every
// field KubeRay v1.7 does not define, every duplicate key and every
// wrong-typed value with its path, at a cost bounded by MaxRayClusterBytes
// and MaxRayClusterValues (an alias bomb, or a document of a million tiny
// values, is refused before it is parsed or expanded). After Apply, Status
// computes the pods part of the object's new status the way KubeRay's
// calculateStatus does (worker counts, desired resources, state, and the
// HeadPodReady, RayClusterProvisioned, suspend and ReplicaFailure
// conditions), with every time taken from Snapshot.Now, for the controller to
// write with a status patch:
//
//	st, err := reconcile.Status(reconcile.StatusInput{Snapshot: snap, Previous: current, Report: &report}, opts)
//
// # Determinism
//
// Decide reads nothing but its arguments: no clock (Snapshot.Now), no random
// source, no environment variables or feature-gate registry (KubeRay reads
// ENABLE_RANDOM_POD_DELETE and its gates during the decision; here they are
// Options). The same snapshot and options give a deep-equal plan and a
// byte-identical Explain text; the order of Snapshot.Pods does not matter, map
// iteration never reaches the output, and every tie is broken by name.
// Generated names (replica group names <group>-<5 chars> and, with
// NameModeDerived, pod names) are derived from Snapshot.Seed, the cluster UID,
// the group, the replica and host index, and an attempt counter that grows
// until the name collides with no pod in the snapshot. The snapshot is never
// written: templates are deep-copied into each created pod (KubeRay wrote
// defaults into its input).
//
// # Compatibility
//
// With KubeRayV170() the plan reproduces KubeRay v1.7.0's decisions exactly,
// including its defects, and creates every missing pod in one pass. By
// default plancore differs from it deliberately, each difference with a switch
// in Compat:
//
//   - terminating pods are not counted, health-checked, deleted again or
//     picked as victims, so a pod stuck terminating no longer blocks its
//     replacement (KubeRay #4078, #1936);
//   - workersToDelete only deletes pods of the listing group, never a pod of
//     another group or cluster by name (KubeRay #733, #3738);
//   - numOfHosts 0 means 1, as the CRD's default does, where KubeRay's guard
//     is dead code and 0 gives no pods (KubeRay #2084);
//   - surplus pods are ranked like ReplicaSet victims (Kubernetes'
//     ActivePods: unscheduled, pending, not ready, lower deletion cost, ready
//     for less time, more restarts, newer first; a zero ready or creation time
//     counts as the newest) instead of taken in list order (KubeRay #747);
//   - replica groups are ranked instead of chosen in Go map order;
//   - unlabelled multi-host pods left from before the indexing gate are
//     handled as one legacy group instead of being ignored while new groups
//     pile on top of them;
//   - a partially created replica group is completed, with a backoff and a
//     formation timeout, instead of being deleted and re-created in a loop
//     (KubeRay #4540);
//   - a requeue in one worker group no longer stalls the later groups;
//   - pods controlled by another incarnation of the cluster (another UID) are
//     ignored;
//   - a group creates at most BurstReplicas (500) pods per pass, like the
//     ReplicaSet controller's burst, where KubeRay has no cap;
//   - replicas × numOfHosts past MaxInt32 is refused, where KubeRay
//     multiplies in int32 and wraps.
//   - a DeleteAllOf (suspend, Recreate) records a delete expectation for each
//     pod it removes and waits for the informer to show them gone, where
//     KubeRay sends it again on every pass while its informer lags; a
//     suspending cluster turns Suspended only once no create or delete it
//     sent is in flight (KubeRay can leave a head it created a moment before
//     running);
//   - a plan that waits on the caller's own status write (suspend, resume)
//     or on pods to go (Recreate) carries a wake-up (Verdict.AwaitsStatus,
//     RequeueAfter), so a loop that no watch event drives does not stall.
//
// Decide refuses, as invalid input, every spec KubeRay v1.7's RayCluster
// controller refuses before it reconciles pods (its ValidateRayClusterMetadata,
// ValidateRayClusterSpec, ValidateRayClusterUpgradeOptions and
// ValidateRayClusterStatus): minReplicas and maxReplicas required without
// autoscaling, min ≤ max, no group suspend with autoscaling, a DNS-1035 name
// of at most 53 characters, and the resource, label, fault tolerance and
// autoscaler v2 rules; KubeRay reports the first and plans nothing, Decide
// names them all. KubeRay's default feature gates refuse networkPolicy,
// tlsOptions and historyServerOptions; so does Decide, unless
// Options.Gates turns the gate on (their contents are then not checked:
// KubeRay's validateNetworkPolicy, validateTLSOptions and the collector
// checks are not modelled, nor the GCS storage backend's rules). A
// suspended worker group needs RayJobDeletionPolicy, on by default in v1.7,
// which plancore assumes.
package reconcile

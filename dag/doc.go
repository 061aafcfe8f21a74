// Package dag plans workflows of jobs: the JobFlow controller of Volcano
// (flow.volcano.sh/v1alpha1), as a pure decision function, with the
// dependency forms, retries, parallelism, failFast and finally flows of Argo
// Workflows and Tekton Pipelines.
//
// A workflow is a list of flows; each flow's job is created from the
// template of the same name, named <workflow>-<flow>, once the flow's
// dependencies are satisfied. Plan reads a Snapshot (the workflow with its
// previous status, the observed jobs and the current time) and returns a
// Result: the jobs to create and delete, the complete new status (phase,
// per-phase lists, conditions, job status list with running histories),
// why every waiting flow waits, and when to plan again. It never does IO;
// an executor materialises the jobs from their (opaque) templates and Apply
// walks the plan through it.
//
// # Usage
//
//	res, err := dag.Decide(dag.Snapshot{Flow: wf, Jobs: observed, Now: now}, dag.Default())
//	if err != nil { ... }                // unusable input only (e.g. an unknown phase)
//	report, err := dag.Apply(ctx, res, executor)
//	// requeue after res.RequeueAfter (0: wait for the next event)
//
// Validate (or Check, which returns one error wrapping ErrInvalidSpec)
// reports every problem of a spec at once: empty and duplicate names, unknown
// targets, cycles with the flows on them, job names and label values over 63
// characters, malformed depends expressions with their byte offset, and more.
// ValidateUpdate and ValidateVolcano serve admission webhooks. RenderMermaid
// and RenderDOT draw the graph with the state of every flow.
//
// Dependencies take three forms: targets (each must succeed), targetsWithStatus
// (each must reach a result: Succeeded, Failed, Omitted, Done or Started),
// or an Argo-like depends expression with !, && and ||, evaluated in Kleene
// three-valued logic: true creates the job, false omits the flow (propagated
// through the graph in one call), undecided waits. A probe (dependsOn.probe)
// turns targets into readiness dependencies: each target's job must exist
// and every probe entry pass, a task count the core reads from the job or
// an httpGet/tcpSocket check the executor runs and reports in
// Snapshot.ProbeResults; Blocked names each pending entry and RequeueAfter
// stays within the probe's period.
//
// # Determinism
//
// Plan is a pure function of its input: it reads no clock (Snapshot.Now is the
// only time), draws no randomness, starts no goroutine and never mutates its
// input; every slice of the previous status that changes is copied first.
// Output order is fixed: flows in spec order (main flows, then finally flows),
// then jobs that belong to no flow, by name; issues by (flow, kind, target).
// Permuting Snapshot.Jobs changes nothing. Equal snapshots give equal results,
// byte for byte in Result.String.
//
// # Compatibility
//
// VolcanoCompat reproduces the decisions of Volcano's JobFlow controller at
// commit ed72c7c exactly (one dependency wave per sync, count-based success
// that takes two syncs, six status lists, running histories with their
// quirks, the Pending/Running/Succeed/Failed table, retention one sync after
// success), except that lists come out in spec order rather than informer
// order. Default (the zero Options) fixes the anchor's defects: it validates
// every plan in O(V+E), decides success from the set of flow
// outcomes in one step, buckets every job in exactly one list,
// fails on Aborted jobs, merges status in linear time, keeps no
// stale entries, reports the status size and spec edits,
// writes the status only when it changed and never creates in a terminal
// phase, and refuses to adopt another workflow's same-named job.
// Every knob can be set on its own; see Options.
package dag

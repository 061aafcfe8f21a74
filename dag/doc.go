// Package dag plans workflows of jobs: the JobFlow controller of Volcano
// (flow.volcano.sh/v1alpha1), as a pure decision function, with the
// dependency forms, retries, parallelism, failFast and finally flows of Argo
// Workflows and Tekton Pipelines.
//
// A workflow is a list of flows; each flow's job is created from the
// template of the same name, named <workflow>-<flow>, once the flow's
// dependencies are satisfied. Decide reads a Snapshot (the workflow with its
// previous status, the observed jobs and the current time) and returns a
// Plan: the jobs to create and delete, each with its Reason, the complete new
// status (phase, per-phase lists, conditions, job status list with running
// histories), why every waiting flow waits, and when to plan again. It never
// does IO; an executor materialises the jobs from their (opaque) templates
// and Apply walks the plan through it.
//
// # Usage
//
//	plan, err := dag.Decide(dag.Snapshot{Flow: wf, Jobs: observed, Now: now}, dag.Options{})
//	if err != nil { ... }                 // ErrInvalidInput or ErrInvalidOptions, every field named
//	report, err := dag.Apply(ctx, plan, executor)
//	// requeue after plan.RequeueAfter (0: wait for the next event)
//
// Decide refuses exactly what Options.Validate and Snapshot.Validate refuse
// (there is no dag.Validate: a spec is checked by Lint and Check): a zero
// Now, a workflow without a uid (its jobs' owner reference needs it), a
// previous phase that is no workflow phase, observed jobs with an empty or
// repeated name, a negative running duration; the error is a *plancore.InvalidError wrapping
// ErrInvalidInput that lists every problem with its field path (now,
// flow.status.state.phase, jobs[3].name). An invalid spec is not an input
// error but a plan outcome (Default fails the workflow with reason
// InvalidSpec), because it is a fact about the object the controller must
// report on it. Check refuses such a spec at admission, every problem at once
// (spec.flows[2].dependsOn.targets[1]), each field.Error's Detail starting
// with the issue kind (Cycle, UnknownTarget, DuplicateFlow, ...; a cycle's
// Detail carries its witness path); Lint returns the same findings, warnings
// included, as typed Issues. ValidateUpdate and ValidateVolcano serve
// admission webhooks. RenderMermaid and RenderDOT draw the graph with the
// state of every flow. DecodeJobFlow reads a whole JobFlow object (YAML or
// JSON, Volcano's field names, plancore's extensions named plancore<Field>)
// and refuses unknown fields, duplicate keys and wrong-typed values by path,
// all at once, at a cost bounded by MaxJobFlowBytes and MaxJobFlowValues
// (an alias bomb, or a document of a million tiny values, is refused
// before it is parsed or expanded); EncodeJobFlow writes one back. A flow on
// a cycle waits with a Cycle reason pointing at the cycle's one issue, which
// lists the cycle.
//
// Every waiting flow's Reason and every action's Reason carries a ReasonCode
// (Dependency, Backoff, Parallelism, Probe, ...; DependenciesMet, Retry,
// Finally, Retention, Recreate), the facts as typed fields (a dependency's
// Target, Result and State, a backoff's Until, parallelism's Active and
// Limit, a probe's ProbeFacts, ...) and a message for people rendered from
// them, which programs never need to read. The plan's
// RequeueAfter is the one wake-up hint, relative to Snapshot.Now; the status
// field nextRetryAt stays, because it is the workflow's wire status.
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
// # Obligations
//
//  1. Read the workflow and the jobs it owns from the cache; pass the
//     status the object holds now (Snapshot.Flow.Status), the probe results
//     the executor measured since the last pass, and Now.
//  2. Apply the plan: create every CreateJob from a DEEP COPY of its
//     template with the patch merged (dag/patch.Merge), "already exists"
//     counting as created, and delete with the UID precondition.
//  3. Write Plan.Status as the complete new status (never a diff), when
//     Plan.WriteStatus says so.
//  4. Requeue after Plan.RequeueAfter (backoff, probes, retention); zero
//     means the next event.
//  5. Run Check at admission so an invalid spec never reaches the
//     controller; if one does, the plan fails the workflow with
//     InvalidSpec rather than erroring.
//
// # Determinism
//
// Decide is a pure function of its input: it reads no clock (Snapshot.Now is
// the only time), draws no randomness, starts no goroutine and never mutates
// its input; every slice of the previous status that changes is copied first.
// Output order is fixed: flows in spec order (main flows, then finally flows),
// then jobs that belong to no flow, by name; issues by (flow, kind, target).
// Permuting Snapshot.Jobs changes nothing. Equal snapshots give equal plans,
// byte for byte in Plan.String. Backoff waits saturate at the largest
// time.Duration: a huge duration or factor waits about 292 years, never a
// wrapped, negative time.
//
// # Compatibility
//
// VolcanoCompat reproduces the decisions of Volcano's JobFlow controller at
// commit ed72c7c exactly (one dependency wave per sync, count-based success
// that takes two syncs, six status lists, running histories with their
// quirks, the Pending/Running/Succeed/Failed table, retention one sync after
// success), except that lists come out in spec order rather than informer
// order. Default (the zero Options) differs from the anchor on purpose, each
// difference a knob of Options that VolcanoCompat sets back:
//
//   - it validates every plan (SkipValidation): the anchor never validates,
//     so cycles and unknown targets wait forever and duplicate flow names are
//     accepted (Volcano #5868); names follow the API server's rules (a
//     flow name is a DNS-1123 label and so is <workflow>-<flow>, the Job's
//     name), where the anchor checks none and its Job create is refused;
//   - it validates in O(V+E), where the anchor's admission check enumerates
//     every path (27 dense flows take 11.1 s, past the webhook timeout);
//   - it decides success from the set of flow outcomes, in one step, by
//     Argo's leaf rule: only main flows no main flow refers to decide, an
//     omitted one by the failure it inherits (SuccessRule, StateMachine),
//     where the anchor counts completed jobs, so
//     duplicates, extra labelled jobs and zero flows get stuck, and never goes
//     from Pending to Succeed directly;
//   - it buckets every job in exactly one status list (Buckets): the anchor
//     lists Completing and Terminating jobs nowhere;
//   - it treats an Aborted job as a failure (AbortedPolicy): in the anchor a
//     Running workflow with an Aborted job stays Running forever;
//   - it merges the status in linear time and keeps no entries of vanished
//     jobs (KeepStaleEntries, HistoryQuirk);
//   - it reports the status size (StatusSizeWarn, HistoryLimit), since the
//     anchor's ~766 bytes per job reach etcd's limit near 2,000 jobs;
//   - it reports a spec edited mid-run (SpecChange), which the anchor accepts
//     and acts on silently at the next job event (Volcano #5705, #5723);
//   - it writes the status only when it changed and never creates in a
//     terminal phase (AlwaysWrite, CreateInTerminal);
//   - it refuses to adopt another workflow's same-named job
//     (SkipNameConflictCheck).
//
// Retries with backoff (asked for in Volcano #3838), parallelism, finally
// flows, depends expressions and probes (Volcano #2135) exist only in
// Default; VolcanoCompat ignores a probe, as the anchor does.
//
// A flow's patch is Volcano's Patch type, {"jobSpec": {...}} merged into
// the JobTemplate's spec, as volcano-sh/volcano#4491 implements the
// override (the released controller copies the template as is, so
// VolcanoCompat carries no patch). Volcano's design documents write it as
// {"spec": {...}}; plancore reads that as the same override, but an API
// server with Volcano's CRD prunes it: write jobSpec.
package dag

package dag

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore"
)

// Plan is one decision: what to create and delete, the complete new status and
// why flows wait. Apply walks it in its documented order; the caller never
// patches it, it re-plans from the next snapshot.
type Plan struct {
	// Namespace, Name and UID identify the workflow, for the status write.
	Namespace string
	Name      string
	UID       types.UID
	// Create lists the jobs to create, in spec order. The executor MUST
	// materialise each from a deep copy of its template, never touching a
	// cached object, and treat "already exists" as created.
	Create []CreateJob
	// Delete lists the jobs to delete, in spec order then by name. The
	// executor MUST use the UID as a precondition when it is set.
	Delete []DeleteJob
	// Status is the complete new status (never a diff).
	Status Status
	// WriteStatus says whether Status must be written; it is written only
	// AFTER every create and delete succeeded.
	WriteStatus bool
	// StrictDelete is set by the Volcano state machine: a retention delete
	// that finds no job aborts the rest, as in the anchor.
	StrictDelete bool
	// RequeueAfter is 0 or the time after which the plan can change without
	// a new event (the end of a backoff).
	RequeueAfter time.Duration
	// Transitions lists phase changes, for metrics and events; an executor
	// counts volcano_jobflow_{succeed,failed}_phase_count once per entry
	// into Succeed or Failed.
	Transitions []Transition
	// Blocked lists every waiting flow with its reasons, flows in spec
	// order, reasons in declaration order.
	Blocked []Blocked
	// Issues are validation findings, name conflicts, orphan jobs, unknown
	// job phases and size warnings.
	Issues []Issue
	// StatusBytes is the exact length of json.Marshal(Status).
	StatusBytes int
}

// CreateJob is one job to create.
type CreateJob struct {
	Flow      string
	Name      string
	Namespace string
	// Template names the job template: the flow's name in the workflow's
	// namespace.
	Template    TemplateRef
	Labels      map[string]string
	Annotations map[string]string
	Owner       metav1.OwnerReference
	// Patch is the merge patch of the whole job template that the flow's
	// patch gives: its jobSpec under spec, {"spec": {...}} (Default only;
	// Volcano copies the template as is). The executor merges it into a
	// copy of the template; package dag/patch implements the merge rules on
	// generic JSON (patch.Merge).
	Patch json.RawMessage
	// Attempt is 1 for the first run of the flow, n+1 for its n-th retry.
	Attempt int
	Finally bool
	// Reason says why the job is created: DependenciesMet, Retry, Finally
	// or Recreate.
	Reason Reason
}

// TemplateRef names a job template.
type TemplateRef struct {
	Namespace string
	Name      string
}

// DeleteJob is one job to delete.
type DeleteJob struct {
	// Flow is the job's flow, empty for a labelled job of no current flow.
	Flow      string
	Name      string
	Namespace string
	UID       types.UID
	// Reason says why: Code is ReasonRetention or ReasonRetry.
	Reason Reason
}

// Transition is one workflow phase change.
type Transition struct {
	From, To Phase
}

// ReasonCode names why an action is planned or why a flow waits. The codes
// are part of the API: match on them, never on Message.
type ReasonCode string

// Reason codes of waiting flows (Plan.Blocked).
const (
	// ReasonDependency: a dependency is not decided yet.
	ReasonDependency ReasonCode = "Dependency"
	// ReasonBackoff: a failed flow waits out its retry backoff.
	ReasonBackoff ReasonCode = "Backoff"
	// ReasonParallelism: the workflow's parallelism limit is reached.
	ReasonParallelism ReasonCode = "Parallelism"
	// ReasonMainNotFinal: a finally flow waits for the main flows.
	ReasonMainNotFinal ReasonCode = "MainNotFinal"
	// ReasonNameConflict: another workflow's job holds the flow's job name.
	ReasonNameConflict ReasonCode = "NameConflict"
	// ReasonRetrying: the previous attempt's job is still going away.
	ReasonRetrying ReasonCode = "Retrying"
	// ReasonInvalidSpec: the workflow spec is invalid (also the status
	// reason of a workflow failed for it).
	ReasonInvalidSpec ReasonCode = "InvalidSpec"
	// ReasonCycle: the flow is on a dependency cycle.
	ReasonCycle ReasonCode = "Cycle"
	// ReasonUnknownTarget: the flow depends on a flow that does not exist.
	ReasonUnknownTarget ReasonCode = "UnknownTarget"
	// ReasonProbe: a probe entry is not passing yet (no result, failed,
	// stale, or a task count below its minimum).
	ReasonProbe ReasonCode = "Probe"
)

// Reason codes of actions (Plan.Create and Plan.Delete).
const (
	// ReasonDependenciesMet: the flow's condition holds, its job is created.
	ReasonDependenciesMet ReasonCode = "DependenciesMet"
	// ReasonRetry: a job deleted, or created again, for a flow's retry.
	ReasonRetry ReasonCode = "Retry"
	// ReasonFinally: a finally flow's job, created once the main part is final.
	ReasonFinally ReasonCode = "Finally"
	// ReasonRetention: a job deleted because the workflow succeeded under the
	// delete retain policy.
	ReasonRetention ReasonCode = "Retention"
	// ReasonRecreate: a job removed after success re-created under retain
	// (VolcanoCompat's CreateInTerminal).
	ReasonRecreate ReasonCode = "Recreate"
)

// Reason says why: Code for programs, the facts as typed fields for
// programs too, and Message (one line) for people. Message is rendered from
// Code and Facts (render, the one place), so a program reads the facts and
// never parses Message.
type Reason = plancore.Reason[ReasonCode, ReasonFacts]

// ReasonFacts are the facts a Reason states. Which of them a reason sets
// depends on its Code, as each field says; the others are zero.
type ReasonFacts struct {

	// Flow is the flow an action is for: DependenciesMet, Retry.
	Flow string `json:"flow,omitempty"`
	// Target is the flow waited on (Dependency, Probe), or the name no
	// flow carries (UnknownTarget).
	Target string `json:"target,omitempty"`
	// Result is the result of Target a Dependency waits for (Succeeded,
	// Failed, Omitted, Done, Started, ...); empty in VolcanoCompat, where a
	// target's job must be Completed.
	Result string `json:"result,omitempty"`
	// State is a Dependency's target state: NotCreated, its job's phase
	// ("" as Pending) or, once final, its outcome.
	State string `json:"state,omitempty"`
	// Until is when a Backoff ends: the flow is retried by the first plan
	// at or after it.
	Until time.Time `json:"until,omitzero"`
	// Active and Limit are Parallelism's active jobs and the workflow's
	// parallelism.
	Active int `json:"active,omitempty"`
	Limit  int `json:"limit,omitempty"`
	// Count is MainNotFinal's number of main flows not final yet, and
	// Cycle's number of flows on the cycle (0 in VolcanoCompat, which only
	// knows the flow is on one).
	Count int `json:"count,omitempty"`
	// Field is the spec field of the issue a Cycle (the dependsOn of the
	// cycle's first flow) or an UnknownTarget (the reference) comes from.
	Field string `json:"field,omitempty"`
	// Job is the job a NameConflict, Retrying, Recreate or Probe reason is
	// about.
	Job string `json:"job,omitempty"`
	// Owner is the createdByJobFlow label of a NameConflict's job: the
	// workflow that holds the name.
	Owner string `json:"owner,omitempty"`
	// Attempt is a Retry create's attempt (2 for the first retry); 0 on a
	// Retry delete.
	Attempt int `json:"attempt,omitempty"`
	// Outcome is a Finally create's main-part outcome (Succeeded or
	// Failed), and a Probe's target outcome when its state is TargetEnded.
	Outcome string `json:"outcome,omitempty"`
	// Probe is the probe entry a Probe reason is about and what it saw, or
	// the entry without a target an InvalidSpec reason is about (Kind and
	// Entry only); nil for other reasons, which keeps a Reason small.
	Probe *ProbeFacts `json:"probe,omitempty"`
}

// ProbeFacts is a probe entry and what it saw, in a Reason.
type ProbeFacts struct {
	// Kind (httpGet, tcpSocket, taskStatus) and Entry name the entry.
	Kind  string `json:"kind"`
	Entry int    `json:"entry"`
	// State is what the entry saw.
	State ProbeState `json:"state,omitempty"`
	// At is the time of a stale or failed result.
	At time.Time `json:"at,omitzero"`
	// Task, TaskPhase, Tasks and MinTasks are a taskStatus entry below its
	// minimum: Tasks of task Task are in TaskPhase, MinTasks are needed.
	Task      string `json:"task,omitempty"`
	TaskPhase string `json:"taskPhase,omitempty"`
	Tasks     int    `json:"tasks,omitempty"`
	MinTasks  int    `json:"minTasks,omitempty"`
}

// ProbeState is what a probe entry saw, in a Probe reason.
type ProbeState string

// Probe states.
const (
	// ProbeNoResult: the executor reported no result for the entry.
	ProbeNoResult ProbeState = "NoResult"
	// ProbeStale: the latest result (at At) is older than the probe TTL.
	ProbeStale ProbeState = "Stale"
	// ProbeFailed: the latest result (at At) failed.
	ProbeFailed ProbeState = "Failed"
	// ProbeBelowMinimum: fewer tasks than MinTasks are in TaskPhase.
	ProbeBelowMinimum ProbeState = "BelowMinimum"
)

// rendered returns r with its Message rendered from its fields.
func rendered(r Reason) Reason {
	r.Message = render(r)
	return r
}

// render is the one place a reason's message is written, from its code and
// fields.
func render(r Reason) string {
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch r.Code {
	case ReasonDependency:
		target := r.Facts.Target
		if r.Facts.Result != "" {
			target += "." + r.Facts.Result
		}
		return fmt.Sprintf("%s is %s", target, r.Facts.State)
	case ReasonBackoff:
		return "until " + rfc(r.Facts.Until)
	case ReasonParallelism:
		return fmt.Sprintf("%d/%d active", r.Facts.Active, r.Facts.Limit)
	case ReasonMainNotFinal:
		return fmt.Sprintf("%d main flows not final", r.Facts.Count)
	case ReasonNameConflict:
		return fmt.Sprintf("%s owned by %q", r.Facts.Job, r.Facts.Owner)
	case ReasonRetrying:
		return "waiting for " + r.Facts.Job + " to go"
	case ReasonProbe:
		pf := probeOf(r)
		return fmt.Sprintf("%s[%d] on %s: %s", r.Facts.Target, pf.Entry, r.Facts.Job, pf.text(rfc))
	case ReasonInvalidSpec:
		if r.Facts.Probe != nil {
			return fmt.Sprintf("probe entry %d has no target", r.Facts.Probe.Entry)
		}
		return "the workflow spec is invalid"
	case ReasonCycle:
		if r.Facts.Count > 0 {
			return fmt.Sprintf("on the %d-flow cycle of %s", r.Facts.Count, r.Facts.Field)
		}
		return "flow is on a dependency cycle"
	case ReasonUnknownTarget:
		return fmt.Sprintf("no flow named %q", r.Facts.Target)
	case ReasonDependenciesMet:
		return "the dependencies of flow " + r.Facts.Flow + " are satisfied"
	case ReasonFinally:
		return "the main flows are final (" + r.Facts.Outcome + ")"
	case ReasonRetry:
		if r.Facts.Attempt > 0 {
			return fmt.Sprintf("attempt %d of flow %s", r.Facts.Attempt, r.Facts.Flow)
		}
		return "flow " + r.Facts.Flow + " failed and is retried"
	case ReasonRetention:
		return "the workflow succeeded and its retain policy is delete"
	case ReasonRecreate:
		return "job " + r.Facts.Job + " was removed after success under the retain policy"
	}
	return string(r.Code)
}

func probeOf(r Reason) ProbeFacts {
	if r.Facts.Probe == nil {
		return ProbeFacts{}
	}
	return *r.Facts.Probe
}

// text says what a probe entry saw.
func (pf ProbeFacts) text(rfc func(time.Time) string) string {
	switch pf.State {
	case ProbeNoResult:
		return pf.Kind + " no result"
	case ProbeStale:
		return pf.Kind + " result from " + rfc(pf.At) + " is stale"
	case ProbeFailed:
		return pf.Kind + " failed at " + rfc(pf.At)
	case ProbeBelowMinimum:
		return fmt.Sprintf("task %s %s %d/%d", pf.Task, pf.TaskPhase, pf.Tasks, pf.MinTasks)
	}
	return string(pf.State)
}

func dependencyReason(target, result, state string) Reason {
	return rendered(Reason{Code: ReasonDependency, Facts: ReasonFacts{Target: target, Result: result, State: state}})
}

func backoffReason(until time.Time) Reason {
	return rendered(Reason{Code: ReasonBackoff, Facts: ReasonFacts{Until: until}})
}

func parallelismReason(active, limit int) Reason {
	return rendered(Reason{Code: ReasonParallelism, Facts: ReasonFacts{Active: active, Limit: limit}})
}

func mainNotFinalReason(count int) Reason {
	return rendered(Reason{Code: ReasonMainNotFinal, Facts: ReasonFacts{Count: count}})
}

func nameConflictReason(job, owner string) Reason {
	return rendered(Reason{Code: ReasonNameConflict, Facts: ReasonFacts{Job: job, Owner: owner}})
}

func retryingReason(job string) Reason {
	return rendered(Reason{Code: ReasonRetrying, Facts: ReasonFacts{Job: job}})
}

// probeReason is a Probe reason for what entry seen saw on target's job.
func probeReason(seen ProbeFacts, target, job string) Reason {
	return rendered(Reason{Code: ReasonProbe, Facts: ReasonFacts{Target: target, Job: job, Probe: &seen}})
}

func invalidSpecReason() Reason { return rendered(Reason{Code: ReasonInvalidSpec}) }

func probeWithoutTargetReason(kind string, entry int) Reason {
	return rendered(Reason{Code: ReasonInvalidSpec, Facts: ReasonFacts{Probe: &ProbeFacts{Kind: kind, Entry: entry}}})
}

// cycleReason: count 0 when the flow is only known to be on a cycle.
func cycleReason(count int, field string) Reason {
	return rendered(Reason{Code: ReasonCycle, Facts: ReasonFacts{Count: count, Field: field}})
}

func unknownTargetReason(target, field string) Reason {
	return rendered(Reason{Code: ReasonUnknownTarget, Facts: ReasonFacts{Target: target, Field: field}})
}

func dependenciesMetReason(flow string) Reason {
	return rendered(Reason{Code: ReasonDependenciesMet, Facts: ReasonFacts{Flow: flow}})
}

func finallyReason(outcome string) Reason {
	return rendered(Reason{Code: ReasonFinally, Facts: ReasonFacts{Outcome: outcome}})
}

func retryCreateReason(flow string, attempt int) Reason {
	return rendered(Reason{Code: ReasonRetry, Facts: ReasonFacts{Flow: flow, Attempt: attempt}})
}

func retryDeleteReason(flow string) Reason {
	return rendered(Reason{Code: ReasonRetry, Facts: ReasonFacts{Flow: flow}})
}

func retentionReason() Reason { return rendered(Reason{Code: ReasonRetention}) }

func recreateReason(job string) Reason {
	return rendered(Reason{Code: ReasonRecreate, Facts: ReasonFacts{Job: job}})
}

// Blocked is one waiting flow.
type Blocked struct {
	Flow    string
	Index   int
	Reasons []Reason
}

// String renders the plan (not the status) for logs and transcripts.
func (r Plan) String() string {
	var b strings.Builder
	phase := r.Status.State.Phase
	if len(r.Transitions) > 0 {
		fmt.Fprintf(&b, "phase %s -> %s", orNone(string(r.Transitions[0].From)), phase)
	} else {
		fmt.Fprintf(&b, "phase %s", orNone(string(phase)))
	}
	if r.Status.State.Reason != "" {
		fmt.Fprintf(&b, " (%s)", r.Status.State.Reason)
	}
	if r.WriteStatus {
		b.WriteString(", write status")
	}
	fmt.Fprintf(&b, ", %d status bytes\n", r.StatusBytes)
	for _, c := range r.Create {
		fmt.Fprintf(&b, "create %s flow=%s template=%s/%s attempt=%d", c.Name, c.Flow, c.Template.Namespace, c.Template.Name, c.Attempt)
		for _, k := range slices.Sorted(mapKeys(c.Annotations)) {
			if strings.HasPrefix(k, "volcano.sh/") {
				continue
			}
			fmt.Fprintf(&b, " %s=%s", k, c.Annotations[k])
		}
		if len(c.Patch) > 0 {
			fmt.Fprintf(&b, " patch=%s", c.Patch)
		}
		b.WriteByte('\n')
	}
	for _, d := range r.Delete {
		fmt.Fprintf(&b, "delete %s reason=%s\n", d.Name, d.Reason.Code)
	}
	for _, bl := range r.Blocked {
		rs := make([]string, len(bl.Reasons))
		for i, x := range bl.Reasons {
			rs[i] = x.String()
		}
		fmt.Fprintf(&b, "blocked %s: %s\n", bl.Flow, strings.Join(rs, "; "))
	}
	if r.RequeueAfter > 0 {
		fmt.Fprintf(&b, "requeue after %v\n", r.RequeueAfter)
	}
	for _, is := range r.Issues {
		fmt.Fprintf(&b, "issue %s\n", is)
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// String renders the status deterministically, one fact per line, for
// transcripts.
func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "state %s", orNone(string(s.State.Phase)))
	if s.State.Reason != "" {
		fmt.Fprintf(&b, " (%s)", s.State.Reason)
	}
	b.WriteByte('\n')
	lists := []struct {
		name string
		v    []string
	}{{"pending", s.PendingJobs}, {"running", s.RunningJobs}, {"completing", s.CompletingJobs}, {"completed", s.CompletedJobs},
		{"failed", s.FailedJobs}, {"terminating", s.TerminatingJobs}, {"terminated", s.TerminatedJobs}, {"aborted", s.AbortedJobs},
		{"unknown", s.UnknownJobs}, {"orphan", s.OrphanJobs}}
	for _, l := range lists {
		if len(l.v) > 0 {
			fmt.Fprintf(&b, "  %s: %s\n", l.name, strings.Join(l.v, " "))
		}
	}
	ts := func(t metav1.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("15:04:05")
	}
	for _, e := range s.JobStatusList {
		fmt.Fprintf(&b, "  job %s state=%s start=%s end=%s restarts=%d", e.Name, orNone(string(e.State)), ts(e.StartTimestamp), ts(e.EndTimestamp), e.RestartCount)
		if e.Outcome != "" {
			fmt.Fprintf(&b, " outcome=%s", e.Outcome)
		}
		if e.Attempt > 1 {
			fmt.Fprintf(&b, " attempt=%d", e.Attempt)
		}
		if e.Retrying {
			b.WriteString(" retrying")
		}
		if e.NextRetryAt != nil {
			fmt.Fprintf(&b, " nextRetryAt=%s", ts(*e.NextRetryAt))
		}
		if e.DroppedHistories > 0 {
			fmt.Fprintf(&b, " dropped=%d", e.DroppedHistories)
		}
		b.WriteString(" histories=[")
		for i, h := range e.RunningHistories {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s %s..%s", orNone(string(h.State)), ts(h.StartTimestamp), ts(h.EndTimestamp))
		}
		b.WriteString("]\n")
	}
	for _, k := range slices.Sorted(mapKeys(s.Conditions)) {
		c := s.Conditions[k]
		fmt.Fprintf(&b, "  condition %s phase=%s created=%s", k, orNone(string(c.Phase)), ts(c.CreateTimestamp))
		if c.RunningDuration != nil {
			fmt.Fprintf(&b, " ran=%v", c.RunningDuration.Duration)
		}
		b.WriteByte('\n')
	}
	for _, w := range s.WaitingFlows {
		fmt.Fprintf(&b, "  waiting %s: %s\n", w.Flow, strings.Join(w.Reasons, "; "))
	}
	if s.SpecChange != nil {
		fmt.Fprintf(&b, "  specChange %s -> %s\n", s.SpecChange.Old, s.SpecChange.New)
	}
	return b.String()
}

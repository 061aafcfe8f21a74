package dag

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	// Patch is the flow's opaque JSON object of overrides (Default only;
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
	// ReasonUnknown: the flow depends on a flow that does not exist.
	ReasonUnknown ReasonCode = "UnknownTarget"
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

// Reason says why: Code for programs, Message (one line, starting with the
// code's word, with the figures) for people.
type Reason struct {
	Code    ReasonCode `json:"code"`
	Message string     `json:"message"`
}

// String renders the reason on one line: its message, or its code.
func (r Reason) String() string {
	if r.Message == "" {
		return string(r.Code)
	}
	return r.Message
}

func dependencyReason(atom, state string) Reason {
	return Reason{ReasonDependency, fmt.Sprintf("Dependency %s: %s", atom, state)}
}

func backoffReason(until time.Time) Reason {
	return Reason{ReasonBackoff, "Backoff until " + until.UTC().Format(time.RFC3339)}
}

func parallelismReason(active, limit int) Reason {
	return Reason{ReasonParallelism, fmt.Sprintf("Parallelism %d/%d active", active, limit)}
}

func mainNotFinalReason(count int) Reason {
	return Reason{ReasonMainNotFinal, fmt.Sprintf("MainNotFinal %d", count)}
}

func nameConflictReason(job, label string) Reason {
	return Reason{ReasonNameConflict, fmt.Sprintf("NameConflict %s owned by %q", job, label)}
}

func retryingReason(job string) Reason {
	return Reason{ReasonRetrying, "Retrying: waiting for " + job + " to go"}
}

func probeReason(target string, entry int, job, state string) Reason {
	return Reason{ReasonProbe, fmt.Sprintf("Probe %s[%d] on %s: %s", target, entry, job, state)}
}

func invalidSpecReason(issue string) Reason {
	return Reason{ReasonInvalidSpec, "InvalidSpec: " + issue}
}
func cycleReason(issue string) Reason { return Reason{ReasonCycle, "Cycle: " + issue} }
func unknownTargetReason(issue string) Reason {
	return Reason{ReasonUnknown, "UnknownTarget: " + issue}
}

func retryDeleteReason(flow string) Reason {
	return Reason{ReasonRetry, "Retry: flow " + flow + " failed and is retried"}
}

func retentionReason() Reason {
	return Reason{ReasonRetention, "Retention: the workflow succeeded and its retain policy is delete"}
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

package dag

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Phase is a workflow's phase. The values are Volcano's, including the
// spelling "Succeed".
type Phase string

// Workflow phases.
const (
	PhasePending     Phase = "Pending"
	PhaseRunning     Phase = "Running"
	PhaseSucceed     Phase = "Succeed"
	PhaseFailed      Phase = "Failed"
	PhaseTerminating Phase = "Terminating"
)

// JobPhase is an observed job's phase, in Volcano's vocabulary. Adapters map
// other job kinds into it (batch/v1: Complete → Completed, Failed → Failed,
// active > 0 → Running, else Pending).
type JobPhase string

// Job phases. JobPhaseNone is a job whose controller has not set a phase yet.
const (
	JobPhaseNone        JobPhase = ""
	JobPhasePending     JobPhase = "Pending"
	JobPhaseAborting    JobPhase = "Aborting"
	JobPhaseAborted     JobPhase = "Aborted"
	JobPhaseRunning     JobPhase = "Running"
	JobPhaseRestarting  JobPhase = "Restarting"
	JobPhaseCompleting  JobPhase = "Completing"
	JobPhaseCompleted   JobPhase = "Completed"
	JobPhaseTerminating JobPhase = "Terminating"
	JobPhaseTerminated  JobPhase = "Terminated"
	JobPhaseFailed      JobPhase = "Failed"
)

// Outcome is a flow's final result (Default preset). Once set it never
// changes.
type Outcome string

// Flow outcomes. OutcomeNone means the flow is not final yet.
const (
	OutcomeNone      Outcome = ""
	OutcomeSucceeded Outcome = "Succeeded"
	OutcomeFailed    Outcome = "Failed"
	OutcomeOmitted   Outcome = "Omitted"
)

// RetainPolicy says what happens to a workflow's jobs once it succeeds.
type RetainPolicy string

// Retain policies. An empty policy behaves as RetainPolicyRetain.
const (
	RetainPolicyRetain RetainPolicy = "retain"
	RetainPolicyDelete RetainPolicy = "delete"
)

// Label (and annotation) keys written on every created job, as Volcano does.
const (
	LabelCreatedByJobTemplate = "volcano.sh/createdByJobTemplate"
	LabelCreatedByJobFlow     = "volcano.sh/createdByJobFlow"
)

// Workflow is one JobFlow: its identity, its spec and its previous status.
type Workflow struct {
	Name      string
	Namespace string
	UID       types.UID
	Spec      Spec
	// Status is the status the previous plan returned (as stored); the zero
	// value for a new workflow.
	Status Status
}

// Spec is the desired workflow. Its JSON form is the spec of Volcano's
// flow.volcano.sh/v1alpha1 JobFlow; plancore's extensions are named
// plancore<Field> so that no field Volcano adds can clash with them.
type Spec struct {
	// Flows are the main flows, in declaration order.
	Flows []Flow `json:"flows,omitempty"`
	// Finally flows run once every main flow is final (Tekton finally, Argo
	// onExit). They may carry a condition over main flows, never an ordering.
	Finally []Flow `json:"plancoreFinally,omitempty"`
	// JobRetainPolicy says whether jobs are deleted once the workflow
	// succeeds; empty means retain.
	JobRetainPolicy RetainPolicy `json:"jobRetainPolicy,omitempty"`
	// Parallelism bounds the number of active jobs; 0 means unlimited.
	Parallelism int `json:"plancoreParallelism,omitempty"`
	// FailFast stops creating main flows after the first unhandled failure;
	// nil means true (Argo's default).
	FailFast *bool `json:"plancoreFailFast,omitempty"`
	// Retry is the default retry strategy of flows that carry none.
	Retry *Retry `json:"plancoreRetry,omitempty"`
}

// Flow is one node of the workflow; its job is created from the template of
// the same name.
type Flow struct {
	Name      string     `json:"name"`
	DependsOn *DependsOn `json:"dependsOn,omitempty"`
	// Patch is the flow's override, Volcano's Patch type:
	// {"jobSpec": {...}}, a batch.volcano.sh JobSpec merged into the
	// JobTemplate's spec (volcano-sh/volcano#4491). {"spec": {...}}, as
	// Volcano's design documents write it, is read as the same override;
	// an API server with Volcano's JobFlow CRD prunes it, so write jobSpec.
	// A patch with both, or with another field, is invalid. It reaches the
	// executor as CreateJob.Patch, the merge patch of the whole template.
	Patch json.RawMessage `json:"patch,omitempty"`
	// Retry overrides Spec.Retry for this flow.
	Retry *Retry `json:"plancoreRetry,omitempty"`
}

// DependsOn declares a flow's condition. Targets and TargetsWithStatus
// combine with AND; Depends is exclusive with both.
type DependsOn struct {
	// Targets are flows that must succeed: [a, b] means "a && b".
	Targets []string `json:"targets,omitempty"`
	// TargetsWithStatus are flows that must reach a given result.
	TargetsWithStatus []TargetStatus `json:"targetsWithStatus,omitempty"`
	// Depends is an Argo-like expression such as "a && (b.Failed || !c)".
	Depends string `json:"plancoreDepends,omitempty"`
	// Probe turns Targets into readiness dependencies: instead of
	// succeeding, every target's job must exist and every probe entry
	// pass. It combines with Targets only. VolcanoCompat ignores it, as the
	// anchor does.
	Probe *Probe `json:"probe,omitempty"`
}

// Probe is dependsOn.probe, the anchor's unimplemented Probe type
// (httpGet, tcpSocket, taskStatus) made to work. Its entries are numbered
// in one sequence, HTTPGet first, then TCPSocket, then TaskStatus:
// ProbeResult.Entry and the Probe reason's message use that number (see
// Entries).
//
// An entry that can no longer pass (its target ended without it passing)
// omits the flow and, unlike an expression that turned false, taints it:
// the workflow fails unless some flow handles it (x.Omitted, x.Done).
type Probe struct {
	// HTTPGet and TCPSocket entries are run by the executor, which reports
	// each outcome in Snapshot.ProbeResults.
	HTTPGet   []HTTPGetProbe   `json:"httpGetList,omitempty"`
	TCPSocket []TCPSocketProbe `json:"tcpSocketList,omitempty"`
	// TaskStatus entries are evaluated by the core from the target job's
	// task status counts.
	TaskStatus []TaskStatusProbe `json:"taskStatusList,omitempty"`
	// Period is how often the executor re-runs its probes while the flow
	// waits; 0 means DefaultProbePeriod. While an entry is pending, the plan's
	// RequeueAfter is at most Period.
	Period time.Duration `json:"plancorePeriod,omitempty"`
}

// DefaultProbePeriod is Probe.Period's default.
const DefaultProbePeriod = 10 * time.Second

// HTTPGetProbe passes when an HTTP GET to a pod of the target job's task
// answers 2xx or 3xx (the executor decides, as a kubelet would).
type HTTPGetProbe struct {
	// Target is the target flow whose job is probed; empty means the
	// flow's only target.
	Target string `json:"plancoreTarget,omitempty"`
	Task   string `json:"taskName,omitempty"`
	Path   string `json:"path,omitempty"`
	Port   int    `json:"port,omitempty"`
	// Header is Volcano's one request header; Headers are more, sent
	// after it.
	Header  *HTTPHeader  `json:"httpHeader,omitempty"`
	Headers []HTTPHeader `json:"plancoreHeaders,omitempty"`
}

// HTTPHeader is one request header of an HTTPGetProbe.
type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// TCPSocketProbe passes when a TCP connection to a pod of the target job's
// task opens.
type TCPSocketProbe struct {
	Target string `json:"plancoreTarget,omitempty"`
	Task   string `json:"taskName,omitempty"`
	Port   int    `json:"port"`
}

// TaskStatusProbe passes when the target job's taskStatusCount holds at
// least Min pods of Task in Phase (e.g. task ps, phase Running, min 1:
// BoCloud/JobFlow #21's parameter server is up). Min 0 means 1.
type TaskStatusProbe struct {
	Target string `json:"plancoreTarget,omitempty"`
	Task   string `json:"taskName,omitempty"`
	Phase  string `json:"phase,omitempty"`
	Min    int32  `json:"plancoreMin,omitempty"`
}

// ProbeEntry is one entry of a Probe in its numbering; exactly one of the
// pointers is set.
type ProbeEntry struct {
	Index      int
	HTTPGet    *HTTPGetProbe
	TCPSocket  *TCPSocketProbe
	TaskStatus *TaskStatusProbe
}

// Target is the entry's target field.
func (e ProbeEntry) Target() string {
	switch {
	case e.HTTPGet != nil:
		return e.HTTPGet.Target
	case e.TCPSocket != nil:
		return e.TCPSocket.Target
	case e.TaskStatus != nil:
		return e.TaskStatus.Target
	}
	return ""
}

// Kind is httpGet, tcpSocket or taskStatus.
func (e ProbeEntry) Kind() string {
	switch {
	case e.HTTPGet != nil:
		return "httpGet"
	case e.TCPSocket != nil:
		return "tcpSocket"
	}
	return "taskStatus"
}

// Entries lists the probe's entries in their numbering.
func (p *Probe) Entries() []ProbeEntry {
	if p == nil {
		return nil
	}
	out := make([]ProbeEntry, 0, len(p.HTTPGet)+len(p.TCPSocket)+len(p.TaskStatus))
	for i := range p.HTTPGet {
		out = append(out, ProbeEntry{Index: len(out), HTTPGet: &p.HTTPGet[i]})
	}
	for i := range p.TCPSocket {
		out = append(out, ProbeEntry{Index: len(out), TCPSocket: &p.TCPSocket[i]})
	}
	for i := range p.TaskStatus {
		out = append(out, ProbeEntry{Index: len(out), TaskStatus: &p.TaskStatus[i]})
	}
	return out
}

// ProbeResult is the outcome of one executor-run probe entry.
type ProbeResult struct {
	// Flow is the flow whose dependsOn.probe holds the entry; Entry is the
	// entry's number (see Probe).
	Flow  string
	Entry int
	OK    bool
	// Time is when the probe ran; a result older than Options.ProbeTTL is
	// ignored. Of several results for one entry the latest counts, a
	// failure winning a tie.
	Time time.Time
}

// TargetStatus is one `name.result` atom of the structured dependency form.
// Phase is Succeeded, Failed, Omitted, Done or Started; Completed is an
// alias of Succeeded and Running of Started.
type TargetStatus struct {
	Name  string `json:"name,omitempty"`
	Phase string `json:"phase,omitempty"`
}

// Retry is a flow's retry strategy.
type Retry struct {
	// Limit is the number of retries: at most Limit+1 attempts in total.
	Limit int `json:"limit,omitempty"`
	// On lists the job phases that trigger a retry, a subset of Failed,
	// Terminated and Aborted; empty means only [JobPhaseFailed].
	On []JobPhase `json:"on,omitempty"`
	// Backoff is the wait before each retry.
	Backoff Backoff `json:"backoff,omitempty"`
}

// Backoff is a capped exponential wait: retry n waits
// min(Duration × Factor^(n−1), Cap).
// Durations are Kubernetes duration strings on the wire ("90s").
type Backoff struct {
	Duration time.Duration `json:"duration,omitempty"`
	// Factor multiplies the wait at each retry; 0 means 2.
	Factor float64 `json:"factor,omitempty"`
	// Cap bounds the wait; 0 means no cap.
	Cap time.Duration `json:"cap,omitempty"`
}

// Job is one observed job, as the executor read it from the cluster.
type Job struct {
	Name   string
	UID    types.UID
	Labels map[string]string
	Phase  JobPhase
	// CreationTime is the job's creation timestamp.
	CreationTime time.Time
	// RunningDuration is how long the job ran, when the job controller
	// reports it.
	RunningDuration *time.Duration
	// RetryCount is the job's internal restart count (not a flow attempt).
	RetryCount int32
	// TaskStatusCount counts the job's pods per task and pod phase.
	TaskStatusCount map[string]TaskState
}

// TaskState counts one task's pods by pod phase, as Volcano reports it.
type TaskState struct {
	Phase map[string]int32 `json:"phase,omitempty"`
}

// Snapshot is everything Decide reads: the workflow, the jobs observed for it
// and the current time.
type Snapshot struct {
	Flow Workflow
	// Jobs are the observed jobs that carry this workflow's label or one of
	// its job names, in any order.
	Jobs []Job
	// Now is the only clock the package ever reads.
	Now time.Time
	// ProbeResults are the outcomes of the httpGet and tcpSocket probe
	// entries the executor ran, in any order.
	ProbeResults []ProbeResult
}

// Status is a workflow's complete status. The first fields are Volcano's
// (JSON names included); the rest are plancore's and are filled only by the
// Default state machine.
type Status struct {
	State          State    `json:"state"`
	PendingJobs    []string `json:"pendingJobs,omitempty"`
	RunningJobs    []string `json:"runningJobs,omitempty"`
	FailedJobs     []string `json:"failedJobs,omitempty"`
	CompletedJobs  []string `json:"completedJobs,omitempty"`
	TerminatedJobs []string `json:"terminatedJobs,omitempty"`
	UnknownJobs    []string `json:"unKnowJobs,omitempty"`
	// CompletingJobs, TerminatingJobs and AbortedJobs are the extended
	// buckets of the Default preset (Volcano puts Completing and Terminating
	// in no list and Aborted in unKnowJobs).
	CompletingJobs  []string `json:"completingJobs,omitempty"`
	TerminatingJobs []string `json:"terminatingJobs,omitempty"`
	AbortedJobs     []string `json:"abortedJobs,omitempty"`
	// OrphanJobs are labelled jobs whose flow is not in the spec (Default);
	// they never count towards the phase.
	OrphanJobs    []string             `json:"orphanJobs,omitempty"`
	JobStatusList []JobStatus          `json:"jobStatusList,omitempty"`
	Conditions    map[string]Condition `json:"conditions,omitempty"`
	// WaitingFlows lists every waiting flow and why (Default).
	WaitingFlows []WaitingFlow `json:"waitingFlows,omitempty"`
	// SpecHash identifies the spec the status was computed for (see
	// SpecHash): 32 hex digits of SHA-256.
	SpecHash string `json:"specHash,omitempty"`
	// SpecChange records the last spec change seen mid-run.
	SpecChange *SpecChange `json:"specChange,omitempty"`
}

// State holds the workflow phase, with the reason for a Failed phase that no
// job explains (InvalidSpec).
type State struct {
	Phase  Phase  `json:"phase,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// JobStatus is one entry of the job status list.
type JobStatus struct {
	Name             string           `json:"name,omitempty"`
	State            JobPhase         `json:"state,omitempty"`
	StartTimestamp   metav1.Time      `json:"startTimestamp"`
	EndTimestamp     metav1.Time      `json:"endTimestamp"`
	RestartCount     int32            `json:"restartCount,omitempty"`
	RunningHistories []RunningHistory `json:"runningHistories,omitempty"`
	// Flow, Outcome, Attempt, NextRetryAt, Retrying, Started, RetiredUID and
	// DroppedHistories are plancore's bookkeeping (Default only).
	Flow             string       `json:"flow,omitempty"`
	Outcome          Outcome      `json:"outcome,omitempty"`
	Attempt          int          `json:"attempt,omitempty"`
	NextRetryAt      *metav1.Time `json:"nextRetryAt,omitempty"`
	Retrying         bool         `json:"retrying,omitempty"`
	Started          bool         `json:"started,omitempty"`
	RetiredUID       types.UID    `json:"retiredUID,omitempty"`
	DroppedHistories int          `json:"droppedHistories,omitempty"`
}

// RunningHistory is one interval a job spent in one phase; an open interval
// has a zero EndTimestamp.
type RunningHistory struct {
	StartTimestamp metav1.Time `json:"startTimestamp"`
	EndTimestamp   metav1.Time `json:"endTimestamp"`
	State          JobPhase    `json:"state,omitempty"`
}

// Condition is a job's condition entry, keyed by job name.
type Condition struct {
	Phase           JobPhase             `json:"phase,omitempty"`
	CreateTimestamp metav1.Time          `json:"createTime"`
	RunningDuration *metav1.Duration     `json:"runningDuration,omitempty"`
	TaskStatusCount map[string]TaskState `json:"taskStatusCount,omitempty"`
}

// WaitingFlow is one waiting flow with its rendered reasons.
type WaitingFlow struct {
	Flow    string   `json:"flow"`
	Reasons []string `json:"reasons,omitempty"`
}

// SpecChange records a spec edit seen while the workflow ran.
type SpecChange struct {
	Old string `json:"old"`
	New string `json:"new"`
}

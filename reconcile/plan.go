package reconcile

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/expectations"
)

// ReasonCode is a stable machine-readable reason, in UpperCamelCase. The
// codes are part of the API: match on them, never on Message.
type ReasonCode string

// Reason codes of actions, notices and outcomes.
const (
	// ReasonOK: the chain ran to the end; nothing stopped it.
	ReasonOK ReasonCode = "OK"
	// ReasonSuspendDeleteAll: the cluster is suspending; every pod is deleted.
	ReasonSuspendDeleteAll ReasonCode = "SuspendDeleteAll"
	// ReasonSuspended: the cluster is suspended; nothing is planned.
	ReasonSuspended ReasonCode = "Suspended"
	// ReasonSuspendRequested: spec.suspend is set; the plan waits for the
	// RayClusterSuspending condition.
	ReasonSuspendRequested ReasonCode = "SuspendRequested"
	// ReasonRecreateSpecChanged: the Recreate strategy saw a new spec hash and
	// deletes every pod.
	ReasonRecreateSpecChanged ReasonCode = "RecreateSpecChanged"
	// ReasonRecreateVersionSkip: the head was created by another KubeRay
	// version; its hash is adopted instead of recreating.
	ReasonRecreateVersionSkip ReasonCode = "RecreateVersionSkip"
	// ReasonExpectationsPending: a group's expectations are not satisfied; the
	// group is skipped this pass.
	ReasonExpectationsPending ReasonCode = "ExpectationsPending"
	// ReasonHeadTerminalPhase: the head pod failed or succeeded and is deleted.
	ReasonHeadTerminalPhase ReasonCode = "HeadTerminalPhase"
	// ReasonHeadContainerExited: the head's Ray container exited and will not
	// restart; the head is deleted.
	ReasonHeadContainerExited ReasonCode = "HeadContainerExited"
	// ReasonHeadCreate: there is no head pod; one is created.
	ReasonHeadCreate ReasonCode = "HeadCreate"
	// ReasonHeadRestartDisabled: the head is gone on a provisioned cluster
	// that disables head restarts; nothing is planned.
	ReasonHeadRestartDisabled ReasonCode = "HeadRestartDisabled"
	// ReasonHeadPredecessorTerminating: the previous head is still
	// terminating; the new one waits.
	ReasonHeadPredecessorTerminating ReasonCode = "HeadPredecessorTerminating"
	// ReasonMultipleHeads: more than one head pod; KubeRay's requeue.
	ReasonMultipleHeads ReasonCode = "MultipleHeads"
	// ReasonMTLSNotReady: the mTLS secrets are not ready; creations wait.
	ReasonMTLSNotReady ReasonCode = "MTLSNotReady"
	// ReasonWorkerTerminalPhase: a worker failed or succeeded and is deleted.
	ReasonWorkerTerminalPhase ReasonCode = "WorkerTerminalPhase"
	// ReasonWorkerContainerExited: a worker's Ray container exited and will
	// not restart; the worker is deleted.
	ReasonWorkerContainerExited ReasonCode = "WorkerContainerExited"
	// ReasonUnhealthyWorkers: unhealthy workers were deleted; the group
	// requeues.
	ReasonUnhealthyWorkers ReasonCode = "UnhealthyWorkers"
	// ReasonWorkersToDelete: a pod listed in scaleStrategy.workersToDelete is
	// deleted.
	ReasonWorkersToDelete ReasonCode = "WorkersToDelete"
	// ReasonWorkersToDeleteNotMember: a listed pod belongs to another group or
	// cluster and is not deleted.
	ReasonWorkersToDeleteNotMember ReasonCode = "WorkersToDeleteNotMember"
	// ReasonWorkersToDeleteAbsent: a listed pod is not in the snapshot.
	ReasonWorkersToDeleteAbsent ReasonCode = "WorkersToDeleteAbsent"
	// ReasonScaleUp: missing worker pods are created.
	ReasonScaleUp ReasonCode = "ScaleUp"
	// ReasonScaleDown: surplus worker pods are deleted.
	ReasonScaleDown ReasonCode = "ScaleDown"
	// ReasonScaleDownLeftToAutoscaler: the surplus is left to the autoscaler.
	ReasonScaleDownLeftToAutoscaler ReasonCode = "ScaleDownLeftToAutoscaler"
	// ReasonGroupSuspended: a suspended worker group's pods are deleted.
	ReasonGroupSuspended ReasonCode = "GroupSuspended"
	// ReasonUnhealthyReplicaGroup: a multi-host replica group with an
	// unhealthy member is deleted whole.
	ReasonUnhealthyReplicaGroup ReasonCode = "UnhealthyReplicaGroup"
	// ReasonIncompleteReplicaGroup: a replica group missing hosts is deleted;
	// the group requeues.
	ReasonIncompleteReplicaGroup ReasonCode = "IncompleteReplicaGroup"
	// ReasonReplicaGroupCreate: a new multi-host replica group is created.
	ReasonReplicaGroupCreate ReasonCode = "ReplicaGroupCreate"
	// ReasonReplicaGroupFormationRetry: the missing hosts of a forming group
	// are created again.
	ReasonReplicaGroupFormationRetry ReasonCode = "ReplicaGroupFormationRetry"
	// ReasonReplicaGroupFormationBackoff: a forming group waits for its retry
	// backoff.
	ReasonReplicaGroupFormationBackoff ReasonCode = "ReplicaGroupFormationBackoff"
	// ReasonReplicaGroupFormationTimeout: a forming group did not form in
	// time and is deleted.
	ReasonReplicaGroupFormationTimeout ReasonCode = "ReplicaGroupFormationTimeout"
	// ReasonReplicaGroupForming: new replica groups wait for a forming one.
	ReasonReplicaGroupForming ReasonCode = "ReplicaGroupForming"
	// ReasonLegacyMultiHostPods: unlabelled multi-host pods are deleted.
	ReasonLegacyMultiHostPods ReasonCode = "LegacyMultiHostPods"
	// ReasonNotMultipleOfHosts: the desired pods are not a whole number of
	// replica groups; KubeRay's requeue.
	ReasonNotMultipleOfHosts ReasonCode = "NotMultipleOfHosts"
	// ReasonInvalidNumOfHosts: numOfHosts 0 is treated as 1.
	ReasonInvalidNumOfHosts ReasonCode = "InvalidNumOfHosts"
	// ReasonGroupNotInSpec: pods carry a group that is not in the spec; they
	// are left alone.
	ReasonGroupNotInSpec ReasonCode = "GroupNotInSpec"
	// ReasonForeignOwner: pods labelled for the cluster are controlled by
	// another incarnation of it and are ignored.
	ReasonForeignOwner ReasonCode = "ForeignOwner"
	// ReasonBurstLimited: a group creates at most BurstReplicas pods this pass.
	ReasonBurstLimited ReasonCode = "BurstLimited"
	// ReasonNotVisited: an earlier stop ended the chain before this group.
	ReasonNotVisited ReasonCode = "NotVisited"
)

// Reason explains an action, notice or verdict. Its Message reuses KubeRay's
// text where one exists.
type Reason = plancore.Reason[ReasonCode, ReasonFacts]

// ReasonFacts are the facts a Reason's message states.
type ReasonFacts struct {
	// Pods names the pods concerned, sorted, when relevant.
	Pods []string `json:"pods,omitempty"`

	// The facts the message states, as fields, so a controller never parses
	// Message; each message is rendered from them. Zero where the code states
	// none.

	// Group is the worker group concerned.
	Group string `json:"group,omitempty"`
	// ReplicaGroup is the multi-host replica group concerned.
	ReplicaGroup string `json:"replicaGroup,omitempty"`
	// Count is what the reason counts: the pods ignored, unhealthy, deleted,
	// left to the autoscaler, found or running, the replica groups left,
	// waiting or running, or the pods a group desires.
	Count int `json:"count,omitempty"`
	// Of is the figure Count is measured against: the missing replicas
	// (BurstLimited), the desired pods (ScaleUp, ScaleDown) or replica groups
	// (ReplicaGroupCreate).
	Of int `json:"of,omitempty"`
	// Limit is the bound applied: BurstReplicas (BurstLimited).
	Limit int `json:"limit,omitempty"`
	// NumOfHosts is the group's hosts per replica (InvalidNumOfHosts,
	// NotMultipleOfHosts, LegacyMultiHostPods).
	NumOfHosts int `json:"numOfHosts,omitempty"`
	// Hosts are the missing host indices and Attempt the formation attempt
	// this plan makes (ReplicaGroupFormationRetry).
	Hosts   []int `json:"hosts,omitempty"`
	Attempt int   `json:"attempt,omitempty"`
	// At is when a backed-off replica group is retried
	// (ReplicaGroupFormationBackoff).
	At time.Time `json:"at,omitzero"`
	// Timeout is the formation timeout passed (ReplicaGroupFormationTimeout).
	Timeout time.Duration `json:"timeout,omitempty"`
	// LastError is the error the reason reports: a replica group's last
	// creation error (formation retries and timeouts), the mTLS check's
	// (MTLSNotReady).
	LastError string `json:"lastError,omitempty"`
	// From and To are the old and new spec hashes (RecreateSpecChanged) or
	// the creating and current operator versions (RecreateVersionSkip).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// FailureReason is what an executor reports when an action fails; it feeds
// the RayClusterReplicaFailure condition.
type FailureReason string

// Failure reasons, as KubeRay's utils.ErrFailed*.
const (
	FailedDeleteAllPods   FailureReason = "FailedDeleteAllPods"
	FailedDeleteHeadPod   FailureReason = "FailedDeleteHeadPod"
	FailedCreateHeadPod   FailureReason = "FailedCreateHeadPod"
	FailedDeleteWorkerPod FailureReason = "FailedDeleteWorkerPod"
	FailedCreateWorkerPod FailureReason = "FailedCreateWorkerPod"
)

// ActionKind names the kind of an Action.
type ActionKind string

// Action kinds, one per executor method.
const (
	ActionCreatePod           ActionKind = "CreatePod"
	ActionCreateReplicaGroup  ActionKind = "CreateReplicaGroup"
	ActionDeletePod           ActionKind = "DeletePod"
	ActionDeleteAllOf         ActionKind = "DeleteAllOf"
	ActionPatchPodAnnotations ActionKind = "PatchPodAnnotations"
)

// ExpectKind is the kind of an expectation record.
type ExpectKind string

// Expectation kinds.
const (
	ExpectCreate ExpectKind = "Create"
	ExpectDelete ExpectKind = "Delete"
)

// Expect is the expectation record an action implies. The executor commits it
// when the call succeeds (a delete also on NotFound).
type Expect struct {
	// Group is the expectations group: "" for the head, else the worker group.
	Group string
	Kind  ExpectKind
	// Pod is the pod name; empty for a GenerateName create, whose name the
	// server assigns (the executor fills it in).
	Pod string
	// Seen reports, for a delete, that the snapshot showed the pod.
	Seen bool `json:",omitempty"`
}

// Action is one step of a plan. Exactly one of the payload fields is set,
// matching Kind.
type Action struct {
	Kind ActionKind
	// Group is the worker group, HeadGroupLabel for the head, or "" for
	// cluster-wide actions.
	Group  string
	Reason Reason
	// FailureReason is what the executor reports if this action fails.
	FailureReason FailureReason `json:",omitempty"`
	// Expect lists the expectation records the action implies, in pod order.
	Expect []Expect `json:",omitempty"`

	Create      *CreatePod           `json:",omitempty"`
	CreateGroup *CreateReplicaGroup  `json:",omitempty"`
	Delete      *DeletePod           `json:",omitempty"`
	DeleteAll   *DeleteAllOf         `json:",omitempty"`
	Patch       *PatchPodAnnotations `json:",omitempty"`
}

// CreatePod creates one pod. The pod is owned by the plan.
type CreatePod struct {
	Pod *corev1.Pod
	// ReplicaIndex and HostIndex are -1 when the pod carries no such label.
	ReplicaIndex int
	HostIndex    int
}

// CreateReplicaGroup creates the pods of one multi-host replica group: all H
// hosts of a new group, or the missing hosts of a group still forming. The
// executor attempts every pod even if one fails (KubeRay #4540).
type CreateReplicaGroup struct {
	ReplicaName  string
	ReplicaIndex int
	// Hosts are the host indices created, parallel to Pods.
	Hosts []int
	Pods  []*corev1.Pod
	// NumOfHosts is the group's H, so the executor can record what is missing.
	NumOfHosts int
	// Retry is set when completing a group recorded in Snapshot.Forming.
	Retry bool `json:",omitempty"`
	// Attempts is the formation attempts already made (0 for a new group).
	Attempts int `json:",omitempty"`
	// FirstFailure carries the record's first failure time on a retry.
	FirstFailure time.Time `json:",omitzero"`
	// Serial asks for KubeRay's creation: member by member, stopping at the
	// first failure and recording no formation (Compat.DeleteIncompleteGroupsImmediately).
	Serial bool `json:",omitempty"`
}

// DeletePod deletes one pod by name, with a UID precondition when known.
type DeletePod struct {
	Namespace string
	Name      string
	// UID, when set, must match (so a recreated pod with the same name is never
	// deleted by mistake). Blind workersToDelete deletes carry none.
	UID types.UID `json:",omitempty"`
	// NotFoundIsSuccess says the executor treats NotFound as done.
	NotFoundIsSuccess bool
}

// DeleteAllOf deletes every pod in Namespace matching Selector.
type DeleteAllOf struct {
	Namespace string
	Selector  map[string]string
	// Active is the count of matching non-terminating pods in the snapshot.
	Active int
}

// SelectorString renders the selector as k=v pairs, sorted.
func (d *DeleteAllOf) SelectorString() string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(d.Selector)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + d.Selector[k])
	}
	return b.String()
}

// PatchPodAnnotations sets annotations on one pod, with UID and
// resourceVersion preconditions. A failure is only logged and re-planned.
type PatchPodAnnotations struct {
	Namespace       string
	Name            string
	UID             types.UID
	ResourceVersion string
	Set             map[string]string
}

// ExpectationOps are expectation-store operations that belong to no action.
type ExpectationOps struct {
	// ClearCluster forgets every record of the cluster (Recreate).
	ClearCluster bool `json:",omitempty"`
	// Drop lists the expectation items this snapshot settled (observed or
	// expired); KubeRay removed them as a side effect of IsSatisfied. Apply
	// removes them before any action is recorded.
	Drop []expectations.Ref `json:",omitempty"`
	// DropForming lists formation records (Snapshot.Forming) that are settled:
	// complete, timed out, deleted or vanished.
	DropForming []FormingKey `json:",omitempty"`
}

// FormingKey identifies a formation record.
type FormingKey struct {
	Group       string
	ReplicaName string
}

// Verdict is the plan's verdict for the caller's loop.
type Verdict struct {
	// RequeueAfter is the wake-up hint, relative to Snapshot.Now: 2s where
	// KubeRay returns a requeue error, or the earliest expectations deadline or
	// formation backoff; 0 means none. It maps onto controller-runtime's
	// Result.RequeueAfter.
	RequeueAfter time.Duration
	// Reason is the first stop's reason with KubeRay's exact message, or OK.
	Reason Reason
	// StoppedAt names the stage where the chain stopped ("suspend",
	// "recreate", "head", "group <name>"), or "".
	StoppedAt string `json:",omitempty"`
	// AwaitsStatus says the next step waits on a condition the caller's own
	// status write of this pass sets or clears (RayClusterSuspending,
	// RayClusterSuspended): write Status's result BEFORE the next pass.
	// RequeueAfter is then set too, so a loop that is not driven by watch
	// events does not stall here.
	AwaitsStatus bool `json:",omitempty"`
}

// Counters count what was decided for a group or the whole cluster. They add
// up to the plan's actions: Place is the pods created, Stop the pods deleted
// by DeletePod (by reason), DeleteAll the active pods DeleteAllOf targets.
type Counters struct {
	Desired         int32
	DesiredReplicas int32
	Observed        int
	Terminating     int
	Unhealthy       int
	Place           int
	Stop            map[ReasonCode]int `json:",omitempty"`
	DeleteAll       int
	// Ignore counts surplus left alone (autoscaler) and listed workers already
	// terminating.
	Ignore int
	// Blocked counts pending expectations that blocked the group.
	Blocked               int
	Legacy                int
	AbsentWorkersToDelete int
	// FreeIndices are the replica indices given to new pods or groups.
	FreeIndices []int `json:",omitempty"`
}

// Stops returns the total of Stop.
func (c *Counters) Stops() int {
	n := 0
	for _, v := range c.Stop {
		n += v
	}
	return n
}

func (c *Counters) add(o *Counters) {
	c.Desired = satAdd(c.Desired, o.Desired)
	c.DesiredReplicas = satAdd(c.DesiredReplicas, o.DesiredReplicas)
	c.Observed += o.Observed
	c.Terminating += o.Terminating
	c.Unhealthy += o.Unhealthy
	c.Place += o.Place
	for k, v := range o.Stop {
		if c.Stop == nil {
			c.Stop = map[ReasonCode]int{}
		}
		c.Stop[k] += v
	}
	c.DeleteAll += o.DeleteAll
	c.Ignore += o.Ignore
	c.Blocked += o.Blocked
	c.Legacy += o.Legacy
	c.AbsentWorkersToDelete += o.AbsentWorkersToDelete
}

// GroupReport is one worker group's counters and its inputs.
type GroupReport struct {
	Group    string
	Replicas *int32 `json:",omitempty"`
	Min      int32
	Max      int32
	Hosts    int32
	Counters
	// Stopped is the group's own stop (requeue), if any.
	Stopped *Reason `json:",omitempty"`
	// NotVisited is set when an earlier stop ended the chain first.
	NotVisited bool `json:",omitempty"`
}

// Plan is Decide's result.
//
// ORDER AND CONCURRENCY, for an executor of your own: the actions MUST be
// applied in order, except within a run (Plan.Runs): consecutive actions of
// the same Group and of kind CreatePod, DeletePod or CreateReplicaGroup are
// independent of each other and MAY be sent concurrently, in any order; a
// run MUST complete before the next action starts. Annotation patches,
// DeleteAllOf and every other action are runs of one. An action MUST NOT be
// sent once the context is done: Apply reports every later action
// CallSkipped, neither attempted nor recorded. Applier.MaxInFlight applies
// the runs concurrently under exactly these rules.
type Plan struct {
	Cluster     string // namespace/name
	ClusterUID  types.UID
	Now         time.Time
	ClusterHash string
	// Actions are ordered: annotation patches, DeleteAllOf, head, then groups
	// in spec order with deletes before creates.
	Actions        []Action
	ExpectationOps ExpectationOps
	Verdict        Verdict
	// Head counts the head stage (Group HeadGroupLabel).
	Head   Counters
	Groups []GroupReport
	Totals Counters
	// Notices are warnings that cause no action.
	Notices []Reason `json:",omitempty"`
}

// String renders the plan; it is Explain.
func (p Plan) String() string { return p.Explain() }

// Explain renders a stable, human-readable text form of the plan.
func (p Plan) Explain() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan %s  hash %s\n", p.Cluster, p.ClusterHash)
	for _, n := range p.Notices {
		fmt.Fprintf(&b, "notice %s", n)
		if len(n.Facts.Pods) > 0 {
			fmt.Fprintf(&b, " %v", n.Facts.Pods)
		}
		b.WriteByte('\n')
	}
	byGroup := map[string][]int{}
	for i := range p.Actions {
		byGroup[p.Actions[i].Group] = append(byGroup[p.Actions[i].Group], i)
	}
	for _, i := range byGroup[""] {
		fmt.Fprintf(&b, "%s\n", p.Actions[i].line())
	}
	hc := p.Head
	fmt.Fprintf(&b, "head  observed %d  terminating %d  unhealthy %d\n", hc.Observed, hc.Terminating, hc.Unhealthy)
	for _, i := range byGroup[HeadGroupLabel] {
		fmt.Fprintf(&b, "  %s\n", p.Actions[i].line())
	}
	for _, g := range p.Groups {
		repl := "nil"
		if g.Replicas != nil {
			repl = fmt.Sprint(*g.Replicas)
		}
		fmt.Fprintf(&b, "group %s  desired %d (replicas %s, min %d, max %d, hosts %d)  observed %d  terminating %d  unhealthy %d",
			g.Group, g.Desired, repl, g.Min, g.Max, g.Hosts, g.Observed, g.Terminating, g.Unhealthy)
		if g.Blocked > 0 {
			fmt.Fprintf(&b, "  blocked %d", g.Blocked)
		}
		if g.Ignore > 0 {
			fmt.Fprintf(&b, "  ignore %d", g.Ignore)
		}
		if g.Legacy > 0 {
			fmt.Fprintf(&b, "  legacy %d", g.Legacy)
		}
		if g.AbsentWorkersToDelete > 0 {
			fmt.Fprintf(&b, "  absent-workers-to-delete %d", g.AbsentWorkersToDelete)
		}
		if g.NotVisited {
			b.WriteString("  not visited")
		}
		b.WriteByte('\n')
		for _, i := range byGroup[g.Group] {
			fmt.Fprintf(&b, "  %s\n", p.Actions[i].line())
		}
		if g.Stopped != nil {
			fmt.Fprintf(&b, "  stop %s\n", *g.Stopped)
		}
	}
	for _, r := range p.ExpectationOps.Drop {
		fmt.Fprintf(&b, "expectations drop %s/%s\n", r.Group, cmpOr(r.Pod, r.Token))
	}
	if p.ExpectationOps.ClearCluster {
		b.WriteString("expectations clear cluster\n")
	}
	for _, k := range p.ExpectationOps.DropForming {
		fmt.Fprintf(&b, "expectations drop forming %s/%s\n", k.Group, k.ReplicaName)
	}
	b.WriteString("outcome  ")
	if p.Verdict.RequeueAfter > 0 {
		fmt.Fprintf(&b, "requeue after %s", p.Verdict.RequeueAfter)
	} else {
		b.WriteString("ok (no requeue)")
	}
	if p.Verdict.StoppedAt != "" {
		fmt.Fprintf(&b, "  stopped at %s", p.Verdict.StoppedAt)
	}
	if p.Verdict.Reason.Code != ReasonOK {
		fmt.Fprintf(&b, "  %s", p.Verdict.Reason)
	}
	b.WriteByte('\n')
	return b.String()
}

// line renders one action on one line.
func (a *Action) line() string {
	var s string
	switch a.Kind {
	case ActionCreatePod:
		c := a.Create
		s = "create " + podNameOrPrefix(c.Pod)
		if c.ReplicaIndex >= 0 {
			s += fmt.Sprintf(" index %d", c.ReplicaIndex)
		}
	case ActionCreateReplicaGroup:
		c := a.CreateGroup
		s = fmt.Sprintf("create-group %s index %d hosts %v", c.ReplicaName, c.ReplicaIndex, c.Hosts)
		if c.Retry {
			s += fmt.Sprintf(" retry (attempts %d)", c.Attempts)
		}
		if len(c.Pods) > 0 {
			s += " pods " + podNameOrPrefix(c.Pods[0])
			if len(c.Pods) > 1 {
				s += fmt.Sprintf(" (+%d)", len(c.Pods)-1)
			}
		}
	case ActionDeletePod:
		s = "delete " + a.Delete.Name
		if a.Delete.UID == "" {
			s += " (by name)"
		}
	case ActionDeleteAllOf:
		s = fmt.Sprintf("delete-all %s (%d active)", a.DeleteAll.SelectorString(), a.DeleteAll.Active)
	case ActionPatchPodAnnotations:
		p := a.Patch
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(p.Set)) {
			kv = append(kv, k+"="+p.Set[k])
		}
		s = fmt.Sprintf("patch %s annotations %s", p.Name, strings.Join(kv, ","))
	default:
		s = string(a.Kind)
	}
	return s + "  " + a.Reason.String()
}

func podNameOrPrefix(p *corev1.Pod) string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName + "*"
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

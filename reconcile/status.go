package reconcile

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"strings"

	"github.com/plancore/plancore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore/expectations"
)

// ClusterState is a RayCluster's status.state.
type ClusterState string

// The states KubeRay v1.7 writes. A cluster that is neither keeps the state
// it had: KubeRay never moves a cluster out of "ready" when pods fail.
const (
	StateReady     ClusterState = "ready"
	StateSuspended ClusterState = "suspended"
)

// Condition types and reasons KubeRay v1.7 writes besides the suspend ones
// (ConditionSuspending, ConditionSuspended, ConditionProvisioned).
const (
	ConditionHeadPodReady     = "HeadPodReady"
	ConditionReplicaFailure   = "ReplicaFailure"
	ReasonAllPodsReadyFirst   = "AllPodRunningAndReadyFirstTime"
	ReasonPodsProvisioning    = "RayClusterPodsProvisioning"
	ReasonHeadPodNotFound     = "HeadPodNotFound"
	ReasonHeadPodRunningReady = "HeadPodRunningAndReady"
	ReasonConditionUnknown    = "Unknown"
)

// ClusterStatus is the pods part of a RayCluster's status, with KubeRay's
// JSON names: what Status computes and a controller writes with a status
// patch. Endpoints and head service information are not part of it (they come
// from Services, which no core reads).
type ClusterStatus struct {
	State                   ClusterState                  `json:"state,omitempty"`
	Reason                  string                        `json:"reason,omitempty"`
	ReadyWorkerReplicas     int32                         `json:"readyWorkerReplicas,omitempty"`
	AvailableWorkerReplicas int32                         `json:"availableWorkerReplicas,omitempty"`
	DesiredWorkerReplicas   int32                         `json:"desiredWorkerReplicas,omitempty"`
	MinWorkerReplicas       int32                         `json:"minWorkerReplicas,omitempty"`
	MaxWorkerReplicas       int32                         `json:"maxWorkerReplicas,omitempty"`
	DesiredCPU              resource.Quantity             `json:"desiredCPU,omitempty"`
	DesiredMemory           resource.Quantity             `json:"desiredMemory,omitempty"`
	DesiredGPU              resource.Quantity             `json:"desiredGPU,omitempty"`
	DesiredTPU              resource.Quantity             `json:"desiredTPU,omitempty"`
	LastUpdateTime          *metav1.Time                  `json:"lastUpdateTime,omitempty"`
	StateTransitionTimes    map[ClusterState]*metav1.Time `json:"stateTransitionTimes,omitempty"`
	ObservedGeneration      int64                         `json:"observedGeneration,omitempty"`
	Conditions              []metav1.Condition            `json:"conditions,omitempty"`
}

// StatusInput is what Status reads.
type StatusInput struct {
	// Snapshot is the pass's snapshot: the cluster (its Conditions are the
	// conditions the object holds now), the pods and Now.
	Snapshot Snapshot
	// Previous is the status the object holds now: its State, Reason and
	// StateTransitionTimes carry over. Its Conditions are not read; the
	// cluster's are.
	Previous ClusterStatus
	// Report is Apply's report for this pass's plan, or nil when nothing was
	// applied. Its first failed action sets the ReplicaFailure condition; a
	// report without failures (or nil) removes it.
	Report *Report
}

// ErrMultipleHeads is returned by Status when more than one pod of the
// cluster is labelled as its head: KubeRay refuses to compute a status then.
var ErrMultipleHeads = errors.New("reconcile: found multiple head pods")

// Status computes the pods part of a RayCluster's status the way KubeRay
// v1.7's calculateStatus does: worker counts (ready, available, desired, min,
// max), desired resources, the state (ready when every pod of the cluster,
// head included, is running and ready and their number is the desired
// workers plus one; suspended when spec.suspend holds and no pod is left),
// and, with the status-conditions gate on (the default), the HeadPodReady,
// RayClusterProvisioned, suspend and ReplicaFailure conditions. Pods are
// the snapshot's pods in the cluster's namespace labelled with its name, as
// KubeRay lists them; time comes from Snapshot.Now only.
func Status(in StatusInput, o Options) (ClusterStatus, error) {
	if err := o.Validate(); err != nil {
		return ClusterStatus{}, err
	}
	if err := plancore.Invalid(ErrInvalidInput, in.Snapshot.validate()); err != nil {
		return ClusterStatus{}, err
	}
	c := &in.Snapshot.Cluster
	now := metav1.NewTime(in.Snapshot.Now)
	pods := clusterPods(c, in.Snapshot.Pods)
	failure := replicaFailure(in.Report)

	st := ClusterStatus{
		State:              in.Previous.State,
		Reason:             in.Previous.Reason,
		ObservedGeneration: c.Generation,
		Conditions:         append([]metav1.Condition(nil), c.Conditions...),
	}
	gate := o.statusConditions()
	if gate {
		setReplicaFailure(&st.Conditions, failure, in.Report, now)
	}
	st.ReadyWorkerReplicas, st.AvailableWorkerReplicas = countWorkers(pods)
	st.DesiredWorkerReplicas, st.MinWorkerReplicas, st.MaxWorkerReplicas = replicaTotals(c, o.Compat)
	desired := desiredResources(c, o.Compat)
	st.DesiredCPU = desired[corev1.ResourceCPU]
	st.DesiredMemory = desired[corev1.ResourceMemory]
	st.DesiredGPU = sumGPUs(desired)
	st.DesiredTPU = desired["google.com/tpu"]

	if failure == nil && len(pods) == int(st.DesiredWorkerReplicas)+1 && allRunningAndReady(pods) {
		st.State, st.Reason = StateReady, ""
	}
	if gate {
		inFlight, err := callsInFlight(&in.Snapshot)
		if err != nil {
			return ClusterStatus{}, err
		}
		if err := setPodConditions(&st.Conditions, c, pods, inFlight, now); err != nil {
			return ClusterStatus{}, err
		}
	}
	if c.Spec.Suspend != nil && *c.Spec.Suspend && len(pods) == 0 {
		st.State = StateSuspended
	}
	st.LastUpdateTime = &now
	st.StateTransitionTimes = maps.Clone(in.Previous.StateTransitionTimes)
	if st.State != in.Previous.State {
		if st.StateTransitionTimes == nil {
			st.StateTransitionTimes = map[ClusterState]*metav1.Time{}
		}
		at := now
		st.StateTransitionTimes[st.State] = &at
	}
	return st, nil
}

// clusterPods are the pods KubeRay lists for a cluster: same namespace,
// labelled ray.io/cluster=<name>, terminating ones included.
func clusterPods(c *Cluster, all []corev1.Pod) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range all {
		p := &all[i]
		if p.Namespace == c.Namespace && p.Labels[LabelCluster] == c.Name {
			pods = append(pods, p)
		}
	}
	return pods
}

// replicaFailure returns the first failed action's error (patches excluded,
// as in Report.Err), or nil.
func replicaFailure(r *Report) error {
	if r == nil {
		return nil
	}
	return r.Err()
}

// setReplicaFailure sets ReplicaFailure from the first failure reason of a
// failed report, and removes it after a pass without failures. A failure
// without a KubeRay reason leaves the condition as it is, as KubeRay does.
func setReplicaFailure(conds *[]metav1.Condition, failure error, r *Report, now metav1.Time) {
	if failure == nil {
		meta.RemoveStatusCondition(conds, ConditionReplicaFailure)
		return
	}
	reason := ""
	for _, res := range r.Results {
		var f failureError
		if res.Err != nil && res.Kind != ActionPatchPodAnnotations && errors.As(res.Err, &f) {
			reason = string(f.reason)
			break
		}
	}
	if reason == "" {
		return
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: ConditionReplicaFailure, Status: metav1.ConditionTrue, Reason: reason,
		Message: failure.Error(), LastTransitionTime: now,
	})
}

// countWorkers counts worker pods that are running and ready, and those
// running.
func countWorkers(pods []*corev1.Pod) (ready, available int32) {
	for _, p := range pods {
		if p.Labels[LabelNodeType] != NodeTypeWorker {
			continue
		}
		if runningAndReady(p) {
			ready++
		}
		if p.Status.Phase == corev1.PodRunning {
			available++
		}
	}
	return ready, available
}

func runningAndReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// allRunningAndReady is KubeRay's CheckAllPodsRunning: at least one pod,
// every pod running, and no pod with a Ready condition that is not true (a pod
// without a Ready condition passes).
func allRunningAndReady(pods []*corev1.Pod) bool {
	if len(pods) == 0 {
		return false
	}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning {
			return false
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status != corev1.ConditionTrue {
				return false
			}
		}
	}
	return true
}

// replicaTotals are the desired, min and max worker pods of the cluster:
// replicas clamped to [min, max] (0 for a suspended group) times hosts, min
// times hosts and max (unset: MaxInt32) times hosts over groups that are not
// suspended, each saturated at MaxInt32.
func replicaTotals(c *Cluster, compat Compat) (desired, lo, hi int32) {
	var d, l, h int64
	for i := range c.Spec.WorkerGroups {
		g := &c.Spec.WorkerGroups[i]
		hosts := int64(statusHosts(g, compat))
		if g.Suspend != nil && *g.Suspend {
			continue
		}
		d += int64(clampReplicas(g)) * hosts
		if g.MinReplicas != nil {
			l += int64(*g.MinReplicas) * hosts
		}
		maxReplicas := int64(math.MaxInt32)
		if g.MaxReplicas != nil {
			maxReplicas = int64(*g.MaxReplicas)
		}
		h += maxReplicas * hosts
	}
	return saturate32(d), saturate32(l), saturate32(h)
}

// statusHosts is the numOfHosts the status counts with: Decide's rule (0
// means 1 unless Compat.ZeroHostsMeansZeroPods), so the status and the plan
// agree on the desired pods.
func statusHosts(g *WorkerGroup, compat Compat) int32 {
	if g.NumOfHosts <= 0 && !compat.ZeroHostsMeansZeroPods {
		return 1
	}
	return max(g.NumOfHosts, 0)
}

func saturate32(n int64) int32 {
	return int32(min(max(n, math.MinInt32), math.MaxInt32))
}

// desiredResources sums the head pod's resources and, for each group that is
// not suspended, its pod's resources times replicas (as written, not
// clamped, as KubeRay does) times hosts. A container's request wins over its
// limit for the same resource.
func desiredResources(c *Cluster, compat Compat) corev1.ResourceList {
	total := corev1.ResourceList{}
	addResources(total, podResources(&c.Spec.HeadGroup.Template.Spec), 1)
	for i := range c.Spec.WorkerGroups {
		g := &c.Spec.WorkerGroups[i]
		if g.Suspend != nil && *g.Suspend {
			continue
		}
		var replicas int64
		if g.Replicas != nil {
			replicas = int64(*g.Replicas)
		}
		addResources(total, podResources(&g.Template.Spec), replicas*int64(statusHosts(g, compat)))
	}
	return total
}

func podResources(spec *corev1.PodSpec) corev1.ResourceList {
	pod := corev1.ResourceList{}
	for i := range spec.Containers {
		res := &spec.Containers[i].Resources
		for name, q := range res.Requests {
			addQuantity(pod, name, q)
		}
		for name, q := range res.Limits {
			if _, requested := res.Requests[name]; !requested {
				addQuantity(pod, name, q)
			}
		}
	}
	return pod
}

func addResources(total, pod corev1.ResourceList, times int64) {
	for name, q := range pod {
		q = q.DeepCopy()
		q.Mul(times)
		addQuantity(total, name, q)
	}
}

func addQuantity(l corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	if sum, ok := l[name]; ok {
		sum.Add(q)
		l[name] = sum
		return
	}
	l[name] = q.DeepCopy()
}

// migResource matches NVIDIA's MIG resource names, which KubeRay counts as
// GPUs: nvidia.com/mig-<slices>g.<memory>gb.
var migResource = regexp.MustCompile(`nvidia\.com/mig-\d+g\.\d+gb$`)

// sumGPUs adds every non-zero resource whose name ends in "gpu" or is a MIG
// slice.
func sumGPUs(l corev1.ResourceList) resource.Quantity {
	var total resource.Quantity
	for name, q := range l {
		if (strings.HasSuffix(string(name), "gpu") || migResource.MatchString(string(name))) && !q.IsZero() {
			total.Add(q)
		}
	}
	return total
}

// setPodConditions sets HeadPodReady, RayClusterProvisioned and the suspend
// conditions as KubeRay's calculateStatus does with its status-conditions
// gate on.
func setPodConditions(conds *[]metav1.Condition, c *Cluster, pods []*corev1.Pod, inFlight bool, now metav1.Time) error {
	head, err := headPod(c, pods)
	if err != nil {
		return err
	}
	set := func(typ string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, LastTransitionTime: now})
	}
	if head == nil {
		set(ConditionHeadPodReady, metav1.ConditionFalse, ReasonHeadPodNotFound, "Head Pod not found")
	} else {
		cond := headReadyCondition(head)
		cond.LastTransitionTime = now
		meta.SetStatusCondition(conds, cond)
	}

	suspend := suspendStatus(c.Conditions)
	if !meta.IsStatusConditionTrue(*conds, ConditionProvisioned) && suspend != ConditionSuspended {
		// Provisioned turns true once, when every pod is first ready, and
		// stays true until the cluster is suspended.
		if allRunningAndReady(pods) {
			set(ConditionProvisioned, metav1.ConditionTrue, ReasonAllPodsReadyFirst, "All Ray Pods are ready for the first time")
		} else {
			set(ConditionProvisioned, metav1.ConditionFalse, ReasonPodsProvisioning, "RayCluster Pods are being provisioned for first time")
		}
	}
	specSuspend := c.Spec.Suspend != nil && *c.Spec.Suspend
	switch suspend {
	case ConditionSuspending:
		// A create or delete still in flight may have a pod the informer has
		// not shown yet: suspended only once none is (KubeRay flips on the
		// informer's word alone and can leave a fresh head running).
		if len(pods) == 0 && !inFlight {
			set(ConditionProvisioned, metav1.ConditionFalse, ReasonPodsProvisioning, "RayCluster has been suspended")
			set(ConditionSuspending, metav1.ConditionFalse, ConditionSuspending, "")
			set(ConditionSuspended, metav1.ConditionTrue, ConditionSuspended, "")
		}
	case ConditionSuspended:
		if c.Spec.Suspend != nil && !specSuspend {
			set(ConditionSuspended, metav1.ConditionFalse, ConditionSuspended, "")
		}
	default:
		set(ConditionSuspended, metav1.ConditionFalse, ConditionSuspended, "")
		if specSuspend {
			set(ConditionSuspending, metav1.ConditionTrue, ConditionSuspending, "")
		} else {
			set(ConditionSuspending, metav1.ConditionFalse, ConditionSuspending, "")
		}
	}
	return nil
}

// callsInFlight reports whether the snapshot's expectations hold a create or
// delete of the cluster that its pods do not settle yet.
func callsInFlight(s *Snapshot) (bool, error) {
	st := s.Expectations
	if st == nil {
		return false, nil
	}
	owner := expectations.Owner{Namespace: s.Cluster.Namespace, Name: s.Cluster.Name, UID: s.Cluster.UID}
	groups := st.Groups(owner)
	if len(groups) == 0 {
		return false, nil
	}
	view, err := st.ViewFor(owner, s.Pods)
	if err != nil {
		return false, plancore.Invalid(ErrInvalidInput, field.ErrorList{field.Invalid(field.NewPath("expectations"), owner.String(), err.Error())})
	}
	for _, g := range groups {
		res, err := st.Check(s.Now, owner, g, view)
		if err != nil {
			return false, plancore.Invalid(ErrInvalidInput, field.ErrorList{field.Invalid(field.NewPath("expectations"), g, err.Error())})
		}
		if !res.Satisfied {
			return true, nil
		}
	}
	return false, nil
}

// suspendStatus is the first of RayClusterSuspending and RayClusterSuspended
// that is true, or "".
func suspendStatus(conds []metav1.Condition) string {
	for _, cond := range conds {
		if (cond.Type == ConditionSuspending || cond.Type == ConditionSuspended) && cond.Status == metav1.ConditionTrue {
			return cond.Type
		}
	}
	return ""
}

// headPod is the one pod of the cluster labelled as head, nil when there is
// none, ErrMultipleHeads when there are several.
func headPod(c *Cluster, pods []*corev1.Pod) (*corev1.Pod, error) {
	var head *corev1.Pod
	n := 0
	for _, p := range pods {
		if p.Labels[LabelNodeType] == NodeTypeHead {
			head = p
			n++
		}
	}
	if n > 1 {
		return nil, fmt.Errorf("%w: %d pods of %s/%s are labelled %s=%s", ErrMultipleHeads, n, c.Namespace, c.Name, LabelNodeType, NodeTypeHead)
	}
	return head, nil
}

// headReadyCondition mirrors the head pod's Ready condition: its status and
// message, its reason (HeadPodRunningAndReady when ready without one), and
// for ContainersNotReady the first waiting or terminated container's reason
// and message.
func headReadyCondition(head *corev1.Pod) metav1.Condition {
	cond := metav1.Condition{Type: ConditionHeadPodReady, Status: metav1.ConditionFalse, Reason: ReasonConditionUnknown}
	for _, pc := range head.Status.Conditions {
		if pc.Type != corev1.PodReady {
			continue
		}
		cond.Status, cond.Message = metav1.ConditionStatus(pc.Status), pc.Message
		reason := pc.Reason
		if pc.Status == corev1.ConditionTrue && reason == "" {
			reason = ReasonHeadPodRunningReady
		}
		if reason != "" {
			cond.Reason = reason
		}
		if reason == "ContainersNotReady" {
			if r, msg, ok := firstNotReadyContainer(head); ok {
				if cond.Message != "" {
					cond.Message += "; "
				}
				cond.Message += msg
				cond.Reason = r
			}
		}
		break
	}
	return cond
}

func firstNotReadyContainer(p *corev1.Pod) (reason, message string, ok bool) {
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			return cs.State.Waiting.Reason, cs.Name + ": " + cs.State.Waiting.Message, true
		case cs.State.Terminated != nil:
			return cs.State.Terminated.Reason, cs.Name + ": " + cs.State.Terminated.Message, true
		}
	}
	return "", "", false
}

package reconcile_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/plancore/plancore/internal/invalidtest"
	"github.com/plancore/plancore/reconcile"
	"github.com/plancore/plancore/reconcile/reconciletest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
)

// sc is a condition as Status writes it, without its transition time.
type sc struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// conds renders conditions by type for comparison.
func conds(cs []metav1.Condition) map[string]sc {
	out := map[string]sc{}
	for _, c := range cs {
		out[c.Type] = sc{c.Status, c.Reason, c.Message}
	}
	return out
}

func setCond(c *reconcile.Cluster, typ string, status metav1.ConditionStatus) {
	meta.SetStatusCondition(&c.Conditions, metav1.Condition{Type: typ, Status: status, Reason: typ, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))})
}

// statusOf runs Status with the default options and no report.
func statusOf(t *testing.T, s reconcile.Snapshot, previous reconcile.ClusterStatus) reconcile.ClusterStatus {
	t.Helper()
	st, err := reconcile.Status(reconcile.StatusInput{Snapshot: s, Previous: previous}, opts())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// KubeRay v1.7's calculateStatus, pods part, scenario by scenario.
func TestStatusConditions(t *testing.T) {
	notFound := sc{metav1.ConditionFalse, reconcile.ReasonHeadPodNotFound, "Head Pod not found"}
	headReady := sc{metav1.ConditionTrue, reconcile.ReasonHeadPodRunningReady, ""}
	provisioned := sc{metav1.ConditionTrue, reconcile.ReasonAllPodsReadyFirst, "All Ray Pods are ready for the first time"}
	provisioning := sc{metav1.ConditionFalse, reconcile.ReasonPodsProvisioning, "RayCluster Pods are being provisioned for first time"}
	notSuspending := sc{metav1.ConditionFalse, reconcile.ConditionSuspending, ""}
	notSuspended := sc{metav1.ConditionFalse, reconcile.ConditionSuspended, ""}
	waitingHead := head("rc-head-aaaaa", notReady(), func(p *corev1.Pod) {
		p.Status.Conditions[0].Reason, p.Status.Conditions[0].Message = "ContainersNotReady", "containers with unready status: [ray]"
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "ray", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
	})
	cases := []struct {
		name      string
		cluster   func(*reconcile.Cluster)
		pods      []corev1.Pod
		previous  reconcile.ClusterState
		wantState reconcile.ClusterState
		want      map[string]sc
	}{
		{"all pods ready: ready and provisioned", nil,
			withHead(worker("w1", "g"), worker("w2", "g")), "", reconcile.StateReady,
			map[string]sc{reconcile.ConditionHeadPodReady: headReady, reconcile.ConditionProvisioned: provisioned,
				reconcile.ConditionSuspending: notSuspending, reconcile.ConditionSuspended: notSuspended}},
		{"a worker not ready: provisioning, state kept", nil,
			withHead(worker("w1", "g"), worker("w2", "g", notReady())), "", "",
			map[string]sc{reconcile.ConditionHeadPodReady: headReady, reconcile.ConditionProvisioned: provisioning,
				reconcile.ConditionSuspending: notSuspending, reconcile.ConditionSuspended: notSuspended}},
		{"a pod missing: not ready although every pod is", nil,
			withHead(worker("w1", "g")), "", "",
			map[string]sc{reconcile.ConditionHeadPodReady: headReady, reconcile.ConditionProvisioned: provisioned,
				reconcile.ConditionSuspending: notSuspending, reconcile.ConditionSuspended: notSuspended}},
		{"no head", nil,
			[]corev1.Pod{worker("w1", "g"), worker("w2", "g")}, "", "",
			map[string]sc{reconcile.ConditionHeadPodReady: notFound, reconcile.ConditionProvisioned: provisioned,
				reconcile.ConditionSuspending: notSuspending, reconcile.ConditionSuspended: notSuspended}},
		{"head waiting on its image: the container's reason", nil,
			[]corev1.Pod{waitingHead, worker("w1", "g"), worker("w2", "g")}, "", "",
			map[string]sc{reconcile.ConditionHeadPodReady: {metav1.ConditionFalse, "ImagePullBackOff", "containers with unready status: [ray]; ray: Back-off pulling image"},
				reconcile.ConditionProvisioned: provisioning, reconcile.ConditionSuspending: notSuspending, reconcile.ConditionSuspended: notSuspended}},
		{"provisioned once stays provisioned; ready stays ready", func(c *reconcile.Cluster) {
			setCond(c, reconcile.ConditionProvisioned, metav1.ConditionTrue)
		}, withHead(worker("w1", "g", phase(corev1.PodFailed)), worker("w2", "g")), reconcile.StateReady, reconcile.StateReady,
			map[string]sc{reconcile.ConditionHeadPodReady: headReady, reconcile.ConditionProvisioned: {metav1.ConditionTrue, reconcile.ConditionProvisioned, ""},
				reconcile.ConditionSuspending: notSuspending, reconcile.ConditionSuspended: notSuspended}},
		{"spec.suspend: suspending", func(c *reconcile.Cluster) { c.Spec.Suspend = bptr(true) },
			withHead(worker("w1", "g"), worker("w2", "g")), reconcile.StateReady, reconcile.StateReady,
			map[string]sc{reconcile.ConditionHeadPodReady: headReady, reconcile.ConditionProvisioned: provisioned,
				reconcile.ConditionSuspending: {metav1.ConditionTrue, reconcile.ConditionSuspending, ""}, reconcile.ConditionSuspended: notSuspended}},
		{"suspending with pods left: unchanged", func(c *reconcile.Cluster) {
			c.Spec.Suspend = bptr(true)
			setCond(c, reconcile.ConditionSuspending, metav1.ConditionTrue)
		}, []corev1.Pod{worker("w1", "g")}, reconcile.StateReady, reconcile.StateReady,
			map[string]sc{reconcile.ConditionHeadPodReady: notFound, reconcile.ConditionProvisioned: provisioned,
				reconcile.ConditionSuspending: {metav1.ConditionTrue, reconcile.ConditionSuspending, ""}}},
		{"suspending, every pod gone: suspended", func(c *reconcile.Cluster) {
			c.Spec.Suspend = bptr(true)
			setCond(c, reconcile.ConditionSuspending, metav1.ConditionTrue)
		}, nil, reconcile.StateReady, reconcile.StateSuspended,
			map[string]sc{reconcile.ConditionHeadPodReady: notFound, reconcile.ConditionProvisioned: {metav1.ConditionFalse, reconcile.ReasonPodsProvisioning, "RayCluster has been suspended"},
				reconcile.ConditionSuspending: notSuspending, reconcile.ConditionSuspended: {metav1.ConditionTrue, reconcile.ConditionSuspended, ""}}},
		{"suspended, spec.suspend false: resumes", func(c *reconcile.Cluster) {
			c.Spec.Suspend = bptr(false)
			setCond(c, reconcile.ConditionSuspended, metav1.ConditionTrue)
		}, nil, reconcile.StateSuspended, reconcile.StateSuspended,
			map[string]sc{reconcile.ConditionHeadPodReady: notFound, reconcile.ConditionSuspended: notSuspended}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(group("g", 2))
			if tc.cluster != nil {
				tc.cluster(&c)
			}
			st := statusOf(t, snap(c, tc.pods...), reconcile.ClusterStatus{State: tc.previous})
			if st.State != tc.wantState {
				t.Errorf("state = %q, want %q", st.State, tc.wantState)
			}
			if diff := cmp.Diff(tc.want, conds(st.Conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusCounts(t *testing.T) {
	gpuWorker := group("gpu", 3)
	gpuWorker.NumOfHosts = 2
	gpuWorker.MinReplicas, gpuWorker.MaxReplicas = i32(1), i32(math.MaxInt32)
	gpuWorker.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("1")},
	}
	mig := group("mig", 1)
	mig.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("2"), "google.com/tpu": resource.MustParse("4")}
	parked := group("parked", 5)
	parked.Suspend = bptr(true)
	parked.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}
	over := group("over", 12) // replicas above max 10: desired counts 10, resources count 12
	over.MinReplicas = i32(2)
	over.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	c := cluster(gpuWorker, mig, parked, over)
	c.Generation = 7
	c.Spec.HeadGroup.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}

	pods := withHead(worker("g1", "gpu"), worker("g2", "gpu", notReady()), worker("g3", "gpu", phase(corev1.PodPending)),
		worker("m1", "mig"),
		worker("other", "gpu", func(p *corev1.Pod) { p.Labels[reconcile.LabelCluster] = "another" }),
		worker("elsewhere", "gpu", func(p *corev1.Pod) { p.Namespace = "other-ns" }))
	st := statusOf(t, snap(c, pods...), reconcile.ClusterStatus{})
	got := []int64{int64(st.ReadyWorkerReplicas), int64(st.AvailableWorkerReplicas), int64(st.DesiredWorkerReplicas),
		int64(st.MinWorkerReplicas), int64(st.MaxWorkerReplicas), st.ObservedGeneration}
	// desired: gpu 3×2 + mig 1 + over 10 = 17; min: 1×2 + 0 + 2 = 4;
	// max: MaxInt32×2 saturates.
	if want := []int64{2, 3, 17, 4, math.MaxInt32, 7}; !cmp.Equal(got, want) {
		t.Errorf("ready, available, desired, min, max, observedGeneration = %v, want %v", got, want)
	}
	// cpu: head 1 + gpu 3×2×2 (the request wins over the limit) = 13;
	// memory: 2Gi + over 12×1Gi; gpu: 6 nvidia.com/gpu + 2 MIG slices.
	for name, pair := range map[string][2]resource.Quantity{
		"cpu":    {st.DesiredCPU, resource.MustParse("13")},
		"memory": {st.DesiredMemory, resource.MustParse("14Gi")},
		"gpu":    {st.DesiredGPU, resource.MustParse("8")},
		"tpu":    {st.DesiredTPU, resource.MustParse("4")},
	} {
		if pair[0].Cmp(pair[1]) != 0 {
			t.Errorf("desired %s = %s, want %s", name, pair[0].String(), pair[1].String())
		}
	}
}

func TestStatusTimes(t *testing.T) {
	c := cluster(group("g", 1))
	earlier := metav1.NewTime(t0.Add(-24 * time.Hour))
	prev := reconcile.ClusterStatus{State: "", Reason: "earlier", StateTransitionTimes: map[reconcile.ClusterState]*metav1.Time{reconcile.StateSuspended: &earlier}}
	st := statusOf(t, snap(c, withHead(worker("w1", "g"))...), prev)
	if st.State != reconcile.StateReady || st.Reason != "" {
		t.Errorf("state %q reason %q, want ready without a reason", st.State, st.Reason)
	}
	want := map[reconcile.ClusterState]*metav1.Time{reconcile.StateSuspended: &earlier, reconcile.StateReady: ptr(metav1.NewTime(t0))}
	if diff := cmp.Diff(want, st.StateTransitionTimes); diff != "" {
		t.Errorf("transition times (-want +got):\n%s", diff)
	}
	if prev.StateTransitionTimes[reconcile.StateReady] != nil {
		t.Error("Status wrote into the previous status's map")
	}
	if st.LastUpdateTime == nil || !st.LastUpdateTime.Time.Equal(t0) {
		t.Errorf("lastUpdateTime = %v, want Now", st.LastUpdateTime)
	}
	for _, cd := range st.Conditions {
		if !cd.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("condition %s changed at %v, want Now (never the wall clock)", cd.Type, cd.LastTransitionTime)
		}
	}
	// Unchanged state: no new transition time.
	again := statusOf(t, snap(c, withHead(worker("w1", "g"))...), st)
	if len(again.StateTransitionTimes) != 2 || !again.StateTransitionTimes[reconcile.StateReady].Time.Equal(t0) {
		t.Errorf("transition times after an unchanged state: %v", again.StateTransitionTimes)
	}
}

func ptr[T any](v T) *T { return &v }

// failingExecutor fails every create with a server error.
type failingExecutor struct{ reconcile.Executor }

func (failingExecutor) CreatePod(context.Context, *corev1.Pod) (*corev1.Pod, error) {
	return nil, errors.New("admission webhook denied the request")
}

func TestStatusReplicaFailure(t *testing.T) {
	c := cluster(group("g", 2))
	s := snap(c, withHead(worker("w1", "g"))...)
	plan, err := reconcile.Decide(s, opts())
	if err != nil {
		t.Fatal(err)
	}
	report, err := reconcile.Apply(context.Background(), plan, failingExecutor{})
	if err == nil {
		t.Fatal("Apply with a failing executor succeeded")
	}
	st, err := reconcile.Status(reconcile.StatusInput{Snapshot: s, Report: &report}, opts())
	if err != nil {
		t.Fatal(err)
	}
	got := meta.FindStatusCondition(st.Conditions, reconcile.ConditionReplicaFailure)
	if got == nil || got.Status != metav1.ConditionTrue || got.Reason != string(reconcile.FailedCreateWorkerPod) || got.Message != report.Err().Error() {
		t.Fatalf("ReplicaFailure = %+v, want FailedCreateWorkerPod with the report's error", got)
	}
	// The next pass without failures removes it.
	s.Cluster.Conditions = st.Conditions
	st, err = reconcile.Status(reconcile.StatusInput{Snapshot: s, Report: &reconcile.Report{}}, opts())
	if err != nil || meta.FindStatusCondition(st.Conditions, reconcile.ConditionReplicaFailure) != nil {
		t.Fatalf("after a clean pass: %v, %v", st.Conditions, err)
	}
}

func TestStatusGateOff(t *testing.T) {
	c := cluster(group("g", 1))
	setCond(&c, "Custom", metav1.ConditionTrue)
	o := opts()
	o.Gates.StatusConditions = reconcile.GateOff
	st, err := reconcile.Status(reconcile.StatusInput{Snapshot: snap(c, withHead(worker("w1", "g"))...)}, o)
	if err != nil || st.State != reconcile.StateReady {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if diff := cmp.Diff(c.Conditions, st.Conditions, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("with the gate off the conditions must stay as they are (-want +got):\n%s", diff)
	}
}

func TestStatusRefusals(t *testing.T) {
	c := cluster(group("g", 1))
	_, err := reconcile.Status(reconcile.StatusInput{Snapshot: snap(c, head("h1"), head("h2"))}, opts())
	if !errors.Is(err, reconcile.ErrMultipleHeads) {
		t.Errorf("two heads: %v, want ErrMultipleHeads", err)
	}
	bad := snap(c)
	bad.Now = time.Time{}
	bad.Cluster.Spec.WorkerGroups[0].Replicas = i32(-1)
	_, err = reconcile.Status(reconcile.StatusInput{Snapshot: bad}, opts())
	invalidtest.Check(t, err, reconcile.ErrInvalidInput, []string{"spec.workerGroupSpecs[0].replicas", "now"})
}

// Status agrees with Decide on the desired worker pods, counts only pods it
// can see, and never writes to its input. Breaking statusHosts (hosts 0 as 0
// without the compat switch) makes it fail.
func TestPropertyStatusMatchesPlan(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := reconciletest.Snapshot(3).Draw(rt, "snapshot")
		o := reconciletest.Options(rapid.Bool().Draw(rt, "compat")).Draw(rt, "options")
		before := reconciletest.Clone(s)
		plan, err := reconcile.Decide(s, o)
		if err != nil {
			rt.Skip("invalid snapshot")
		}
		st, err := reconcile.Status(reconcile.StatusInput{Snapshot: s}, o)
		if errors.Is(err, reconcile.ErrMultipleHeads) {
			return
		}
		if err != nil {
			rt.Fatal(err)
		}
		var desired int64
		for _, g := range plan.Groups {
			desired += int64(g.Desired)
		}
		if int64(st.DesiredWorkerReplicas) != min(desired, math.MaxInt32) {
			rt.Fatalf("status desires %d workers, the plan %d", st.DesiredWorkerReplicas, desired)
		}
		if st.ReadyWorkerReplicas > st.AvailableWorkerReplicas || int(st.AvailableWorkerReplicas) > len(s.Pods) {
			rt.Fatalf("ready %d, available %d of %d pods", st.ReadyWorkerReplicas, st.AvailableWorkerReplicas, len(s.Pods))
		}
		if diff := snapshotDiff(before, s); diff != "" {
			rt.Fatalf("Status or Decide wrote to the snapshot:\n%s", diff)
		}
	})
}

package reconcile_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/reconcile"
)

func exampleCluster() reconcile.Cluster {
	three, zero, ten := int32(3), int32(0), int32(10)
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-worker", Image: "rayproject/ray:2.9.0"}}}}
	return reconcile.Cluster{
		Name: "raycluster-sample", Namespace: "default", UID: "4f1c",
		Spec: reconcile.ClusterSpec{
			HeadGroup: reconcile.HeadGroup{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.9.0"}}}}},
			WorkerGroups: []reconcile.WorkerGroup{{
				GroupName: "small-group", Replicas: &three, MinReplicas: &zero, MaxReplicas: &ten, NumOfHosts: 1, Template: tmpl,
			}},
		},
	}
}

// A fresh cluster gets its head and every worker in one plan.
func ExampleDecide() {
	plan, err := reconcile.Decide(reconcile.Snapshot{
		Cluster: exampleCluster(),
		Now:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}, reconcile.Options{OperatorVersion: "v1.7.0"})
	if err != nil {
		panic(err)
	}
	fmt.Print(plan)
	// Output:
	// plan default/raycluster-sample  hash BDG5DVJ9DVFP62M1639EDBT317GVQ5CP
	// head  observed 0  terminating 0  unhealthy 0
	//   create raycluster-sample-head-*  HeadCreate: no head pod: creating one
	// group small-group  desired 3 (replicas 3, min 0, max 10, hosts 1)  observed 0  terminating 0  unhealthy 0
	//   create raycluster-sample-small-group-worker-* index 0  ScaleUp: scaling up: 0 of 3 worker pods running
	//   create raycluster-sample-small-group-worker-* index 1  ScaleUp: scaling up: 0 of 3 worker pods running
	//   create raycluster-sample-small-group-worker-* index 2  ScaleUp: scaling up: 0 of 3 worker pods running
	// outcome  ok (no requeue)
}

// A worked example: the autoscaler names pod2 and a pod that is
// gone. KubeRay sends a DELETE for both and picks pod1 by list order;
// plancore deletes only its member and picks the top-ranked surplus pod.
func ExampleDecide_workersToDelete() {
	c := exampleCluster()
	on := true
	c.Spec.EnableInTreeAutoscaling = &on
	c.Spec.WorkerGroups[0].ScaleStrategy.WorkersToDelete = []string{"pod2", "missing"}
	var pods []corev1.Pod
	for i := 1; i <= 5; i++ {
		ready := corev1.ConditionTrue
		if i == 4 {
			ready = corev1.ConditionFalse
		}
		pods = append(pods, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod%d", i), Namespace: "default", UID: types.UID(fmt.Sprint("u", i)),
				Labels: map[string]string{reconcile.LabelCluster: "raycluster-sample", reconcile.LabelGroup: "small-group", reconcile.LabelNodeType: "worker"}},
			Spec:   corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "ray-worker"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		})
	}
	pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "head", Namespace: "default",
		Labels: map[string]string{reconcile.LabelCluster: "raycluster-sample", reconcile.LabelNodeType: "head"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	for _, compat := range []bool{false, true} {
		o := reconcile.Options{OperatorVersion: "v1.7.0", RandomPodDelete: true}
		if compat {
			o.Compat = reconcile.KubeRayV170().Compat
		}
		plan, _ := reconcile.Decide(reconcile.Snapshot{Cluster: c, Pods: pods, Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, o)
		fmt.Println("compat:", compat)
		for _, a := range plan.Actions {
			fmt.Printf("  delete %s (%s)\n", a.Delete.Name, a.Reason.Code)
		}
		fmt.Println("  absent workersToDelete:", plan.Groups[0].AbsentWorkersToDelete)
	}
	// Output:
	// compat: false
	//   delete pod2 (WorkersToDelete)
	//   delete pod4 (ScaleDown)
	//   absent workersToDelete: 1
	// compat: true
	//   delete missing (WorkersToDelete)
	//   delete pod2 (WorkersToDelete)
	//   delete pod1 (ScaleDown)
	//   absent workersToDelete: 0
}

// Apply runs a plan through an executor — here the in-memory pod store of
// package fake — recording each action's expectation around its call.
func ExampleApply() {
	w := fake.NewWorld(1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := fake.NewPodStore(w, fake.PodStoreOptions{})
	tracker, _ := expectations.NewTracker(expectations.Options{})
	w.Faults.FailNext(fake.KindPodCreate, 1, fmt.Errorf("etcd timeout")) // the head's create fails

	plan, _ := reconcile.Decide(reconcile.Snapshot{Cluster: exampleCluster(), Now: w.Clock.Now()},
		reconcile.Options{OperatorVersion: "v1.7.0"})
	applier := reconcile.Applier{Expectations: tracker, Clock: w.Clock, KeepGoing: true}
	report, _ := applier.Apply(context.Background(), plan, fake.NewReconcileExecutor(store))
	for _, r := range report.Results {
		fmt.Println(r.Kind, r.Target, r.Status, r.Created)
	}
	fmt.Println("pods:", len(store.Pods("default")), "expectations:", tracker.Len())
	// Output:
	// CreatePod raycluster-sample-head-* ambiguous []
	// CreatePod raycluster-sample-small-group-worker-* done [raycluster-sample-small-group-worker-jm9pg]
	// CreatePod raycluster-sample-small-group-worker-* done [raycluster-sample-small-group-worker-5wzxt]
	// CreatePod raycluster-sample-small-group-worker-* done [raycluster-sample-small-group-worker-p9q89]
	// pods: 3 expectations: 4
}

// Status after a pass: every pod ready, so the cluster is ready and
// provisioned.
func ExampleStatus() {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	one := int32(1)
	c := reconcile.Cluster{Name: "demo", Namespace: "ml", UID: "uid-demo", Spec: reconcile.ClusterSpec{
		HeadGroup:    reconcile.HeadGroup{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray", Image: "rayproject/ray:2.41.0"}}}}},
		WorkerGroups: []reconcile.WorkerGroup{{GroupName: "cpu", Replicas: &one, MinReplicas: &one, MaxReplicas: &one, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray", Image: "rayproject/ray:2.41.0"}}}}}},
	}}
	pod := func(name, nodeType string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml", Labels: map[string]string{reconcile.LabelCluster: "demo", reconcile.LabelNodeType: nodeType}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
	}
	snap := reconcile.Snapshot{Cluster: c, Pods: []corev1.Pod{pod("demo-head", "head"), pod("demo-cpu-worker-1", "worker")}, Now: now}
	st, err := reconcile.Status(reconcile.StatusInput{Snapshot: snap}, reconcile.Options{OperatorVersion: "v1.7.0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("state %s, ready workers %d of %d\n", st.State, st.ReadyWorkerReplicas, st.DesiredWorkerReplicas)
	for _, cond := range st.Conditions {
		fmt.Printf("%s=%s (%s)\n", cond.Type, cond.Status, cond.Reason)
	}
	// Output:
	// state ready, ready workers 1 of 1
	// HeadPodReady=True (HeadPodRunningAndReady)
	// RayClusterProvisioned=True (AllPodRunningAndReadyFirstTime)
	// RayClusterSuspended=False (RayClusterSuspended)
	// RayClusterSuspending=False (RayClusterSuspending)
}

// DecodeRayCluster names every field KubeRay does not define.
func ExampleDecodeRayCluster() {
	_, _, err := reconcile.DecodeRayCluster([]byte(`
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: demo}
spec:
  headGroupSpec: {rayStartParams: {}, template: {spec: {containers: [{name: ray, image: rayproject/ray}]}}}
  workerGroupSpecs:
  - {groupName: cpu, replicaz: 2, rayStartParams: {}, template: {spec: {containers: [{name: ray, imagee: x}]}}}
`))
	fmt.Println(err)
	// Output:
	// reconcile: invalid input: spec.workerGroupSpecs[0].replicaz: Forbidden: unknown field; spec.workerGroupSpecs[0].template.spec.containers[0].imagee: Forbidden: unknown field
}

// CheckPlan names every invariant a plan breaks: run it on each plan in a
// property over your controller (see package reconciletest). Here a plan is
// checked as Decide made it, then with a second head create added.
func ExampleCheckPlan() {
	in := reconcile.Snapshot{Cluster: exampleCluster(), Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	o := reconcile.Options{OperatorVersion: "v1.7.0"}
	plan, err := reconcile.Decide(in, o)
	if err != nil {
		panic(err)
	}
	fmt.Println("as decided:", reconcile.CheckPlan(in, o, plan))
	plan.Actions = append(plan.Actions, plan.Actions[0])
	fmt.Println("broken:", reconcile.CheckPlan(in, o, plan))
	// Output:
	// as decided: <nil>
	// broken: 2 head creates with 0 head pods
	// counters say place 4, stop 0, delete-all 0; the actions make 5, 0, 0
}

package kube_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/lock"
	"github.com/plancore/plancore/reconcile"
)

// podClient adapts PodExecutor to fake.PodClient, whose conformance suite
// takes pods by value and a fake.DeleteOptions.
type podClient struct{ e *kube.PodExecutor }

func (c podClient) CreatePod(ctx context.Context, pod corev1.Pod) (corev1.Pod, error) {
	p, err := c.e.CreatePod(ctx, &pod)
	if err != nil {
		return corev1.Pod{}, err
	}
	return *p, nil
}

func (c podClient) DeletePod(ctx context.Context, namespace, name string, o fake.DeleteOptions) error {
	return c.e.DeletePod(ctx, namespace, name, o.UID)
}

func (c podClient) GetPod(ctx context.Context, namespace, name string) (corev1.Pod, error) {
	p, err := c.e.GetPod(ctx, namespace, name)
	if err != nil {
		return corev1.Pod{}, err
	}
	return *p, nil
}

func (c podClient) ListPods(ctx context.Context, namespace string, selector labels.Selector) ([]corev1.Pod, error) {
	return c.e.ListPods(ctx, namespace, selector)
}

// TestPodExecutorConformance runs package fake's pod-client contract against
// PodExecutor on the real API server.
func TestPodExecutorConformance(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, 2*time.Minute)
	vs := fake.CheckPodClient(ctx, func(context.Context) (fake.PodClient, string, error) {
		return podClient{&kube.PodExecutor{Client: env.Client}}, env.Namespace(t), nil
	})
	for _, v := range vs {
		t.Error(v)
	}
}

// TestNodeLockStoreConformance runs package fake's lock-store contract against
// NodeLockStore on the real API server (on the Nodes the suite's keys name),
// in both wire formats. In the HAMi format the UID and epoch live in the
// sidecar annotation, which the suite reads as lock.Decide does.
func TestNodeLockStoreConformance(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, time.Minute)
	for _, tc := range []struct {
		name   string
		format kube.WireFormat
	}{{"extended", kube.WireExtended}, {"hami", kube.WireHAMi}} {
		t.Run(tc.name, func(t *testing.T) {
			// The suite's keys name fixed nodes; each clause gets them fresh
			// (an empty store).
			fresh := func() lock.Store {
				for _, n := range []string{"conformance-a", "conformance-b"} {
					node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
					if err := env.Client.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
						t.Fatal(err)
					}
					if err := env.Client.Create(ctx, node); err != nil {
						t.Fatal(err)
					}
				}
				return &kube.NodeLockStore{Client: env.Client, Format: tc.format}
			}
			for _, v := range fake.CheckLockStore(ctx, fresh) {
				t.Error(v)
			}
		})
	}
}

func rayTemplate(container string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: container, Image: "rayproject/ray:2.9.0"}}}}
}

func newOwner(t testing.TB, env *kubetest.Env, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

// TestPodExecutorPreconditionsAndEvents checks what reconcile.Apply relies on
// beyond the pod-client contract: the owner reference, refusing pods of
// another controller, the annotation patch's UID and resourceVersion
// preconditions, the guarded DeleteAllOf, and events on the owner.
func TestPodExecutorPreconditionsAndEvents(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, time.Minute)
	ns := env.Namespace(t)
	owner := newOwner(t, env, ns, "rc")
	rec := record.NewFakeRecorder(100)
	e := &kube.PodExecutor{Client: env.Client, Owner: owner, Recorder: rec}
	yes := true

	plan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "rc-cpu-", Labels: map[string]string{"app": "x", reconcile.LabelNodeType: "worker"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "rc", UID: owner.UID, Controller: &yes}}},
		Spec: rayTemplate("w").Spec,
	}
	p, err := e.CreatePod(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Name, "rc-cpu-") || p.UID == "" {
		t.Fatalf("created pod %s uid %q", p.Name, p.UID)
	}
	if plan.Name != "" || plan.OwnerReferences[0].Kind != "RayCluster" {
		t.Fatal("CreatePod modified the plan's pod")
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "ConfigMap" || ref.APIVersion != "v1" || ref.UID != owner.UID || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Fatalf("controller reference %+v, want the ConfigMap owner", ref)
	}
	stranger := plan.DeepCopy()
	stranger.OwnerReferences[0].UID = "another-incarnation"
	if _, err = e.CreatePod(ctx, stranger); !apierrors.IsBadRequest(err) {
		t.Fatalf("create for another controller UID: %v, want BadRequest", err)
	}
	if c := expectations.Classify(expectations.Create, err, false); c != expectations.CallFailed {
		t.Fatalf("refusal classifies as %v, want a definite failure", c)
	}

	// Annotation patches: a stale resourceVersion or another pod's UID is a
	// Conflict; a current one applies.
	if err := e.PatchPodAnnotations(ctx, ns, p.Name, p.UID, p.ResourceVersion, map[string]string{"k": "1"}); err != nil {
		t.Fatalf("patch: %v", err)
	}
	if err := e.PatchPodAnnotations(ctx, ns, p.Name, p.UID, p.ResourceVersion, map[string]string{"k": "2"}); !apierrors.IsConflict(err) {
		t.Fatalf("patch at a stale resourceVersion: %v, want Conflict", err)
	}
	if err := e.PatchPodAnnotations(ctx, ns, p.Name, "not-"+p.UID, "", map[string]string{"k": "3"}); !apierrors.IsConflict(err) {
		t.Fatalf("patch with another UID: %v, want Conflict", err)
	}
	if err := e.PatchPodAnnotations(ctx, ns, "missing", "", "", map[string]string{"k": "3"}); !apierrors.IsNotFound(err) {
		t.Fatalf("patch of a missing pod: %v, want NotFound", err)
	}
	got, err := e.GetPod(ctx, ns, p.Name)
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations["k"] != "1" {
		t.Fatalf("annotation k = %q after refused patches, want 1", got.Annotations["k"])
	}

	// DeleteAllOf refuses an empty selector and deletes only matching pods.
	other := plan.DeepCopy()
	other.Labels = map[string]string{"app": "y"}
	if _, err := e.CreatePod(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteAllOf(ctx, ns, nil); !apierrors.IsBadRequest(err) {
		t.Fatalf("DeleteAllOf with no selector: %v, want BadRequest", err)
	}
	if err := e.DeleteAllOf(ctx, ns, map[string]string{"app": "x"}); err != nil {
		t.Fatal(err)
	}
	left, err := e.ListPods(ctx, ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Labels["app"] != "y" {
		t.Fatalf("after DeleteAllOf app=x: %d pods left %v", len(left), left)
	}

	var reasons []string
	for len(rec.Events) > 0 {
		reasons = append(reasons, strings.Fields(<-rec.Events)[1])
	}
	want := []string{kube.EventCreatedWorkerPod, kube.EventPatchedPod, kube.EventCreatedWorkerPod, kube.EventDeletedPods}
	if !slices.Equal(reasons, want) {
		t.Fatalf("events %v, want %v", reasons, want)
	}
}

// rayLoop is a RayCluster controller loop on the real API server: an informer
// cache for the pods, an expectations tracker, reconcile.Decide and
// ApplyConcurrently through PodExecutor, and a kubelet that starts pods.
type rayLoop struct {
	t       *testing.T
	env     *kubetest.Env
	ns      string
	cache   cache.Cache
	tracker *expectations.Tracker
	exec    *kube.PodExecutor
	cluster reconcile.Cluster
	owner   expectations.Owner
	forming []reconcile.FormingGroup
	// stale is the informer's list from the previous pass: each pass plans
	// from it, so the view always lags one pass behind the API server (on top
	// of the informer's own lag), and only expectations prevent a second
	// create or delete of the same pod.
	stale []corev1.Pod

	passes, creates, deletes int
}

func (l *rayLoop) workers() int32 { return *l.cluster.Spec.WorkerGroups[0].Replicas }

// live counts the API server's non-terminating pods of the cluster by group
// ("" is the head).
func (l *rayLoop) live(ctx context.Context) map[string]int {
	var list corev1.PodList
	if err := l.env.Client.List(ctx, &list, client.InNamespace(l.ns)); err != nil {
		l.t.Fatal(err)
	}
	n := map[string]int{}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Labels[reconcile.LabelNodeType] == "head" {
			n[""]++
		} else {
			n[p.Labels[reconcile.LabelGroup]]++
		}
	}
	return n
}

// kubelet marks every pending pod Running and Ready.
func (l *rayLoop) kubelet(ctx context.Context) {
	var list corev1.PodList
	if err := l.env.Client.List(ctx, &list, client.InNamespace(l.ns)); err != nil {
		l.t.Fatal(err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.Phase != "" && p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
			continue
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		if err := l.env.Client.Status().Update(ctx, p); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			l.t.Fatalf("kubelet: %v", err)
		}
	}
}

// pass runs one reconcile from the informer's (possibly stale) view and
// checks that it never leaves more pods than desired after creating, or fewer
// after deleting.
func (l *rayLoop) pass(ctx context.Context) reconcile.Plan {
	l.t.Helper()
	l.passes++
	var list corev1.PodList
	if err := l.cache.List(ctx, &list, client.InNamespace(l.ns)); err != nil {
		l.t.Fatal(err)
	}
	pods := list.Items
	if l.stale != nil {
		pods = l.stale
	}
	l.stale = list.Items
	now := time.Now()
	view := expectations.NewView(pods)
	for _, g := range l.tracker.Groups(l.owner) {
		if _, err := l.tracker.Satisfied(now, l.owner, g, view); err != nil {
			l.t.Fatal(err)
		}
	}
	snap := reconcile.Snapshot{Cluster: l.cluster, Pods: pods, Expectations: l.tracker.Snapshot(), Forming: l.forming, Now: now, Seed: 7}
	p, err := reconcile.Decide(snap, reconcile.Options{OperatorVersion: "v1.7.0"})
	if err != nil {
		l.t.Fatal(err)
	}
	rep, _ := kube.ApplyConcurrently(ctx, p, l.exec, reconcile.Applier{Expectations: l.tracker, TokenPrefix: "t-"}, kube.Concurrency{MaxInFlight: 8})
	if err := rep.Err(); err != nil {
		l.t.Fatalf("pass %d: %v\n%s", l.passes, err, p.Explain())
	}
	l.forming = reconcile.UpdateForming(l.forming, p, rep)
	created, deleted := map[string]bool{}, map[string]bool{}
	for _, r := range rep.Results {
		switch r.Kind {
		case reconcile.ActionCreatePod, reconcile.ActionCreateReplicaGroup:
			l.creates += len(r.Created)
			created[r.Group] = true
		case reconcile.ActionDeletePod:
			l.deletes++
			deleted[r.Group] = true
		}
	}
	live := l.live(ctx)
	want := map[string]int{"": 1, "cpu": int(l.workers())}
	for g := range created {
		if live[g] > want[g] {
			l.t.Errorf("pass %d: group %q has %d pods after creating, want at most %d (over-creation)", l.passes, g, live[g], want[g])
		}
	}
	for g := range deleted {
		if live[g] < want[g] {
			l.t.Errorf("pass %d: group %q has %d pods after deleting, want at least %d (over-deletion)", l.passes, g, live[g], want[g])
		}
	}
	l.kubelet(ctx)
	return p
}

// converge runs passes until the API server holds the desired pods, a pass
// plans nothing, and every expectation has settled.
func (l *rayLoop) converge(ctx context.Context, stage string) {
	l.t.Helper()
	for range 300 {
		p := l.pass(ctx)
		live := l.live(ctx)
		if len(p.Actions) == 0 && live[""] == 1 && live["cpu"] == int(l.workers()) && l.tracker.Count(l.owner) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond) // let the informer catch up
	}
	l.t.Fatalf("%s: not converged: %v, want 1 head and %d workers", stage, l.live(ctx), l.workers())
}

// TestReconcileScaleUpAndDown drives a RayCluster-shaped cluster through
// reconcile.Decide and PodExecutor on the real API server, with an informer
// cache that lags: scale 3 → 6, pods deleted behind the controller's back
// (workers and the head), scale down to 2. Expectations must keep every pass
// from creating or deleting too many, and the loop must converge each time.
func TestReconcileScaleUpAndDown(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, 3*time.Minute)
	ns := env.Namespace(t)
	owner := newOwner(t, env, ns, "raycluster")
	informers, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := informers.GetInformer(ctx, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("pod informer did not sync")
	}
	tracker, err := expectations.NewTracker(expectations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	three, zero, ten := int32(3), int32(0), int32(10)
	l := &rayLoop{
		t: t, env: env, ns: ns, cache: informers, tracker: tracker,
		exec: &kube.PodExecutor{Client: env.Client, Owner: owner},
		cluster: reconcile.Cluster{Name: owner.Name, Namespace: ns, UID: owner.UID, Spec: reconcile.ClusterSpec{
			HeadGroup:    reconcile.HeadGroup{Template: rayTemplate("ray-head")},
			WorkerGroups: []reconcile.WorkerGroup{{GroupName: "cpu", Replicas: &three, MinReplicas: &zero, MaxReplicas: &ten, Template: rayTemplate("ray-worker")}},
		}},
		owner: expectations.Owner{Namespace: ns, Name: owner.Name, UID: owner.UID},
	}

	l.converge(ctx, "initial 3 workers")
	six := int32(6)
	l.cluster.Spec.WorkerGroups[0].Replicas = &six
	l.converge(ctx, "scale up to 6")

	// Pods deleted behind the controller's back: two workers and the head.
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	gone := map[string]bool{}
	killed := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Labels[reconcile.LabelNodeType] == "head" || killed < 2 {
			if p.Labels[reconcile.LabelNodeType] != "head" {
				killed++
			}
			if err := env.Client.Delete(ctx, p); err != nil {
				t.Fatal(err)
			}
			gone[p.Name] = true
		}
	}
	l.converge(ctx, "after outside deletions")
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if gone[p.Name] {
			t.Errorf("pod %s was deleted but is back under its old name", p.Name)
		}
	}

	two := int32(2)
	l.cluster.Spec.WorkerGroups[0].Replicas = &two
	l.converge(ctx, "scale down to 2")
	// Every pod the API server holds is owned by the cluster object.
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != owner.UID {
			t.Errorf("pod %s has controller %v", p.Name, ref)
		}
	}
	// 1 head + 3 + 3 (scale up) + 2 workers and the head re-created.
	if l.creates != 10 || l.deletes != 4 {
		t.Errorf("creates %d, deletes %d; want exactly 10 and 4", l.creates, l.deletes)
	}
	if n := tracker.Len(); n != 0 {
		t.Errorf("%d expectation items left after convergence", n)
	}
	t.Logf("converged through %d passes: %d creates, %d deletes", l.passes, l.creates, l.deletes)
}

// TestApplyConcurrentlyStopsAfterFailingBatch checks the concurrency wrapper's
// stop rule with a quota that admits 3 pods: slow start sends 1, then 2, then
// a batch of 4 in which one create fails; the rest of the plan is skipped and
// its expectations are never recorded.
func TestApplyConcurrentlyStopsAfterFailingBatch(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, time.Minute)
	ns := env.Namespace(t)
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("4")}}}
	if err := env.Client.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	// The quota controller is not running: the API server's admission still
	// enforces a quota once its status carries the hard limit and usage.
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	if err := env.Client.Status().Update(ctx, quota); err != nil {
		t.Fatal(err)
	}
	owner := newOwner(t, env, ns, "rc")
	tracker, err := expectations.NewTracker(expectations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ten, zero := int32(10), int32(0)
	cluster := reconcile.Cluster{Name: owner.Name, Namespace: ns, UID: owner.UID, Spec: reconcile.ClusterSpec{
		HeadGroup:    reconcile.HeadGroup{Template: rayTemplate("ray-head")},
		WorkerGroups: []reconcile.WorkerGroup{{GroupName: "cpu", Replicas: &ten, MinReplicas: &zero, MaxReplicas: &ten, Template: rayTemplate("ray-worker")}},
	}}
	p, err := reconcile.Decide(reconcile.Snapshot{Cluster: cluster, Now: time.Now(), Seed: 1}, reconcile.Options{OperatorVersion: "v1.7.0"})
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := kube.ApplyConcurrently(ctx, p, &kube.PodExecutor{Client: env.Client}, reconcile.Applier{Expectations: tracker, TokenPrefix: "t-"}, kube.Concurrency{})
	var statuses []string
	for _, r := range rep.Results {
		statuses = append(statuses, string(r.Status))
	}
	// Head (1), then workers: batch of 1, batch of 2 → 4 pods, the quota; the
	// next batch of 4 fails entirely, the last 3 workers are skipped.
	want := []string{"done", "done", "done", "done", "failed", "failed", "failed", "failed", "skipped", "skipped", "skipped"}
	if !slices.Equal(statuses, want) {
		t.Fatalf("statuses %v, want %v", statuses, want)
	}
	if !rep.Stopped || !errors.Is(rep.Err(), rep.Results[4].Err) || !apierrors.IsForbidden(rep.Results[4].Err) {
		t.Fatalf("report: stopped %v, err %v", rep.Stopped, rep.Err())
	}
	owner2 := expectations.Owner{Namespace: ns, Name: owner.Name, UID: owner.UID}
	if n := tracker.Count(owner2); n != 4 {
		t.Fatalf("%d expectation items, want 4 (the created pods; failures rolled back, skipped never recorded)", n)
	}
}

// BenchmarkPodCreate measures pods created per second through PodExecutor:
// reconcile.Apply one at a time, and ApplyConcurrently with 16 in flight
// (no slow start), each iteration creating a 100-worker cluster from scratch.
func BenchmarkPodCreate(b *testing.B) {
	for _, bc := range []struct {
		name  string
		apply func(context.Context, reconcile.Plan, reconcile.Executor, reconcile.Applier) (reconcile.Report, error)
	}{
		{"sequential", func(ctx context.Context, p reconcile.Plan, e reconcile.Executor, a reconcile.Applier) (reconcile.Report, error) {
			return a.Apply(ctx, p, e)
		}},
		{"concurrent16", func(ctx context.Context, p reconcile.Plan, e reconcile.Executor, o reconcile.Applier) (reconcile.Report, error) {
			return kube.ApplyConcurrently(ctx, p, e, o, kube.Concurrency{MaxInFlight: 16, NoSlowStart: true})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			env := kubetest.Shared(b)
			ctx := testCtx(b, 10*time.Minute)
			hundred, zero := int32(100), int32(0)
			pods := 0
			var elapsed time.Duration
			b.ReportAllocs()
			for i := range b.N {
				b.StopTimer()
				ns := env.Namespace(b)
				cluster := reconcile.Cluster{Name: "bench", Namespace: ns, UID: "bench-uid", Spec: reconcile.ClusterSpec{
					HeadGroup:    reconcile.HeadGroup{Template: rayTemplate("ray-head")},
					WorkerGroups: []reconcile.WorkerGroup{{GroupName: "cpu", Replicas: &hundred, MinReplicas: &zero, MaxReplicas: &hundred, Template: rayTemplate("ray-worker")}},
				}}
				p, err := reconcile.Decide(reconcile.Snapshot{Cluster: cluster, Now: time.Now(), Seed: uint64(i)}, reconcile.Options{OperatorVersion: "v1.7.0"})
				if err != nil {
					b.Fatal(err)
				}
				tracker, _ := expectations.NewTracker(expectations.Options{})
				b.StartTimer()
				start := time.Now()
				rep, _ := bc.apply(ctx, p, &kube.PodExecutor{Client: env.Client}, reconcile.Applier{Expectations: tracker, TokenPrefix: fmt.Sprint(i, "-")})
				elapsed += time.Since(start)
				if err := rep.Err(); err != nil {
					b.Fatal(err)
				}
				for _, r := range rep.Results {
					pods += len(r.Created)
				}
			}
			b.ReportMetric(float64(pods)/elapsed.Seconds(), "pods/s")
		})
	}
}

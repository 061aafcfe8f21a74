package kube_test

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/internal/cputime"
	"github.com/plancore/plancore/reconcile"
)

// startPodCache starts a pod informer cache and returns it with the
// informer's store, whose objects are the cache's own (never copies). The
// cache spans every namespace: a cache restricted to namespaces wraps its
// informers in one that does not expose their stores.
func startPodCache(ctx context.Context, env *kubetest.Env) (cache.Cache, toolscache.Store, error) {
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	if err != nil {
		return nil, nil, err
	}
	if err := kube.IndexPodsByCluster(ctx, c); err != nil {
		return nil, nil, err
	}
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, nil, fmt.Errorf("pod informer did not sync")
	}
	withStore, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil, nil, fmt.Errorf("pod informer %T has no store", inf)
	}
	return c, withStore.GetStore(), nil
}

// podsDiff compares pods with the copies taken before a pass, by name, and
// describes every difference. Unexported fields are compared too.
func podsDiff(before []*corev1.Pod, after []*corev1.Pod) string {
	var b strings.Builder
	for i := range before {
		if !reflect.DeepEqual(before[i], after[i]) {
			fmt.Fprintf(&b, "pod %s/%s changed (-before +after):\n%s", before[i].Namespace, before[i].Name,
				cmp.Diff(before[i], after[i], cmp.Exporter(func(reflect.Type) bool { return true })))
		}
	}
	return b.String()
}

// noCopyLoop is a RayCluster controller loop reading the informer cache
// without copies (PodExecutor.ListPods on a cache), which checks around every
// pass that the cache's objects and the pods handed to the cores are exactly
// as they were before it.
type noCopyLoop struct {
	t       *testing.T
	env     *kubetest.Env
	ns      string
	store   toolscache.Store
	tracker *expectations.Tracker
	exec    *kube.PodExecutor
	lister  *kube.PodLister
	buf     []corev1.Pod
	cluster reconcile.Cluster
	owner   expectations.Owner
	passes  int
}

// pass lists the pods from the cache without copies (PodExecutor.ListPods on
// odd passes, PodLister.AppendClusterPods into the buffer of the previous
// pass on even ones), gates, plans and applies them, and fails the test if
// anything it read was written to.
func (l *noCopyLoop) pass(ctx context.Context) reconcile.Plan {
	l.t.Helper()
	l.passes++
	// The cache's own objects: the informer replaces an object on an update
	// and never changes one in place, so these stay as they are unless
	// someone on the pass writes to them.
	var cached, cachedBefore []*corev1.Pod
	for _, o := range l.store.List() {
		p := o.(*corev1.Pod)
		cached = append(cached, p)
		cachedBefore = append(cachedBefore, p.DeepCopy())
	}
	var pods []corev1.Pod
	var err error
	if l.passes%2 == 1 {
		pods, err = l.exec.ListPods(ctx, l.ns, nil)
	} else {
		l.buf, err = l.lister.AppendClusterPods(l.buf[:0], l.ns, l.cluster.Name)
		pods = l.buf
	}
	if err != nil {
		l.t.Fatal(err)
	}
	// The listed pods share their maps and slices with the cached objects;
	// their own top-level fields are the cores' input too.
	listed := make([]*corev1.Pod, len(pods))
	listedBefore := make([]*corev1.Pod, len(pods))
	for i := range pods {
		listed[i], listedBefore[i] = &pods[i], pods[i].DeepCopy()
	}

	now := time.Now()
	view, err := l.tracker.ViewFor(l.owner, pods)
	if err != nil {
		l.t.Fatal(err)
	}
	for _, g := range l.tracker.Groups(l.owner) {
		if _, err := l.tracker.Satisfied(now, l.owner, g, view); err != nil {
			l.t.Fatal(err)
		}
	}
	snap := reconcile.Snapshot{Cluster: l.cluster, Pods: pods, Expectations: l.tracker.Snapshot(), Now: now, Seed: 3}
	p, err := reconcile.Decide(snap, reconcile.KubeRayV170())
	if err != nil {
		l.t.Fatal(err)
	}
	rep, _ := kube.ApplyConcurrently(ctx, p, l.exec, reconcile.Applier{Expectations: l.tracker, TokenPrefix: "nc-"}, kube.Concurrency{MaxInFlight: 8})
	if err := rep.Err(); err != nil {
		l.t.Fatalf("pass %d: %v\n%s", l.passes, err, p.Explain())
	}

	if d := podsDiff(cachedBefore, cached); d != "" {
		l.t.Fatalf("pass %d wrote to the informer cache's objects:\n%s", l.passes, d)
	}
	if d := podsDiff(listedBefore, listed); d != "" {
		l.t.Fatalf("pass %d wrote to the pods it listed:\n%s", l.passes, d)
	}
	return p
}

// converge runs passes, starting pods like a kubelet in between, until a pass
// plans nothing with the desired pods live and no expectation pending.
func (l *noCopyLoop) converge(ctx context.Context, stage string, workers int) {
	l.t.Helper()
	var p reconcile.Plan
	live := 0
	for range 300 {
		p = l.pass(ctx)
		var list corev1.PodList
		if err := l.env.Client.List(ctx, &list, client.InNamespace(l.ns)); err != nil {
			l.t.Fatal(err)
		}
		live = 0
		for i := range list.Items {
			pod := &list.Items[i]
			if pod.DeletionTimestamp != nil {
				continue
			}
			live++
			if pod.Status.Phase == corev1.PodRunning {
				continue
			}
			pod.Status.Phase = corev1.PodRunning
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
			_ = l.env.Client.Status().Update(ctx, pod) // a conflict or a gone pod is retried next round
		}
		if len(p.Actions) == 0 && live == 1+workers && l.tracker.Count(l.owner) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond) // let the informer catch up
	}
	l.t.Fatalf("%s: not converged to 1 head and %d workers: %d live pods, %d pending expectations, last plan:\n%s",
		stage, workers, live, l.tracker.Count(l.owner), p.Explain())
}

// TestCachedObjectsUntouched runs a RayCluster loop on a real informer cache
// read without copies (creates, a scale-up, a pod deleted behind the loop's
// back, a scale-down) and checks around every pass (list, expectations,
// reconcile.Decide, ApplyConcurrently through PodExecutor) that no cached
// object and no listed pod was written to, for both no-copy reads
// (PodExecutor.ListPods and PodLister.AppendClusterPods, alternately).
// Decide setting a label on its input (in.Pods[0].Labels["x"] = "y") makes
// it fail, on a pass that read with either.
func TestCachedObjectsUntouched(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, 3*time.Minute)
	ns := env.Namespace(t)
	owner := newOwner(t, env, ns, "raycluster")
	informers, store, err := startPodCache(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	tracker, err := expectations.NewTracker(expectations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lister, err := kube.NewPodLister(ctx, informers)
	if err != nil {
		t.Fatal(err)
	}
	three, zero, ten := int32(3), int32(0), int32(10)
	l := &noCopyLoop{
		t: t, env: env, ns: ns, store: store, tracker: tracker,
		exec:   &kube.PodExecutor{Client: env.Client, Reader: informers, Owner: owner},
		lister: lister,
		cluster: reconcile.Cluster{Name: owner.Name, Namespace: ns, UID: owner.UID, Spec: reconcile.ClusterSpec{
			HeadGroup:    reconcile.HeadGroup{Template: rayTemplate("ray-head")},
			WorkerGroups: []reconcile.WorkerGroup{{GroupName: "cpu", Replicas: &three, MinReplicas: &zero, MaxReplicas: &ten, NumOfHosts: 1, Template: rayTemplate("ray-worker")}},
		}},
		owner: expectations.Owner{Namespace: ns, Name: owner.Name, UID: owner.UID},
	}
	l.converge(ctx, "initial 3 workers", 3)
	five := int32(5)
	l.cluster.Spec.WorkerGroups[0].Replicas = &five
	l.converge(ctx, "scale up to 5", 5)

	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{reconcile.LabelNodeType: "worker"}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, &pods.Items[0]); err != nil {
		t.Fatal(err)
	}
	l.converge(ctx, "after an outside deletion", 5)
	two := int32(2)
	l.cluster.Spec.WorkerGroups[0].Replicas = &two
	l.converge(ctx, "scale down to 2", 2)
	t.Logf("%d passes, none wrote to what it read", l.passes)
}

// steady10k is a cluster of one head and 10 groups of 1,000 workers whose
// pods the API server holds, created once per test binary.
type steady10k struct {
	owner   *corev1.ConfigMap
	cluster reconcile.Cluster
	ns      string
	pods    int
	err     error
}

var (
	steadyOnce sync.Once
	steady     steady10k
)

// steadyCluster creates the 10,001 pods of steady10k once: it plans them
// with reconcile.Decide from no pods and creates the plan's pods directly,
// 64 at a time.
func steadyCluster(b *testing.B) *steady10k {
	b.Helper()
	env := kubetest.Shared(b)
	steadyOnce.Do(func() {
		start := time.Now()
		steady.err = steady.setUp(env, env.Namespace(b))
		b.Logf("created %d pods in %v", steady.pods, time.Since(start).Round(time.Second))
	})
	if steady.err != nil {
		b.Fatal(steady.err)
	}
	return &steady
}

func (s *steady10k) setUp(env *kubetest.Env, ns string) error {
	ctx := context.Background()
	s.ns = ns
	s.owner = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rc"}}
	if err := env.Client.Create(ctx, s.owner); err != nil {
		return err
	}
	s.cluster = reconcile.Cluster{Name: s.owner.Name, Namespace: ns, UID: s.owner.UID, Spec: reconcile.ClusterSpec{
		HeadGroup: reconcile.HeadGroup{Template: rayTemplate("ray-head")},
	}}
	for g := range 10 {
		n, zero, most := int32(1000), int32(0), int32(2000)
		s.cluster.Spec.WorkerGroups = append(s.cluster.Spec.WorkerGroups, reconcile.WorkerGroup{
			GroupName: fmt.Sprintf("group-%d", g), Replicas: &n, MinReplicas: &zero, MaxReplicas: &most, NumOfHosts: 1, Template: rayTemplate("ray-worker")})
	}
	p, err := reconcile.Decide(reconcile.Snapshot{Cluster: s.cluster, Now: time.Now(), Seed: 1}, reconcile.KubeRayV170())
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for _, a := range p.Actions {
		if a.Create == nil {
			return fmt.Errorf("setup plan has a %s action", a.Kind)
		}
		g.Go(func() error { return env.Client.Create(gctx, a.Create.Pod.DeepCopy()) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("creating %d pods: %w", len(p.Actions), err)
	}
	s.pods = len(p.Actions)
	return nil
}

// steadyLoop is one controller over steady10k: a started informer cache
// holding all its pods, a tracker and an executor.
type steadyLoop struct {
	*steady10k
	cache   cache.Cache
	exec    *kube.PodExecutor
	tracker *expectations.Tracker
	// decideTime and decideCPU add up the wall time and the thread's CPU
	// time pass spends in reconcile.Decide; last is the snapshot the latest
	// pass handed it.
	decideTime, decideCPU time.Duration
	last                  reconcile.Snapshot
}

// newSteadyLoop starts a cache (stopped when b ends, so the API server can
// shut down) and waits until it holds every pod.
func newSteadyLoop(b *testing.B, s *steady10k) *steadyLoop {
	b.Helper()
	env := kubetest.Shared(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	c, _, err := startPodCache(ctx, env)
	if err != nil {
		b.Fatal(err)
	}
	for {
		var list corev1.PodList
		if err := c.List(ctx, &list, client.InNamespace(s.ns), client.UnsafeDisableDeepCopy); err != nil {
			b.Fatal(err)
		}
		if len(list.Items) == s.pods {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	tracker, err := expectations.NewTracker(expectations.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return &steadyLoop{steady10k: s, cache: c, exec: &kube.PodExecutor{Client: env.Client, Reader: c, Owner: s.owner}, tracker: tracker}
}

// pass is one steady-state reconcile: list the pods (through read), plan,
// apply the (empty) plan through PodExecutor.
func (l *steadyLoop) pass(ctx context.Context, read func() ([]corev1.Pod, error)) (int, error) {
	pods, err := read()
	if err != nil {
		return 0, err
	}
	snap := reconcile.Snapshot{Cluster: l.cluster, Pods: pods, Expectations: l.tracker.Snapshot(), Now: time.Now(), Seed: 1}
	l.last = snap
	start, cpu := time.Now(), cputime.Thread()
	p, err := reconcile.Decide(snap, reconcile.KubeRayV170())
	l.decideTime, l.decideCPU = l.decideTime+time.Since(start), l.decideCPU+cputime.Thread()-cpu
	if err != nil {
		return 0, err
	}
	if _, err := kube.ApplyConcurrently(ctx, p, l.exec, reconcile.Applier{Expectations: l.tracker}, kube.Concurrency{}); err != nil {
		return 0, err
	}
	return len(p.Actions), nil
}

// BenchmarkSteadyPass10k measures a controller's steady-state pass over
// 10,001 pods held by a real informer cache on envtest, beside reconcile.Decide
// alone on the same pods, so the ratio reads off one run:
//
//   - decide: reconcile.Decide alone on exactly the snapshot the last pass
//     handed it (the same slice, cluster, expectations and options);
//
//   - pass: the RayCluster example's pass: the cluster's pods read from the
//     informer's index into the previous pass's slice
//     (kube.PodLister.AppendClusterPods: no List, no copies beyond the
//     slice's shallow ones, no garbage), Decide, ApplyConcurrently of the
//     empty plan through PodExecutor;
//
//   - pass-list: the same with the cache's List by index without deep
//     copies (kube.ClusterPods), which allocates a new Items slice and
//     copies every pod into it on each pass;
//
//   - pass-listpods: the same with PodExecutor.ListPods (no copies, sorted
//     by name) as the read;
//
//   - pass-deepcopy: the same with the cache's default List (by index),
//     which deep-copies every pod: the read the no-copy ones replace.
//
//   - ratio: decide and pass alternately in each iteration, on one locked
//     thread, reporting pass/decide (the ratio the steady-pass target is
//     about, at most 3), in-pass/decide (Decide's time inside the pass over
//     Decide alone on the pass's snapshot: like for like) and both in the
//     thread's CPU time too (-cpu metrics), which a machine busy with other
//     work stretches less than the wall clock. Alternating keeps a change of
//     the machine's load between sub-benchmarks out of the ratios.
//
// Decide costs more here than in reconcile's BenchmarkDecideSteady10k on the
// same number of pods, inside the pass or alone alike: that benchmark's pods
// share their strings (string literals), so every comparison Decide makes
// on a label, a namespace or a phase stops at equal pointers, and they lie
// in memory in the order Decide reads them; an informer's pods each hold
// their own copies of every string, allocated one watch event at a time
// (see reconcile's BenchmarkDecideSteady10kInformer).
//
// The first run creates the pods (about a minute on two cores); later runs
// in the same binary (-count) reuse them, each with a fresh cache.
func BenchmarkSteadyPass10k(b *testing.B) {
	l := newSteadyLoop(b, steadyCluster(b))
	ctx := context.Background()
	list := func(opts ...client.ListOption) func() ([]corev1.Pod, error) {
		return func() ([]corev1.Pod, error) {
			var list corev1.PodList
			if err := l.cache.List(ctx, &list, opts...); err != nil {
				return nil, err
			}
			return list.Items, nil
		}
	}
	noCopy := list(kube.ClusterPods(l.ns, l.cluster.Name)...)
	lister, err := kube.NewPodLister(ctx, l.cache)
	if err != nil {
		b.Fatal(err)
	}
	var buf []corev1.Pod
	reuse := func() ([]corev1.Pod, error) {
		buf, err = lister.AppendClusterPods(buf[:0], l.ns, l.cluster.Name)
		return buf, err
	}
	if n, err := l.pass(ctx, reuse); err != nil || n != 0 {
		b.Fatalf("steady pass: %d actions, %v; want none", n, err)
	}
	o := reconcile.KubeRayV170()
	b.Run("decide", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reconcile.Decide(l.last, o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ratio", func(b *testing.B) {
		// One thread runs both, so that its CPU time is theirs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var decide, pass, decideCPU, passCPU time.Duration
		l.decideTime, l.decideCPU = 0, 0
		for b.Loop() {
			start, cpu := time.Now(), cputime.Thread()
			if _, err := reconcile.Decide(l.last, o); err != nil {
				b.Fatal(err)
			}
			mid, midCPU := time.Now(), cputime.Thread()
			if _, err := l.pass(ctx, reuse); err != nil {
				b.Fatal(err)
			}
			decide, pass = decide+mid.Sub(start), pass+time.Since(mid)
			decideCPU, passCPU = decideCPU+midCPU-cpu, passCPU+cputime.Thread()-midCPU
		}
		n := float64(b.N)
		b.ReportMetric(float64(pass)/float64(decide), "pass/decide")
		b.ReportMetric(float64(l.decideTime)/float64(decide), "in-pass/decide")
		b.ReportMetric(float64(decideCPU)/n, "decide-cpu-ns/op")
		b.ReportMetric(float64(l.decideCPU)/n, "in-pass-cpu-ns/op")
		b.ReportMetric(float64(passCPU)/n, "pass-cpu-ns/op")
		if decideCPU > 0 {
			b.ReportMetric(float64(l.decideCPU)/float64(decideCPU), "in-pass/decide-cpu")
		}
	})
	for _, bc := range []struct {
		name string
		read func() ([]corev1.Pod, error)
	}{
		{"pass", reuse},
		{"pass-list", noCopy},
		{"pass-listpods", func() ([]corev1.Pod, error) { return l.exec.ListPods(ctx, l.ns, nil) }},
		{"pass-deepcopy", list(client.InNamespace(l.ns), client.MatchingFields{kube.PodClusterIndex: l.cluster.Name})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.pass(ctx, bc.read); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPodListerRefusesWrappedInformers: a cache restricted to namespaces
// wraps its informers in one that hides their indexer, so NewPodLister
// cannot read the index and must say so instead of listing nothing.
func TestPodListerRefusesWrappedInformers(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, time.Minute)
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{env.Namespace(t): {}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.NewPodLister(ctx, c); err == nil || !strings.Contains(err.Error(), "does not expose its indexer") {
		t.Fatalf("NewPodLister on a namespace-restricted cache: %v, want a refusal naming the indexer", err)
	}
}

package kube_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

// newGPUPod creates a pod asking for one NVIDIA GPU.
func newGPUPod(t testing.TB, env *kubetest.Env, ns, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cuda", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
	}
	if err := env.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func ref(p *corev1.Pod) gpu.PodRef {
	return gpu.PodRef{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}
}

func newBindExecutor(env *kubetest.Env, rec record.EventRecorder) (*kube.BindExecutor, *kube.NodeLockStore) {
	store := &kube.NodeLockStore{Client: env.Client}
	e := &kube.BindExecutor{
		Client:   env.Client,
		Recorder: rec,
		Locker: &lock.Locker{Store: store, Holder: func(ctx context.Context, _ lock.Key, r lock.Record) lock.Holder {
			var p corev1.Pod
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, &p)
			return lock.ClassifyHolder(&p, err, r, lock.UIDThenName)
		}},
	}
	return e, store
}

// TestBindExecutor runs gpu.ApplyBind through BindExecutor on the real API
// server: a successful Bind (pods/binding, bind-phase and fencing annotations,
// the node lock kept for the device plugin), a Bind to a missing node (the
// failure path: bind-phase=failed, every lock released), and a Bind that
// times out on a lock held by a live pod.
func TestBindExecutor(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, time.Minute)
	ns := env.Namespace(t)
	node := newNode(t, env).Name
	rec := record.NewFakeRecorder(100)
	exec, store := newBindExecutor(env, rec)
	waiter := kube.BindWaiter{Store: store}

	p := newGPUPod(t, env, ns, "train")
	out, err := gpu.ApplyBind(ctx, gpu.BindInput{Pod: ref(p), Node: node, Registry: gpu.DefaultRegistry(), Seed: 1}, exec, waiter)
	if err != nil || !out.Bound {
		t.Fatalf("bind: %+v, %v", out, err)
	}
	var got corev1.Pod
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != node {
		t.Errorf("pod bound to %q, want %q", got.Spec.NodeName, node)
	}
	if got.Annotations[gpu.AnnoBindPhase] != "allocating" || got.Annotations[gpu.AnnoBindTime] == "" ||
		got.Annotations[gpu.AnnoLockEpoch] != lock.HAMiLockName+"=1" {
		t.Errorf("annotations %v", got.Annotations)
	}
	obs, err := store.Get(ctx, lock.NodeKey(node))
	if err != nil {
		t.Fatal(err)
	}
	if !obs.Present || !gpuHeldBy(obs, p) {
		t.Errorf("lock after Bind: %+v, want held by %s for the device plugin", obs, p.Name)
	}
	// Binding again to the same node is idempotent; to another is a Conflict.
	if err := exec.Bind(ctx, ref(p), node); err != nil {
		t.Errorf("second bind to the same node: %v", err)
	}
	if err := exec.Bind(ctx, ref(p), "elsewhere"); !apierrors.IsConflict(err) {
		t.Errorf("bind to another node: %v, want Conflict", err)
	}
	stale := ref(p)
	stale.UID = "another-pod"
	q := newGPUPod(t, env, ns, "replaced")
	stale.Name = q.Name
	if err := exec.Bind(ctx, stale, node); !apierrors.IsConflict(err) {
		t.Errorf("bind with a stale UID: %v, want Conflict", err)
	}

	// A missing node fails the Bind and leaves nothing locked.
	r := newGPUPod(t, env, ns, "lost")
	out, err = gpu.ApplyBind(ctx, gpu.BindInput{Pod: ref(r), Node: "no-such-node", Registry: gpu.DefaultRegistry(), Seed: 1}, exec, waiter)
	if err == nil || out.Bound {
		t.Fatalf("bind to a missing node: %+v, %v", out, err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(r), &got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[gpu.AnnoBindPhase] != "failed" || got.Spec.NodeName != "" {
		t.Errorf("after a failed bind: phase %q node %q", got.Annotations[gpu.AnnoBindPhase], got.Spec.NodeName)
	}

	// The node lock is still held by "train" (alive, allocating): a second pod
	// retries until its deadline, then fails with contention and releases
	// nothing it does not own.
	s := newGPUPod(t, env, ns, "second")
	start := time.Now()
	out, err = gpu.ApplyBind(ctx, gpu.BindInput{Pod: ref(s), Node: node, Registry: gpu.DefaultRegistry(), Seed: 1,
		Options: gpu.Options{RetryDeadline: 600 * time.Millisecond, RetryBase: 50 * time.Millisecond}}, exec, waiter)
	if !errors.Is(err, lock.ErrContention) || out.Bound {
		t.Fatalf("bind against a held lock: %+v, %v; want contention", out, err)
	}
	// The deadline is measured from the Bind's start, so it cannot give up
	// sooner; the upper bound only catches a retry loop that ignores it.
	if d := time.Since(start); d < 600*time.Millisecond || d > 30*time.Second {
		t.Errorf("contended bind gave up after %v, want about the 600ms deadline", d)
	}
	if out.Attempts < 2 {
		t.Errorf("contended bind made %d lock attempts, want retries", out.Attempts)
	}
	obs, _ = store.Get(ctx, lock.NodeKey(node))
	if !gpuHeldBy(obs, p) {
		t.Errorf("the failed bind disturbed train's lock: %+v", obs)
	}
	events := map[string]int{}
	for len(rec.Events) > 0 {
		var typ, reason string
		_, _ = fmt.Sscan(<-rec.Events, &typ, &reason)
		events[reason]++
	}
	if events[gpu.EventBindingSucceeded] != 1 || events[gpu.EventBindingFailed] != 2 {
		t.Errorf("events %v, want 1 %s and 2 %s", events, gpu.EventBindingSucceeded, gpu.EventBindingFailed)
	}
}

// gpuHeldBy reports whether obs is held by p, UID included (read from the
// sidecar in HAMi's wire format), with a fencing epoch.
func gpuHeldBy(obs lock.Observation, p *corev1.Pod) bool {
	r, _, err := obs.Record()
	return obs.Present && err == nil && r.Namespace == p.Namespace && r.Name == p.Name && r.UID == string(p.UID) && r.Epoch > 0
}

// TestBindBurst binds 8 GPU pods to one node at once through BindExecutor
// against the real API server, while a device plugin (HAMi's order: write
// bind-phase=success, then release the lock owner-checked) finishes each
// allocation after holding the lock ~22 ms. Every Bind must succeed, one at a
// time under the node lock, waking on the releases.
func TestBindBurst(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, 2*time.Minute)
	ns := env.Namespace(t)
	node := newNode(t, env).Name
	exec, store := newBindExecutor(env, nil)
	waiter := kube.BindWaiter{Store: store}
	const n = 8
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = newGPUPod(t, env, ns, fmt.Sprintf("burst-%d", i))
	}
	var (
		mu      sync.Mutex
		holders int
		overlap int
	)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := gpu.ApplyBind(ctx, gpu.BindInput{Pod: ref(p), Node: node, Registry: gpu.DefaultRegistry(), Seed: 1}, exec, waiter)
			if err != nil || !out.Bound {
				errs <- fmt.Errorf("%s: %+v %v", p.Name, out, err)
				return
			}
			mu.Lock()
			holders++
			if holders > 1 {
				overlap++
			}
			mu.Unlock()
			time.Sleep(22 * time.Millisecond) // Allocate
			mu.Lock()
			holders--
			mu.Unlock()
			if err := exec.PatchPodAnnotations(ctx, ref(p), map[string]string{gpu.AnnoBindPhase: "success"}); err != nil {
				errs <- err
				return
			}
			if err := exec.Release(ctx, node, lock.HAMiLockName, ref(p)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if overlap != 0 {
		t.Errorf("%d binds held the node lock at once", overlap)
	}
	t.Logf("%d pods bound to one node in %v (%.1f binds/s)", n, time.Since(start), n/time.Since(start).Seconds())
}

// emptyCache is a reader whose informer has not seen anything yet.
type emptyCache struct{ client.Reader }

func (emptyCache) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(corev1.Resource("pods"), key.Name)
}

// A pod the cache has not caught up with is read from the API server; a pod
// that does not exist anywhere is still NotFound. Fails when GetPod trusts
// the cache's NotFound.
func TestBindExecutorGetPodBehindACache(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	p := newGPUPod(t, env, ns, "fresh")
	e := &kube.BindExecutor{Client: env.Client, Reader: emptyCache{}}
	got, err := e.GetPod(context.Background(), ref(p))
	if err != nil || got.UID != p.UID {
		t.Fatalf("GetPod of a pod the cache has not seen: %v, %v", got, err)
	}
	if _, err := e.GetPod(context.Background(), gpu.PodRef{Namespace: ns, Name: "absent"}); !apierrors.IsNotFound(err) {
		t.Fatalf("GetPod of a missing pod: %v, want NotFound", err)
	}
}

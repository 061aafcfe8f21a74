package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/reconcile"
)

// errNotServed is what worldClient answers for a kind or call the
// Reconcile under test never makes.
var errNotServed = errors.New("worldClient: not served")

// worldClient is a controller-runtime client.Client over plancore's fake
// world: pods live in a fake.PodStore, so every pod write goes through
// World.Do with its injected faults and latency and reaches the store's
// lagging informer; RayClusters live in a map of unstructured objects, as
// the API server holds them, and a Get decodes one into the typed RayCluster
// as the manager's client would. It serves what the README's Reconcile and kube.PodExecutor
// call, and answers errNotServed to anything else.
type worldClient struct {
	store    *fake.PodStore
	scheme   *runtime.Scheme
	clusters map[types.NamespacedName]*unstructured.Unstructured
	uids     int
}

var _ client.Client = (*worldClient)(nil)

func (c *worldClient) isCluster(obj runtime.Object) (*unstructured.Unstructured, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	return u, ok && u.GroupVersionKind() == RayClusterGVK
}

func (c *worldClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if rc, ok := obj.(*RayCluster); ok {
		stored, found := c.clusters[key]
		if !found {
			return apierrors.NewNotFound(schema.GroupResource{Group: RayClusterGVK.Group, Resource: "rayclusters"}, key.Name)
		}
		// As the API server sends it and the typed client decodes it.
		raw, err := stored.MarshalJSON()
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, rc)
	}
	if p, ok := obj.(*corev1.Pod); ok {
		got, err := c.store.GetPod(ctx, key.Namespace, key.Name)
		got.DeepCopyInto(p)
		return err
	}
	return fmt.Errorf("%w: get %T", errNotServed, obj)
}

func (c *worldClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	pl, ok := list.(*corev1.PodList)
	if !ok {
		return fmt.Errorf("%w: list %T", errNotServed, list)
	}
	o := (&client.ListOptions{}).ApplyOptions(opts)
	pods, err := c.store.ListPods(ctx, o.Namespace, o.LabelSelector)
	pl.Items = pods
	return err
}

func (c *worldClient) Create(ctx context.Context, obj client.Object, _ ...client.CreateOption) error {
	if u, ok := c.isCluster(obj); ok {
		c.uids++
		u.SetUID(types.UID(fmt.Sprintf("cluster-uid-%d", c.uids)))
		u.SetCreationTimestamp(metav1.NewTime(c.store.World().Clock.Now()))
		c.clusters[client.ObjectKeyFromObject(u)] = u.DeepCopy()
		return nil
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("%w: create %T", errNotServed, obj)
	}
	got, err := c.store.CreatePod(ctx, *p)
	if err == nil {
		got.DeepCopyInto(p)
	}
	return err
}

func (c *worldClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*corev1.Pod); !ok {
		return fmt.Errorf("%w: delete %T", errNotServed, obj)
	}
	o := (&client.DeleteOptions{}).ApplyOptions(opts)
	var do fake.DeleteOptions
	if o.Preconditions != nil && o.Preconditions.UID != nil {
		do.UID = *o.Preconditions.UID
	}
	return c.store.DeletePod(ctx, obj.GetNamespace(), obj.GetName(), do)
}

func (c *worldClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	if _, ok := obj.(*corev1.Pod); !ok {
		return fmt.Errorf("%w: deleteallof %T", errNotServed, obj)
	}
	o := (&client.DeleteAllOfOptions{}).ApplyOptions(opts)
	_, err := c.store.DeleteAllOf(ctx, o.Namespace, o.LabelSelector)
	return err
}

// Patch serves PodExecutor's annotation patch: a JSON merge patch of
// metadata.annotations with resourceVersion and uid preconditions.
func (c *worldClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
	if _, ok := obj.(*corev1.Pod); !ok || patch.Type() != types.MergePatchType {
		return fmt.Errorf("%w: %s patch of %T", errNotServed, patch.Type(), obj)
	}
	body, err := patch.Data(obj)
	if err != nil {
		return err
	}
	var p struct {
		Metadata struct {
			Annotations     map[string]string `json:"annotations"`
			ResourceVersion string            `json:"resourceVersion"`
			UID             types.UID         `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	md := p.Metadata
	return c.store.PatchPodAnnotations(ctx, obj.GetNamespace(), obj.GetName(), md.UID, md.ResourceVersion, md.Annotations)
}

func (c *worldClient) Update(context.Context, client.Object, ...client.UpdateOption) error {
	return fmt.Errorf("%w: update", errNotServed)
}

func (c *worldClient) Status() client.SubResourceWriter { return statusWriter{c} }

func (c *worldClient) SubResource(string) client.SubResourceClient { return statusWriter{c} }

func (c *worldClient) Scheme() *runtime.Scheme { return c.scheme }

func (c *worldClient) RESTMapper() meta.RESTMapper { return meta.NewDefaultRESTMapper(nil) }

func (c *worldClient) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return apiutil.GVKForObject(obj, c.scheme)
}

func (c *worldClient) IsObjectNamespaced(runtime.Object) (bool, error) { return true, nil }

// statusWriter serves the RayCluster status merge patch of writeStatus.
type statusWriter struct{ c *worldClient }

func (w statusWriter) Get(context.Context, client.Object, client.Object, ...client.SubResourceGetOption) error {
	return fmt.Errorf("%w: subresource get", errNotServed)
}

func (w statusWriter) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return fmt.Errorf("%w: subresource create", errNotServed)
}

func (w statusWriter) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	return fmt.Errorf("%w: status update", errNotServed)
}

func (w statusWriter) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
	u, ok := obj.(*RayCluster)
	if !ok || patch.Type() != types.MergePatchType {
		return fmt.Errorf("%w: status %s patch of %T", errNotServed, patch.Type(), obj)
	}
	stored, found := w.c.clusters[client.ObjectKeyFromObject(u)]
	if !found {
		return apierrors.NewNotFound(schema.GroupResource{Group: RayClusterGVK.Group, Resource: "rayclusters"}, u.GetName())
	}
	body, err := patch.Data(obj)
	if err != nil {
		return err
	}
	var p struct {
		Status map[string]any `json:"status"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	status, _ := stored.Object["status"].(map[string]any)
	stored.Object["status"] = mergePatch(status, p.Status)
	return nil
}

// mergePatch applies a JSON merge patch (RFC 7386) to an object.
func mergePatch(dst, patch map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range patch {
		switch v := v.(type) {
		case nil:
			delete(dst, k)
		case map[string]any:
			sub, _ := dst[k].(map[string]any)
			dst[k] = mergePatch(sub, v)
		default:
			dst[k] = v
		}
	}
	return dst
}

// worldInformers gives kube.NewPodLister a pod informer whose indexer
// mirrors the fake store's lagging informer, event by event.
type worldInformers struct {
	inf *worldInformer
}

var _ cache.Informers = worldInformers{}

func (w worldInformers) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	if _, ok := obj.(*corev1.Pod); !ok {
		return nil, fmt.Errorf("%w: informer for %T", errNotServed, obj)
	}
	return w.inf, nil
}

func (w worldInformers) GetInformerForKind(context.Context, schema.GroupVersionKind, ...cache.InformerGetOption) (cache.Informer, error) {
	return nil, fmt.Errorf("%w: informer by kind", errNotServed)
}

func (w worldInformers) RemoveInformer(context.Context, client.Object) error {
	return fmt.Errorf("%w: remove informer", errNotServed)
}

func (w worldInformers) Start(context.Context) error { return nil }

func (w worldInformers) WaitForCacheSync(context.Context) bool { return true }

func (w worldInformers) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	return fmt.Errorf("%w: field index", errNotServed)
}

// worldInformer is the pod informer: a client-go indexer that every event
// the fake informer delivers updates.
type worldInformer struct {
	indexer toolscache.Indexer
}

func newWorldInformer(s *fake.PodStore) *worldInformer {
	inf := &worldInformer{indexer: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})}
	s.Informer().AddHandler(func(ev fake.PodEvent) {
		p := ev.Pod.DeepCopy()
		if ev.Type == fake.EventDeleted {
			_ = inf.indexer.Delete(p)
			return
		}
		_ = inf.indexer.Update(p)
	})
	return inf
}

func (i *worldInformer) GetIndexer() toolscache.Indexer { return i.indexer }

func (i *worldInformer) AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return nil, fmt.Errorf("%w: event handler (use fake.PodObserver)", errNotServed)
}

func (i *worldInformer) AddEventHandlerWithResyncPeriod(toolscache.ResourceEventHandler, time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return nil, fmt.Errorf("%w: event handler (use fake.PodObserver)", errNotServed)
}

func (i *worldInformer) RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error {
	return fmt.Errorf("%w: remove event handler", errNotServed)
}

func (i *worldInformer) AddIndexers(ix toolscache.Indexers) error { return i.indexer.AddIndexers(ix) }

func (i *worldInformer) HasSynced() bool { return true }

func (i *worldInformer) IsStopped() bool { return false }

// worldRun drives the example's Reconciler on a fake world the way a
// controller-runtime manager would: a work queue with RequeueAfter and
// error backoff, pod events through fake.PodObserver, a kubelet that
// starts pods after a delay, and a simulated clock that moves in steps.
type worldRun struct {
	t       *testing.T
	w       *fake.World
	store   *fake.PodStore
	c       *worldClient
	r       *Reconciler
	kubelet *fake.Kubelet
	obs     *fake.PodObserver
	due     map[types.NamespacedName]time.Time
}

func newWorldRun(t *testing.T, seed uint64) *worldRun {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := fake.NewWorld(seed, t0)
	// A lagging informer that sometimes misses intermediate states, pods
	// that take a while to go, creates that fail or lose their response.
	store := fake.NewPodStore(w, fake.PodStoreOptions{Lag: 3 * time.Second, DropRate: 0.2, GraceMin: time.Second, GraceMax: 5 * time.Second})
	w.Faults.SetRates(fake.KindPodCreate, 0.2, 0.2, apierrors.NewTimeoutError("injected", 1))
	scheme := runtime.NewScheme()
	if err := errors.Join(corev1.AddToScheme(scheme), addRayClusterTypes(scheme)); err != nil {
		t.Fatal(err)
	}
	c := &worldClient{store: store, scheme: scheme, clusters: map[types.NamespacedName]*unstructured.Unstructured{}}
	tracker, err := expectations.NewTracker(expectations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := &worldRun{t: t, w: w, store: store, c: c, due: map[types.NamespacedName]time.Time{},
		kubelet: &fake.Kubelet{Store: store, Namespace: "default", StartDelay: 3 * time.Second}}
	// The index first, then the observer: a pass an event enqueues sees
	// the pod, as with a manager's informer.
	lister, err := kube.NewPodLister(context.Background(), worldInformers{newWorldInformer(store)})
	if err != nil {
		t.Fatal(err)
	}
	run.obs = &fake.PodObserver{Tracker: tracker, OwnerKind: RayClusterGVK.GroupKind(), OnError: func(err error) { t.Error(err) },
		Enqueue: func(o expectations.Owner) { run.enqueue(types.NamespacedName{Namespace: o.Namespace, Name: o.Name}, 0) }}
	store.Informer().AddHandler(run.obs.Handle)
	run.r = &Reconciler{Client: c, Tracker: tracker, Pods: lister, Options: reconcile.Options{OperatorVersion: "v1.7.0"},
		Applier:  reconcile.Applier{Expectations: tracker, Clock: w.Clock, TokenPrefix: "sim-", MaxInFlight: 8},
		Recorder: record.NewFakeRecorder(100000), Clock: w.Clock}
	return run
}

// enqueue makes key due after d, unless it is due sooner already.
func (run *worldRun) enqueue(key types.NamespacedName, d time.Duration) {
	at := run.w.Clock.Now().Add(d)
	if cur, ok := run.due[key]; !ok || at.Before(cur) {
		run.due[key] = at
	}
}

// step moves the clock, lets the kubelet act, delivers the informer's due
// events, and reconciles every due key with the README's Reconcile.
func (run *worldRun) step(ctx context.Context) {
	run.w.Clock.Advance(time.Second)
	if _, err := run.kubelet.Step(); err != nil {
		run.t.Fatal(err)
	}
	run.store.Informer().List("", nil) // delivers what is due to the handlers
	now := run.w.Clock.Now()
	for _, key := range slices.SortedFunc(func(yield func(types.NamespacedName) bool) {
		for k := range run.due {
			if !yield(k) {
				return
			}
		}
	}, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) }) {
		if run.due[key].After(now) {
			continue
		}
		delete(run.due, key)
		res, err := run.r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		switch {
		case errors.Is(err, crreconcile.TerminalError(nil)):
			run.t.Fatalf("reconcile %s: terminal error %v", key, err)
		case err != nil:
			run.enqueue(key, time.Second) // the injected faults: retried, as with backoff
		case res.RequeueAfter > 0:
			run.enqueue(key, res.RequeueAfter)
		}
	}
}

// pods counts the head and worker pods of the store that are neither
// terminating nor finished.
func (run *worldRun) pods() (heads, workers int) {
	for _, p := range run.store.Pods("default") {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Labels[reconcile.LabelNodeType] == "head" {
			heads++
		} else {
			workers++
		}
	}
	return heads, workers
}

// converge steps until the cluster's status says ready with want workers,
// checking on every step that no pod beyond the spec was ever created. A
// create whose outcome is unknown (a timeout) holds its group until its
// expectation expires, minutes later, so the budget is an hour.
func (run *worldRun) converge(ctx context.Context, key types.NamespacedName, want int) {
	for i := 0; i < 3600; i++ {
		run.step(ctx)
		if h, wk := run.pods(); h > 1 || wk > want {
			run.t.Fatalf("step %d: %d heads and %d workers running or pending, want at most 1 and %d", i, h, wk, want)
		}
		raw, err := run.c.clusters[key].MarshalJSON()
		if err != nil {
			run.t.Fatal(err)
		}
		_, st, err := reconcile.DecodeRayCluster(raw)
		if err != nil {
			run.t.Fatal(err)
		}
		if h, wk := run.pods(); st.State == reconcile.StateReady && st.ReadyWorkerReplicas == int32(want) && h == 1 && wk == want {
			return
		}
	}
	h, wk := run.pods()
	run.t.Fatalf("not ready with %d workers after an hour of simulated time: %d heads, %d workers", want, h, wk)
}

// The README's Reconcile, unchanged, on plancore's fake world: a lagging
// informer that drops intermediate states, creates that fail or lose their
// response, pods that start late and terminate slowly. The cluster is
// created, scaled from 3 to 5 workers, loses a worker behind the
// controller's back, and each time converges without ever running more
// pods than its spec asks for.
func TestReadmeReconcileOnFakeWorld(t *testing.T) {
	faults := 0
	defer func() {
		if faults == 0 {
			t.Error("no create fault was injected: the runs prove nothing about them")
		}
	}()
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ctx := context.Background()
			run := newWorldRun(t, seed)
			rc := rayCluster("default", "demo", 3)
			if err := run.c.Create(ctx, rc); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(rc)
			run.enqueue(key, 0)
			run.converge(ctx, key, 3)

			stored := run.c.clusters[key]
			groups, _, _ := unstructured.NestedSlice(stored.Object, "spec", "workerGroupSpecs")
			groups[0].(map[string]any)["replicas"] = int64(5)
			if err := unstructured.SetNestedSlice(stored.Object, groups, "spec", "workerGroupSpecs"); err != nil {
				t.Fatal(err)
			}
			run.enqueue(key, 0) // the RayCluster's watch event
			run.converge(ctx, key, 5)

			victim := ""
			for _, p := range run.store.Pods("default") {
				if p.Labels[reconcile.LabelNodeType] == "worker" && p.DeletionTimestamp == nil {
					victim = p.Name
					break
				}
			}
			if err := run.store.DeletePod(ctx, "default", victim, fake.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			run.converge(ctx, key, 5)

			if run.obs.Observed() == 0 {
				t.Error("no pod event settled an expectation")
			}
			// Events: what was done, and a Warning only for a failed call
			// (the injected faults); the waits of a lagging informer make none.
			events := map[string]bool{}
			for rec := run.r.Recorder.(*record.FakeRecorder); len(rec.Events) > 0; {
				e := <-rec.Events
				f := strings.SplitN(e, " ", 3)
				events[f[0]+" "+f[1]] = true
				if f[0] == corev1.EventTypeWarning && !strings.Contains(e, " failed: ") && !strings.Contains(e, " ambiguous: ") {
					t.Errorf("a Warning event that is no failed call: %s", e)
				}
			}
			// A create that lost its response took effect but is a Warning.
			for _, want := range []string{"HeadCreate", "ScaleUp"} {
				if !events["Normal "+want] && !events["Warning "+want] {
					t.Errorf("no %s event among %v", want, slices.Sorted(maps.Keys(events)))
				}
			}
			calls := run.w.Calls
			injected := calls.Count(fake.KindPodCreate, fake.OutcomeInjectedFail) + calls.Count(fake.KindPodCreate, fake.OutcomeLostResponse)
			faults += injected
			t.Logf("%d pod creates (%d failed or lost their response), %d deletes; pod events settled %d expectations; %v",
				calls.Count(fake.KindPodCreate), injected, calls.Count(fake.KindPodDelete), run.obs.Observed(), slices.Sorted(maps.Keys(events)))
		})
	}
}

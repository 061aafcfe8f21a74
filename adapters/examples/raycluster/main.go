// Command raycluster is a RayCluster pod controller built on plancore: a
// controller-runtime manager whose reconciler reads a RayCluster custom resource
// (ray.io/v1, the fields KubeRay's pod reconciliation reads), plans its pods
// with the pure reconcile core, gates the plan on expectations, and applies it
// through adapters/kube's PodExecutor with bounded concurrency.
//
// By default it runs a demo against a throwaway API server (etcd and kube-apiserver from
// adapters/kube/kubetest; build them once with .ci/kube-apiserver.sh), installs
// a RayCluster CRD, shows that a RayCluster with a misspelt field is a
// terminal error (not requeued), creates a cluster with 3 workers and prints
// the events its first pass recorded, scales it to 5, deletes a worker behind
// the controller's back, and prints what the API server holds after each
// step:
//
//	go run ./examples/raycluster
//
// With -operator it is an operator process instead: the controller alone
// against that API server, reconciling up to -max-concurrent-reconciles
// clusters at once, each pass sending at most -max-in-flight creates at once.
// The scale harness in ./scale runs it that way beside KubeRay's operator.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	_ "net/http/pprof" // -pprof-addr
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/reconcile"
)

// RayClusterGVK is KubeRay's RayCluster kind.
var RayClusterGVK = schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"}

func main() {
	operator := flag.Bool("operator", false, "run only the controller, against the API server of -kubeconfig (or $KUBECONFIG), until SIGINT or SIGTERM; "+
		"the RayCluster CRD must be installed (without this flag: the self-contained demo)")
	var set Settings
	flag.IntVar(&set.MaxConcurrentReconciles, "max-concurrent-reconciles", 8, "clusters reconciled at once")
	flag.IntVar(&set.MaxInFlight, "max-in-flight", 16, "creates or deletes one pass sends at once")
	flag.StringVar(&set.MetricsAddr, "metrics-addr", "0", "address of the Prometheus metrics endpoint (0: none)")
	pprofAddr := flag.String("pprof-addr", "", "with -operator, serve net/http/pprof's /debug/pprof/ here")
	qps := flag.Float64("qps", 100, "client-side rate limit of requests to the API server (KubeRay's operator's default)")
	burst := flag.Int("burst", 200, "client-side burst above -qps (KubeRay's operator's default)")
	flag.Parse()
	if *operator {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		set.TokenPrefix, set.CacheRayClusters = fmt.Sprintf("op%d-", os.Getpid()), true
		if *pprofAddr != "" {
			go func() { _ = http.ListenAndServe(*pprofAddr, nil) }() // net/http/pprof's handlers
		}
		if err := operate(ctx, float32(*qps), *burst, set); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout, &kube.PodObserver{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// operate runs the controller alone against the API server that
// controller-runtime's -kubeconfig flag (or $KUBECONFIG, or the in-cluster
// config) names until ctx ends: the operator process the scale harness
// (./scale) measures.
func operate(ctx context.Context, qps float32, burst int, set Settings) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst, cfg.UserAgent = qps, burst, "plancore-raycluster"
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, _, err := newController(ctx, cfg, scheme, &kube.PodObserver{}, set)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// Reconciler reconciles RayClusters' pods with plancore's reconcile core.
type Reconciler struct {
	Client client.Client
	// Tracker holds the in-flight creates and deletes of every cluster; the
	// pod informer's events reach it through kube.PodObserver (see run) and
	// make it settle early.
	Tracker *expectations.Tracker
	// Pods reads a cluster's pods from the pod informer's index; buffers
	// holds the slices they are read into, reused from pass to pass.
	Pods    *kube.PodLister
	buffers sync.Pool
	// written holds, per cluster, the last status this process wrote and
	// the resourceVersion it wrote over (see lastStatus).
	written sync.Map // types.NamespacedName -> writtenStatus
	Options reconcile.Options
	// Applier records each create's and delete's expectation in Tracker and
	// sends each run of creates or deletes concurrently, at most MaxInFlight
	// calls at a time (slow start first); its TokenPrefix should differ
	// between processes.
	Applier reconcile.Applier
	// Recorder records each pass's events on the RayCluster
	// (mgr.GetEventRecorderFor): what the plan did and why it waits.
	Recorder record.EventRecorder
	// Clock is the time a pass plans at; nil means the wall clock. A
	// simulation gives the same clock to Applier.
	Clock clock.PassiveClock
}

// Reconcile implements reconcile.Reconciler of controller-runtime. The
// README's quick start shows it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rc := &RayCluster{} // metadata typed, spec and status as sent (raycluster.go)
	if err := r.Client.Get(ctx, req.NamespacedName, rc); err != nil {
		r.written.Delete(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	raw, err := rc.document()
	if err != nil {
		return ctrl.Result{}, err
	}
	cluster, current, err := reconcile.DecodeRayCluster(raw) // unknown fields refused, by path
	if err != nil {
		return ctrl.Result{}, kube.TerminalIfInvalid(err) // a retry cannot fix the object
	}
	// The cluster's pods, straight from the pod informer's index into a
	// slice reused from pass to pass (kube.PodLister): no List, no deep
	// copies. They share memory with the cache; nothing below writes to them.
	buf := r.buffer()
	defer r.buffers.Put(buf)
	pods, err := r.Pods.AppendClusterPods((*buf)[:0], req.Namespace, req.Name)
	if *buf = pods; err != nil {
		return ctrl.Result{}, err
	}
	// Only this cluster's expectations: a copy of every cluster's would
	// cost each pass as much as all clusters' creates in flight.
	exp, err := r.Tracker.SnapshotOwner(expectations.Owner{Namespace: cluster.Namespace, Name: cluster.Name, UID: cluster.UID})
	if err != nil {
		return ctrl.Result{}, kube.TerminalIfInvalid(err)
	}
	snap := reconcile.Snapshot{Cluster: cluster, Pods: pods, Expectations: exp, Now: r.now()}
	plan, err := reconcile.Decide(snap, r.Options)
	if err != nil {
		return ctrl.Result{}, kube.TerminalIfInvalid(err)
	}
	exec := &kube.PodExecutor{Client: r.Client, Owner: rc}
	report, applyErr := r.Applier.Apply(ctx, plan, exec) // creates in parallel, at most Applier.MaxInFlight
	// One event per reason: pods created, deleted, failed; why the plan waits.
	eventErr := kube.Emit(r.Recorder, rc, kube.ReconcileEvents(plan, &report))
	status, err := reconcile.Status(reconcile.StatusInput{Snapshot: snap, Previous: current, Report: &report}, r.Options)
	if err == nil && !sameStatus(r.lastStatus(rc, current), status) { // no write when only the time moved
		err = r.writeStatus(ctx, rc, status)
	}
	return ctrl.Result{RequeueAfter: plan.Verdict.RequeueAfter}, errors.Join(applyErr, eventErr, err)
}

// now reads Clock, or the wall clock without one.
func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// buffer returns a pod slice from an earlier pass, or a new one.
func (r *Reconciler) buffer() *[]corev1.Pod {
	if buf, ok := r.buffers.Get().(*[]corev1.Pod); ok {
		return buf
	}
	return new([]corev1.Pod)
}

// sameStatus reports whether next differs from the status the object
// holds only in LastUpdateTime, as KubeRay's operator decides whether to
// write: a pass that changed nothing writes nothing.
func sameStatus(current, next reconcile.ClusterStatus) bool {
	next.LastUpdateTime = current.LastUpdateTime
	return equality.Semantic.DeepEqual(current, next)
}

type writtenStatus struct {
	over   string // the resourceVersion the write replaced
	status reconcile.ClusterStatus
}

// lastStatus is the status the API server holds: current, unless the
// object read is still the one this process last wrote over (a cache that
// has not seen that write yet), and then the status written.
func (r *Reconciler) lastStatus(rc client.Object, current reconcile.ClusterStatus) reconcile.ClusterStatus {
	if w, ok := r.written.Load(client.ObjectKeyFromObject(rc)); ok && w.(writtenStatus).over == rc.GetResourceVersion() {
		return w.(writtenStatus).status
	}
	return current
}

// writeStatus merge-patches the status subresource with the computed
// status (the whole conditions list, which Status computed from the
// current one) and remembers what it wrote over.
func (r *Reconciler) writeStatus(ctx context.Context, rc client.Object, st reconcile.ClusterStatus) error {
	body, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	over := rc.GetResourceVersion()
	if err := r.Client.Status().Patch(ctx, rc, client.RawPatch(types.MergePatchType, body)); err != nil {
		return err
	}
	r.written.Store(client.ObjectKeyFromObject(rc), writtenStatus{over: over, status: st})
	return nil
}

// rayClusterCRD is a minimal RayCluster CRD: the schema keeps unknown fields,
// as a stand-in for KubeRay's full one.
func rayClusterCRD() *apiextensionsv1.CustomResourceDefinition {
	yes := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "rayclusters.ray.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "ray.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "rayclusters", Singular: "raycluster", Kind: "RayCluster", ListKind: "RayClusterList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

func rayCluster(ns, name string, workers int) *unstructured.Unstructured {
	container := func(n string) map[string]any {
		return map[string]any{"name": n, "image": "rayproject/ray:2.9.0", "resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}
	}
	rc := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"rayVersion": "2.9.0",
			"headGroupSpec": map[string]any{
				"rayStartParams": map[string]any{},
				"template":       map[string]any{"spec": map[string]any{"containers": []any{container("ray-head")}}},
			},
			"workerGroupSpecs": []any{map[string]any{
				// numOfHosts 1 is what KubeRay's CRD defaults; this stand-in
				// CRD has no defaults.
				"groupName": "cpu", "replicas": int64(workers), "minReplicas": int64(0), "maxReplicas": int64(10), "numOfHosts": int64(1),
				"rayStartParams": map[string]any{},
				"template":       map[string]any{"spec": map[string]any{"containers": []any{container("ray-worker")}}},
			}},
		},
	}}
	rc.SetGroupVersionKind(RayClusterGVK)
	rc.SetNamespace(ns)
	rc.SetName(name)
	return rc
}

// run starts the API server and the manager, drives one cluster through its
// steps, and writes what the API server holds after each. It sets up
// podEvents, a zero PodObserver, as the controller's pod event handler.
func run(ctx context.Context, out io.Writer, podEvents *kube.PodObserver) error {
	env, err := kubetest.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	ctrl.SetLogger(logr.Discard())

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	setup, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	if err := setup.Create(ctx, rayClusterCRD()); err != nil {
		return fmt.Errorf("installing the RayCluster CRD: %w", err)
	}
	if err := waitFor(ctx, func() (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(RayClusterGVK.GroupVersion().WithKind("RayClusterList"))
		err := setup.List(ctx, list)
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("RayCluster CRD not served: %w", err)
	}

	mgr, r, err := newController(ctx, env.Config, scheme, podEvents, Settings{MaxConcurrentReconciles: 1, MaxInFlight: 8, TokenPrefix: "example-"})
	if err != nil {
		return err
	}
	mctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()

	ns := "default"
	if err := refuseInvalid(ctx, out, setup, r, ns); err != nil {
		return err
	}
	rc := rayCluster(ns, "demo", 3)
	if err := setup.Create(ctx, rc); err != nil {
		return err
	}
	step := func(what string, workers int) error {
		if err := waitFor(ctx, func() (bool, error) {
			h, w, err := count(ctx, setup, ns, "demo")
			return h == 1 && w == workers, err
		}); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		h, w, _ := count(ctx, setup, ns, "demo")
		fmt.Fprintf(out, "%s: %d head, %d workers\n", what, h, w)
		return nil
	}
	if err := step("created with 3 workers", 3); err != nil {
		return err
	}
	if err := printCreateEvents(ctx, out, setup, rc); err != nil {
		return err
	}
	if err := setup.Get(ctx, client.ObjectKeyFromObject(rc), rc); err != nil {
		return err
	}
	// A merge patch of the spec, without a resourceVersion: the controller
	// writes the status at the same time, and the spec change must not
	// conflict with it.
	before := rc.DeepCopy()
	groups, _, _ := unstructured.NestedSlice(rc.Object, "spec", "workerGroupSpecs")
	groups[0].(map[string]any)["replicas"] = int64(5)
	if err := unstructured.SetNestedSlice(rc.Object, groups, "spec", "workerGroupSpecs"); err != nil {
		return err
	}
	if err := setup.Patch(ctx, rc, client.MergeFrom(before)); err != nil {
		return err
	}
	if err := step("scaled to 5 workers", 5); err != nil {
		return err
	}
	var pods corev1.PodList
	if err := setup.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{reconcile.LabelNodeType: "worker"}); err != nil {
		return err
	}
	if err := setup.Delete(ctx, &pods.Items[0]); err != nil {
		return err
	}
	fmt.Fprintln(out, "deleted one worker behind the controller's back")
	if err := step("replaced it", 5); err != nil {
		return err
	}
	// No kubelet runs here: the example starts the pods itself, so the
	// controller's status turns ready.
	if err := startPods(ctx, setup, ns, "demo"); err != nil {
		return err
	}
	if err := waitFor(ctx, func() (bool, error) {
		st, err := readStatus(ctx, setup, rc)
		return st.State == reconcile.StateReady && st.ReadyWorkerReplicas == 5, err
	}); err != nil {
		return fmt.Errorf("waiting for the ready status: %w", err)
	}
	st, err := readStatus(ctx, setup, rc)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "pods started: status %s, %d of %d workers ready, desired CPU %s\n", st.State, st.ReadyWorkerReplicas, st.DesiredWorkerReplicas, st.DesiredCPU.String())
	for _, c := range st.Conditions {
		fmt.Fprintf(out, "  %s=%s (%s)\n", c.Type, c.Status, c.Reason)
	}
	stop()
	return <-done
}

// Settings are the knobs of one controller process.
type Settings struct {
	// MaxConcurrentReconciles is controller-runtime's: how many clusters are
	// reconciled at once. Above 1, a cluster whose pass sends 500 creates
	// does not hold up the passes of the others.
	MaxConcurrentReconciles int
	// MaxInFlight bounds the creates (or deletes) one pass sends at once
	// (reconcile.Applier.MaxInFlight).
	MaxInFlight int
	// MetricsAddr is where controller-runtime serves Prometheus metrics; ""
	// or "0" serves none.
	MetricsAddr string
	// TokenPrefix starts every create token of this process.
	TokenPrefix string
	// CacheRayClusters reads RayClusters from the manager's informer cache,
	// as KubeRay's operator does, instead of a GET per pass. The demo reads
	// them live: it reconciles a cluster the moment it is created.
	CacheRayClusters bool
}

// newController builds a manager on cfg with the RayCluster controller
// registered: a tracker, the pod lister, podEvents (a zero PodObserver) as
// the pod watch's handler. It adds RayCluster's types to scheme. The
// caller starts the manager.
func newController(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, podEvents *kube.PodObserver, set Settings) (ctrl.Manager, *Reconciler, error) {
	metricsAddr := set.MetricsAddr
	if metricsAddr == "" {
		metricsAddr = "0"
	}
	if err := addRayClusterTypes(scheme); err != nil {
		return nil, nil, err
	}
	cacheOpts := &client.CacheOptions{}
	if !set.CacheRayClusters {
		cacheOpts.DisableFor = []client.Object{&RayCluster{}}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: server.Options{BindAddress: metricsAddr},
		// Nothing here reads managedFields: the cache keeps objects without
		// them, and pods without what no pass reads either (slimPod).
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: slimPod}}},
		Client: client.Options{Cache: cacheOpts}})
	if err != nil {
		return nil, nil, err
	}
	tracker, err := expectations.NewTracker(expectations.Options{})
	if err != nil {
		return nil, nil, err
	}
	lister, err := kube.NewPodLister(ctx, mgr.GetCache())
	if err != nil {
		return nil, nil, err
	}
	r := &Reconciler{Client: mgr.GetClient(), Tracker: tracker, Pods: lister, Options: reconcile.Options{OperatorVersion: "v1.7.0"},
		Applier:  reconcile.Applier{Expectations: tracker, TokenPrefix: set.TokenPrefix, MaxInFlight: set.MaxInFlight},
		Recorder: mgr.GetEventRecorderFor("raycluster")}
	owner := &RayCluster{}
	// Pod events reach the tracker (kube.PodObserver) before they enqueue
	// the RayCluster that controls the pod, so a create or delete settles
	// on its event rather than on its expectation's timeout.
	podEvents.Tracker, podEvents.OwnerKind = tracker, RayClusterGVK.GroupKind()
	podEvents.Next = handler.EnqueueRequestForOwner(scheme, mgr.GetRESTMapper(), owner, handler.OnlyControllerOwner())
	err = ctrl.NewControllerManagedBy(mgr).Named("raycluster").For(owner).Watches(&corev1.Pod{}, podEvents).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, set.MaxConcurrentReconciles)}).Complete(r)
	if err != nil {
		return nil, nil, err
	}
	return mgr, r, nil
}

// slimPod is the pod informer's transform: it drops what no pass reads
// before the pod enters the cache, managedFields and every container's
// resources (a third of a cached pod: each quantity is a decoded number
// and its string). The reconcile core reads a pod's metadata, status,
// restart policy, node and container names; the status it computes sums
// the cluster's pod templates, not its pods.
func slimPod(in any) (any, error) {
	p, ok := in.(*corev1.Pod)
	if !ok {
		return in, nil // a tombstone (cache.DeletedFinalStateUnknown) passes as it is
	}
	p.ManagedFields = nil
	for i := range p.Spec.InitContainers {
		p.Spec.InitContainers[i].Resources = corev1.ResourceRequirements{}
	}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Resources = corev1.ResourceRequirements{}
	}
	return p, nil
}

// refuseInvalid creates a RayCluster with a misspelt field and reconciles
// it: the error is terminal, so controller-runtime does not requeue it.
func refuseInvalid(ctx context.Context, out io.Writer, c client.Client, r *Reconciler, ns string) error {
	broken := rayCluster(ns, "broken", 1)
	broken.Object["spec"].(map[string]any)["workerGroupSpec"] = []any{} // a typo of workerGroupSpecs
	if err := c.Create(ctx, broken); err != nil {
		return err
	}
	_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(broken)})
	var inv *plancore.InvalidError
	if !errors.As(err, &inv) {
		return fmt.Errorf("reconciling an invalid RayCluster: %v, want an invalid-input error", err)
	}
	// controller-runtime's own test for "do not requeue".
	fmt.Fprintf(out, "invalid RayCluster refused at %v; requeued: %v\n", inv.Fields(), !errors.Is(err, crreconcile.TerminalError(nil)))
	return c.Delete(ctx, broken)
}

// printCreateEvents waits for the events of the create pass on the
// RayCluster (the recorder sends them in the background) and prints them.
func printCreateEvents(ctx context.Context, out io.Writer, c client.Client, rc *unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got []string
	err := waitFor(ctx, func() (bool, error) {
		var list corev1.EventList
		if err := c.List(ctx, &list, client.InNamespace(rc.GetNamespace()), client.MatchingFields{"involvedObject.name": rc.GetName()}); err != nil {
			return false, err
		}
		got = got[:0]
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == RayClusterGVK.Kind && (e.Reason == string(reconcile.ReasonHeadCreate) || e.Reason == string(reconcile.ReasonScaleUp)) {
				got = append(got, fmt.Sprintf("  %s %s: %s", e.Type, e.Reason, e.Message))
			}
		}
		return len(got) == 2, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the create pass's events: %w", err)
	}
	slices.Sort(got)
	fmt.Fprintf(out, "events:\n%s\n", strings.Join(got, "\n"))
	return nil
}

// startPods does what the kubelet would: every pod of the cluster is
// running and ready.
func startPods(ctx context.Context, c client.Client, ns, name string) error {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{reconcile.LabelCluster: name}); err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		if err := c.Status().Update(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// readStatus reads the RayCluster's status back through DecodeRayCluster.
func readStatus(ctx context.Context, c client.Client, rc *unstructured.Unstructured) (reconcile.ClusterStatus, error) {
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(RayClusterGVK)
	if err := c.Get(ctx, client.ObjectKeyFromObject(rc), got); err != nil {
		return reconcile.ClusterStatus{}, err
	}
	raw, err := got.MarshalJSON()
	if err != nil {
		return reconcile.ClusterStatus{}, err
	}
	_, st, err := reconcile.DecodeRayCluster(raw)
	return st, err
}

// count returns the non-terminating head and worker pods of a cluster.
func count(ctx context.Context, c client.Client, ns, name string) (head, workers int, err error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{reconcile.LabelCluster: name}); err != nil {
		return 0, 0, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Labels[reconcile.LabelNodeType] == "head" {
			head++
		} else {
			workers++
		}
	}
	return head, workers, nil
}

// waitFor polls cond every 50 ms until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

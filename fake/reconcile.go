package fake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/reconcile"
)

// KindPodPatch is the call kind of ReconcileExecutor.PatchPodAnnotations.
const KindPodPatch = "pod.patch"

// ReconcileExecutor implements reconcile.Executor over a PodStore: creates,
// deletes and delete-alls go through the store (and so through World.Do with
// its faults), annotation patches through World.Do as kind pod.patch.
type ReconcileExecutor struct {
	Store *PodStore
	// Quota, when positive, is the most pods (terminating ones included) the
	// namespace may hold: a create beyond it fails with Forbidden "exceeded
	// quota", as a ResourceQuota would (KubeRay #4540).
	Quota int
}

var _ reconcile.Executor = (*ReconcileExecutor)(nil)

// errNoStore is what a ReconcileExecutor without a Store answers to every call.
var errNoStore = errors.New("fake: ReconcileExecutor has no Store (use NewReconcileExecutor)")

// errLoopNotBuilt is what a RayClusterLoop without its parts answers.
var errLoopNotBuilt = errors.New("fake: RayClusterLoop has no World, Store, Exec or Tracker (use NewRayClusterLoop)")

// NewReconcileExecutor returns an executor writing to s.
func NewReconcileExecutor(s *PodStore) *ReconcileExecutor { return &ReconcileExecutor{Store: s} }

// CreatePod implements reconcile.Executor.
func (e *ReconcileExecutor) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	if e.Store == nil {
		return nil, errNoStore
	}
	if e.Quota > 0 && len(e.Store.Pods(pod.Namespace)) >= e.Quota {
		// The API server refuses the create: it is a call like any other.
		target := pod.Namespace + "/" + pod.Name
		if pod.Name == "" {
			target = pod.Namespace + "/" + pod.GenerateName + "*"
		}
		return nil, e.Store.World().Do(KindPodCreate, target, func() error {
			return apierrors.NewForbidden(podsResource, pod.Name,
				fmt.Errorf("exceeded quota: pods, requested: pods=1, limited: pods=%d", e.Quota))
		})
	}
	out, err := e.Store.CreatePod(ctx, *pod)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// DeletePod implements reconcile.Executor.
func (e *ReconcileExecutor) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	if e.Store == nil {
		return errNoStore
	}
	return e.Store.DeletePod(ctx, namespace, name, DeleteOptions{UID: uid})
}

// DeleteAllOf implements reconcile.Executor.
func (e *ReconcileExecutor) DeleteAllOf(ctx context.Context, namespace string, selector map[string]string) error {
	if e.Store == nil {
		return errNoStore
	}
	_, err := e.Store.DeleteAllOf(ctx, namespace, labels.SelectorFromSet(selector))
	return err
}

// PatchPodAnnotations implements reconcile.Executor through
// PodStore.PatchPodAnnotations (UID and resourceVersion preconditions,
// Conflict when either differs).
func (e *ReconcileExecutor) PatchPodAnnotations(ctx context.Context, namespace, name string, uid types.UID, resourceVersion string, set map[string]string) error {
	if e.Store == nil {
		return errNoStore
	}
	return e.Store.PatchPodAnnotations(ctx, namespace, name, uid, resourceVersion, set)
}

// RayClusterLoop is a whole controller loop over the in-memory world: each
// Step lets a kubelet start pending pods, snapshots the lagging informer,
// settles the expectations on that snapshot, plans with reconcile.Decide,
// applies the plan through a ReconcileExecutor, and keeps the formation
// records. Tests and the tour drive it and change Cluster between steps.
type RayClusterLoop struct {
	World     *World
	Store     *PodStore
	Exec      *ReconcileExecutor
	Tracker   *expectations.Tracker
	Cluster   reconcile.Cluster
	Options   reconcile.Options
	Forming   []reconcile.FormingGroup
	Seed      uint64
	KeepGoing bool
	// MaxInFlight is the Applier's: above 1, each run of independent actions
	// is applied concurrently (the fakes are safe for concurrent use).
	MaxInFlight int
	// StartDelay is how long a created pod stays Pending before the kubelet
	// runs it; zero starts it at the next step.
	StartDelay time.Duration
}

// NewRayClusterLoop builds a loop for cluster on w, with a store of the given
// options and expectations of the given options.
func NewRayClusterLoop(w *World, store PodStoreOptions, exp expectations.Options, cluster reconcile.Cluster, o reconcile.Options) (*RayClusterLoop, error) {
	tr, err := expectations.NewTracker(exp)
	if err != nil {
		return nil, err
	}
	s := NewPodStore(w, store)
	return &RayClusterLoop{World: w, Store: s, Exec: NewReconcileExecutor(s), Tracker: tr, Cluster: cluster, Options: o, Seed: 1}, nil
}

// Owner is the cluster's expectations owner.
func (l *RayClusterLoop) Owner() expectations.Owner {
	return expectations.Owner{Namespace: l.Cluster.Namespace, Name: l.Cluster.Name, UID: l.Cluster.UID}
}

// built reports whether the loop has its parts; a zero loop has none.
func (l *RayClusterLoop) built() bool {
	return l.World != nil && l.Store != nil && l.Exec != nil && l.Tracker != nil
}

// Kubelet starts every pending, non-terminating pod of the cluster's
// namespace that has waited StartDelay (a Kubelet's Step). A zero loop does
// nothing.
func (l *RayClusterLoop) Kubelet() {
	if !l.built() {
		return
	}
	k := Kubelet{Store: l.Store, Namespace: l.Cluster.Namespace, StartDelay: l.StartDelay}
	_, _ = k.Step() // only NotFound can fail it, and Step skips those
}

// Snapshot reads the informer and settles the expectations of every group
// on it (what a controller does before planning), and returns the snapshot.
func (l *RayClusterLoop) Snapshot() (reconcile.Snapshot, error) {
	if !l.built() {
		return reconcile.Snapshot{}, errLoopNotBuilt
	}
	now := l.World.Clock.Now()
	pods := l.Store.Informer().List(l.Cluster.Namespace, nil)
	view, err := l.Tracker.ViewFor(l.Owner(), pods)
	if err != nil {
		return reconcile.Snapshot{}, err
	}
	for _, g := range l.Tracker.Groups(l.Owner()) {
		if _, err := l.Tracker.Satisfied(now, l.Owner(), g, view); err != nil {
			return reconcile.Snapshot{}, err
		}
	}
	return reconcile.Snapshot{
		Cluster: l.Cluster, Pods: pods, Expectations: l.Tracker.Snapshot(),
		Forming: slices.Clone(l.Forming), Now: now, Seed: l.Seed,
	}, nil
}

// Step runs one pass: kubelet, snapshot, Decide, Apply. It returns the plan and
// the report; an error is Decide's (malformed input) or Apply's refusal of the
// plan or of its expectation records. Failed executor calls, which the
// simulation injects, are in the report only.
func (l *RayClusterLoop) Step(ctx context.Context) (reconcile.Plan, reconcile.Report, error) {
	l.Kubelet()
	s, err := l.Snapshot()
	if err != nil {
		return reconcile.Plan{}, reconcile.Report{}, err
	}
	p, err := reconcile.Decide(s, l.Options)
	if err != nil {
		return reconcile.Plan{}, reconcile.Report{}, err
	}
	ap := reconcile.Applier{Expectations: l.Tracker, Clock: l.World.Clock, TokenPrefix: "fake-", KeepGoing: l.KeepGoing, MaxInFlight: l.MaxInFlight}
	rep, err := ap.Apply(ctx, p, l.Exec)
	if errors.Is(err, reconcile.ErrInvalidInput) || errors.Is(err, reconcile.ErrExpectation) {
		return p, rep, err
	}
	l.Forming = reconcile.UpdateForming(l.Forming, p, rep)
	return p, rep, nil
}

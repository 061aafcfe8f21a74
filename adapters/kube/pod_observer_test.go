package kube_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/expectations"
)

// TestPodObserverSettlesOnInformerEvents runs a controller whose only watch
// is pods through a PodObserver in front of EnqueueRequestForOwner, on a
// real API server. Its reconciler checks the tracker against an empty pod
// list, as if the pod had already gone again: only the informer event can
// have settled the expectation, and it must have done so before the owner
// was enqueued.
func TestPodObserverSettlesOnInformerEvents(t *testing.T) {
	env := kubetest.Shared(t)
	ctx := testCtx(t, 2*time.Minute)
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	owner := expectations.Owner{Namespace: ns, Name: cm.Name, UID: cm.UID}
	tracker, err := expectations.NewTracker(expectations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := tracker.Record(now, expectations.Record{Owner: owner, Group: "g", Action: expectations.Create, Pod: "p1"}); err != nil {
		t.Fatal(err)
	}

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: server.Options{BindAddress: "0"},
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	obs := &kube.PodObserver{Tracker: tracker, OwnerKind: schema.GroupKind{Kind: "ConfigMap"}, OnError: func(err error) { errs <- err },
		Next: handler.EnqueueRequestForOwner(env.Scheme, mgr.GetRESTMapper(), &corev1.ConfigMap{}, handler.OnlyControllerOwner())}
	satisfied := make(chan bool, 16)
	r := reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		if req.Name != cm.Name {
			t.Errorf("reconciled %v, want the pods' owner", req)
		}
		view, err := tracker.ViewFor(owner, nil) // no pods: the event alone must settle it
		if err != nil {
			return ctrl.Result{}, err
		}
		res, err := tracker.Satisfied(time.Now(), owner, "g", view)
		if err != nil {
			return ctrl.Result{}, err
		}
		satisfied <- res.Satisfied
		return ctrl.Result{}, nil
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named(env.UniqueName("podobserver")).Watches(&corev1.Pod{}, obs).Complete(r); err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	next := func(what string) bool {
		t.Helper()
		select {
		case ok := <-satisfied:
			return ok
		case <-ctx.Done():
			t.Fatalf("%s: no reconcile", what)
			return false
		}
	}

	yes := true
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, Controller: &yes}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p1", OwnerReferences: []metav1.OwnerReference{ref}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if !next("create") {
		t.Fatal("the reconcile caused by the pod's create event did not see the create as observed")
	}

	// A delete settles the same way: its pod's absence alone proves nothing
	// until an event shows the pod.
	if _, err := tracker.Record(time.Now(), expectations.Record{Owner: owner, Group: "g", Action: expectations.Delete, Pod: "p1", PodUID: pod.UID}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if !next("delete") {
		t.Fatal("the reconcile caused by the pod's delete event did not see the delete as observed")
	}
	if n := obs.Observed(); n != 2 {
		t.Errorf("Observed() = %d, want 2: the create and the delete", n)
	}
	select {
	case err := <-errs:
		t.Fatalf("observe error: %v", err)
	default:
	}
}

// TestPodObserverFilters checks which pods reach the tracker: only those
// with a controller of OwnerKind; a missing tracker is reported, never a
// panic.
func TestPodObserverFilters(t *testing.T) {
	ctx := context.Background()
	owner := expectations.Owner{Namespace: "ns", Name: "rc", UID: "u1"}
	yes := true
	pod := func(name, apiVersion, kind string, controller bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "pod-" + types.UID(name)}}
		if kind != "" {
			ref := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "rc", UID: "u1"}
			if controller {
				ref.Controller = &yes
			}
			p.OwnerReferences = []metav1.OwnerReference{ref}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		seen bool
	}{
		{"controlled by a RayCluster", pod("p", "ray.io/v1", "RayCluster", true), true},
		{"controlled by another kind", pod("p", "apps/v1", "ReplicaSet", true), false},
		{"same kind in another group", pod("p", "example.com/v1", "RayCluster", true), false},
		{"owned but not controlled", pod("p", "ray.io/v1", "RayCluster", false), false},
		{"no owner", pod("p", "", "", false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tracker, err := expectations.NewTracker(expectations.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tracker.Record(time.Now(), expectations.Record{Owner: owner, Group: "g", Action: expectations.Create, Pod: "p"}); err != nil {
				t.Fatal(err)
			}
			obs := &kube.PodObserver{Tracker: tracker, OwnerKind: schema.GroupKind{Group: "ray.io", Kind: "RayCluster"}}
			obs.Create(ctx, event.CreateEvent{Object: tc.pod}, nil)
			view, err := tracker.ViewFor(owner, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := tracker.Satisfied(time.Now(), owner, "g", view)
			if err != nil {
				t.Fatal(err)
			}
			if res.Satisfied != tc.seen {
				t.Fatalf("satisfied = %v, want %v (%+v)", res.Satisfied, tc.seen, res)
			}
		})
	}
	var got error
	(&kube.PodObserver{OnError: func(err error) { got = err }}).Delete(ctx, event.DeleteEvent{Object: pod("p", "ray.io/v1", "RayCluster", true)}, nil)
	if !errors.Is(got, kube.ErrNilTracker) {
		t.Fatalf("error = %v, want ErrNilTracker", got)
	}
}

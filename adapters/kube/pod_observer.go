package kube

import (
	"context"
	"errors"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/plancore/plancore/expectations"
)

// ErrNilTracker is passed to PodObserver.OnError for every event a
// PodObserver without a Tracker receives.
var ErrNilTracker = errors.New("kube: PodObserver without a Tracker")

// PodObserver is a controller-runtime event handler for pods that feeds
// every add, update and delete to an expectations.Tracker (Observe, with the
// pod's name, UID and token annotation) before it passes the event on to
// Next. A create or delete then settles on its informer event, even when the
// pod is gone again before the next reconcile lists pods, instead of waiting
// for its expectation's timeout. Use it in place of Owns(&corev1.Pod{}):
//
//	obs := &kube.PodObserver{Tracker: tracker, OwnerKind: schema.GroupKind{Group: "ray.io", Kind: "RayCluster"},
//		Next: handler.EnqueueRequestForOwner(scheme, mapper, rayCluster, handler.OnlyControllerOwner())}
//	ctrl.NewControllerManagedBy(mgr).For(rayCluster).Watches(&corev1.Pod{}, obs).Complete(r)
//
// The owner is the pod's controller reference (metav1.GetControllerOf), in
// the pod's namespace; pods without one, or whose controller is not of
// OwnerKind when it is set, are passed on unobserved. Because the tracker is
// told before Next enqueues the owner, the reconcile that the event causes
// already sees the item as Seen. A PodObserver must not be copied after
// first use.
type PodObserver struct {
	// Tracker receives the observations. Required: without it every event
	// is passed on unobserved and reported to OnError as ErrNilTracker.
	Tracker *expectations.Tracker
	// OwnerKind limits the observations to pods controlled by this group
	// and kind; the zero value accepts any controller.
	OwnerKind schema.GroupKind
	// Next receives every event after the observation; nil drops them.
	Next handler.EventHandler
	// OnError receives the errors of Observe; nil drops them.
	OnError func(error)

	observed atomic.Int64
}

// Observed returns how many expectation items the events have latched as
// seen so far (the sum of Observe's answers). An item the reconciler's own
// pod list settled first is not counted.
func (o *PodObserver) Observed() int64 { return o.observed.Load() }

var _ handler.EventHandler = (*PodObserver)(nil)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Create implements handler.EventHandler.
func (o *PodObserver) Create(ctx context.Context, e event.CreateEvent, q queue) {
	o.observe(e.Object)
	if o.Next != nil {
		o.Next.Create(ctx, e, q)
	}
}

// Update implements handler.EventHandler; it observes the new object.
func (o *PodObserver) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	o.observe(e.ObjectNew)
	if o.Next != nil {
		o.Next.Update(ctx, e, q)
	}
}

// Delete implements handler.EventHandler.
func (o *PodObserver) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	o.observe(e.Object)
	if o.Next != nil {
		o.Next.Delete(ctx, e, q)
	}
}

// Generic implements handler.EventHandler.
func (o *PodObserver) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	o.observe(e.Object)
	if o.Next != nil {
		o.Next.Generic(ctx, e, q)
	}
}

// observe tells the tracker about obj when it is a pod with an accepted
// controller.
func (o *PodObserver) observe(obj client.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod == nil {
		return
	}
	owner, ok := o.ownerOf(pod)
	if !ok {
		return
	}
	if o.Tracker == nil {
		o.report(ErrNilTracker)
		return
	}
	n, err := o.Tracker.Observe(owner, expectations.ObservedPod{Name: pod.Name, UID: pod.UID, Token: pod.Annotations[expectations.TokenAnnotation]})
	o.observed.Add(int64(n))
	o.report(err)
}

func (o *PodObserver) ownerOf(pod *corev1.Pod) (expectations.Owner, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return expectations.Owner{}, false
	}
	if o.OwnerKind != (schema.GroupKind{}) {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != o.OwnerKind.Group || ref.Kind != o.OwnerKind.Kind {
			return expectations.Owner{}, false
		}
	}
	return expectations.Owner{Namespace: pod.Namespace, Name: ref.Name, UID: ref.UID}, true
}

func (o *PodObserver) report(err error) {
	if err != nil && o.OnError != nil {
		o.OnError(err)
	}
}

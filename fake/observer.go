package fake

import (
	"errors"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plancore/plancore/expectations"
)

// ErrObserverNoTracker is passed to PodObserver.OnError for every event a
// PodObserver without a Tracker receives.
var ErrObserverNoTracker = errors.New("fake: PodObserver without a Tracker")

// PodObserver is a pod event handler for an Informer (AddHandler(o.Handle)):
// it feeds every delivered change to an expectations.Tracker (Observe, with
// the pod's name, UID and token annotation) and then calls Enqueue with the
// pod's controller, as adapters/kube's PodObserver does with
// controller-runtime's handlers. A create or delete then settles on its
// informer event, and the owner's next pass already sees the item as Seen.
// The owner is the pod's controller reference in the pod's namespace; pods
// without one, or whose controller is not of OwnerKind when it is set, are
// neither observed nor enqueued. A PodObserver must not be copied after
// first use.
type PodObserver struct {
	// Tracker receives the observations. Required: without it every event
	// is only enqueued and reported to OnError as ErrObserverNoTracker.
	Tracker *expectations.Tracker
	// OwnerKind limits the observations to pods controlled by this group and
	// kind; the zero value accepts any controller.
	OwnerKind schema.GroupKind
	// Enqueue receives the owner after each observation; nil drops it.
	Enqueue func(expectations.Owner)
	// OnError receives the errors of Observe; nil drops them.
	OnError func(error)

	observed atomic.Int64
}

// Observed returns how many expectation items the events have latched as
// seen so far (the sum of Observe's answers).
func (o *PodObserver) Observed() int64 { return o.observed.Load() }

// Handle observes one informer event; register it with Informer.AddHandler.
func (o *PodObserver) Handle(ev PodEvent) {
	ref := metav1.GetControllerOf(&ev.Pod)
	if ref == nil {
		return
	}
	if o.OwnerKind != (schema.GroupKind{}) {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != o.OwnerKind.Group || ref.Kind != o.OwnerKind.Kind {
			return
		}
	}
	owner := expectations.Owner{Namespace: ev.Pod.Namespace, Name: ref.Name, UID: ref.UID}
	if o.Tracker == nil {
		o.report(ErrObserverNoTracker)
	} else {
		n, err := o.Tracker.Observe(owner, expectations.ObservedPod{Name: ev.Pod.Name, UID: ev.Pod.UID, Token: ev.Pod.Annotations[expectations.TokenAnnotation]})
		o.observed.Add(int64(n))
		o.report(err)
	}
	if o.Enqueue != nil {
		o.Enqueue(owner)
	}
}

func (o *PodObserver) report(err error) {
	if err != nil && o.OnError != nil {
		o.OnError(err)
	}
}

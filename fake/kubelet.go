package fake

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errKubeletNoStore is what a Kubelet without a Store answers.
var errKubeletNoStore = errors.New("fake: Kubelet has no Store")

// Kubelet plays the kubelets of a PodStore's cluster: Step starts every
// pending pod that has waited StartDelay since its creation (scheduled to
// NodeName, Running and Ready), and Finish ends a pod as its containers
// would (Succeeded or Failed). Its changes reach the informer, and so the
// controller, like any other. It never touches a terminating pod. A
// simulation calls Step between passes, after moving the World's clock
// (NextStart says where the next start is due).
type Kubelet struct {
	Store *PodStore
	// Namespace limits the kubelet to one namespace; "" means every one.
	Namespace string
	// StartDelay is how long a created pod stays Pending before it runs;
	// zero starts it at the next Step.
	StartDelay time.Duration
	// NodeName is the node the pods run on; "" means "node-1".
	NodeName string
}

// Step starts every pending, non-terminating pod that has waited
// StartDelay at the World's current time, and returns how many it started.
func (k *Kubelet) Step() (int, error) {
	if k.Store == nil {
		return 0, errKubeletNoStore
	}
	node := k.NodeName
	if node == "" {
		node = "node-1"
	}
	now := k.Store.World().Clock.Now()
	n := 0
	for _, p := range k.Store.Pods(k.Namespace) {
		if !k.due(&p, now) {
			continue
		}
		err := k.Store.Mutate(p.Namespace, p.Name, func(p *corev1.Pod) {
			p.Spec.NodeName = node
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}}
		})
		switch {
		case err == nil:
			n++
		case !apierrors.IsNotFound(err): // a pod gone since the list is no error
			return n, err
		}
	}
	return n, nil
}

func (k *Kubelet) due(p *corev1.Pod, now time.Time) bool {
	return p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil && now.Sub(p.CreationTimestamp.Time) >= k.StartDelay
}

// NextStart returns when the earliest pending pod is due to start, and
// false when none is waiting.
func (k *Kubelet) NextStart() (time.Time, bool) {
	if k.Store == nil {
		return time.Time{}, false
	}
	var next time.Time
	found := false
	for _, p := range k.Store.Pods(k.Namespace) {
		if p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
			continue
		}
		if at := p.CreationTimestamp.Add(k.StartDelay); !found || at.Before(next) {
			next, found = at, true
		}
	}
	return next, found
}

// Finish ends a pod's run with phase, corev1.PodSucceeded or
// corev1.PodFailed: its containers exit, it is no longer Ready. Any other
// phase is an error, and so is a missing pod (NotFound).
func (k *Kubelet) Finish(namespace, name string, phase corev1.PodPhase) error {
	if k.Store == nil {
		return errKubeletNoStore
	}
	if phase != corev1.PodSucceeded && phase != corev1.PodFailed {
		return fmt.Errorf("fake: Kubelet.Finish with phase %q, want Succeeded or Failed", phase)
	}
	now := k.Store.World().Clock.Now()
	return k.Store.Mutate(namespace, name, func(p *corev1.Pod) {
		p.Status.Phase = phase
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now)}}
	})
}

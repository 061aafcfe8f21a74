package lock

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Pod annotations HAMi's Bind flow writes on the holder pod.
const (
	// BindPhaseAnnotation records the Bind phase: allocating, success, failed.
	BindPhaseAnnotation = "hami.io/bind-phase"
	// BindPhaseAllocating is the phase between Bind and the device plugin's
	// Allocate, during which the node lock is the Bind→Allocate identity channel.
	BindPhaseAllocating = "allocating"
)

// ClassifyHolder maps the result of looking up a record's holder pod (the pod
// and the error of a Get by namespace/name) to a Holder:
//   - a NotFound error, or no pod → NotFound;
//   - a pod whose UID differs from the record's (both known, identity
//     UIDThenName) → NotFound with Replaced;
//   - phase Succeeded or Failed → Terminal;
//   - phase Pending with hami.io/bind-phase=allocating → Exists, Allocating;
//   - any other pod → Exists;
//   - any other error → Unknown.
//
// It only reads pod.
func ClassifyHolder(pod *corev1.Pod, getErr error, rec Record, id Identity) Holder {
	switch {
	case getErr != nil && apierrors.IsNotFound(getErr):
		return Holder{State: HolderNotFound}
	case getErr != nil:
		return Holder{State: HolderUnknown}
	case pod == nil:
		return Holder{State: HolderNotFound}
	}
	if id == UIDThenName && rec.UID != "" && pod.UID != "" && string(pod.UID) != rec.UID {
		return Holder{State: HolderNotFound, Replaced: true}
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return Holder{State: HolderTerminal}
	case corev1.PodPending:
		return Holder{State: HolderExists, Allocating: pod.Annotations[BindPhaseAnnotation] == BindPhaseAllocating}
	}
	return Holder{State: HolderExists}
}

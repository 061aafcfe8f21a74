package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

// BindExecutor is the gpu.BindExecutor of a Kubernetes cluster: pod and Node
// reads through Reader (an informer cache, as HAMi v2.9+ reads), locks through
// a lock.Locker (normally over a NodeLockStore, so HAMi's device plugin can
// release them), pod annotations by JSON merge patch without resourceVersion
// (as HAMi writes them), and the bind through the pods/binding subresource with
// the pod's UID as precondition.
type BindExecutor struct {
	// Client writes pods and bindings.
	Client client.Client
	// Reader, when set, serves GetPod and GetNode (default Client).
	Reader client.Reader
	// Locker takes and gives back the node locks. Its Backoff.Wait should be
	// zero: gpu's retry loop does the waiting and wakes on Changes.
	Locker *lock.Locker
	// Recorder, when set, records the Bind events on the pod; without it
	// Event does nothing.
	Recorder record.EventRecorder
	// Forget, when set, drops the pod's assumed device usage from the
	// scheduler's cache.
	Forget func(ctx context.Context, pod gpu.PodRef) error
}

var _ gpu.BindExecutor = (*BindExecutor)(nil)

func (e *BindExecutor) reader() client.Reader {
	if e.Reader != nil {
		return e.Reader
	}
	return e.Client
}

func requesterOf(p gpu.PodRef) lock.Requester {
	return lock.Requester{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// GetPod implements gpu.BindExecutor. A pod the cache does not hold yet is
// read from the API server: the scheduler asks to bind a pod it has seen, and
// an informer cache may not have caught up with a pod created a moment ago.
func (e *BindExecutor) GetPod(ctx context.Context, ref gpu.PodRef) (*corev1.Pod, error) {
	var p corev1.Pod
	key := client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}
	err := e.reader().Get(ctx, key, &p)
	if apierrors.IsNotFound(err) && e.Reader != nil {
		err = e.Client.Get(ctx, key, &p)
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// GetNode implements gpu.BindExecutor.
func (e *BindExecutor) GetNode(ctx context.Context, node string) error {
	var n corev1.Node
	return e.reader().Get(ctx, client.ObjectKey{Name: node}, &n)
}

// Lock implements gpu.BindExecutor with Locker.Acquire; a lock held by someone
// else is an error wrapping lock.ErrContention.
func (e *BindExecutor) Lock(ctx context.Context, node, lockName string, pod gpu.PodRef) (uint64, error) {
	if e.Locker == nil {
		return 0, errors.New("kube: BindExecutor.Locker is nil")
	}
	g, err := e.Locker.Acquire(ctx, lock.Key{Name: lockName, Node: node}, requesterOf(pod))
	if err != nil {
		return 0, err
	}
	return g.Record().Epoch, nil
}

// Release implements gpu.BindExecutor with the owner-checked Locker.Release.
func (e *BindExecutor) Release(ctx context.Context, node, lockName string, pod gpu.PodRef) error {
	if e.Locker == nil {
		return errors.New("kube: BindExecutor.Locker is nil")
	}
	_, err := e.Locker.Release(ctx, lock.Key{Name: lockName, Node: node}, requesterOf(pod))
	return err
}

// PatchPodAnnotations implements gpu.BindExecutor: one JSON merge patch of the
// annotations, without resourceVersion, as HAMi writes bind-phase.
func (e *BindExecutor) PatchPodAnnotations(ctx context.Context, ref gpu.PodRef, annotations map[string]string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}
	return e.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, body))
}

// Bind implements gpu.BindExecutor through the pods/binding subresource. The
// binding carries the pod's UID, so a re-created pod of the same name is not
// bound by mistake (409). Binding a pod already bound to node succeeds; bound
// elsewhere, it is the API server's Conflict. An error whose outcome cannot be
// known (a timeout, a server error, a lost connection) wraps
// gpu.ErrOutcomeUnknown, so Bind re-reads the pod before deciding.
func (e *BindExecutor) Bind(ctx context.Context, ref gpu.PodRef, node string) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name, UID: types.UID(ref.UID)}}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name, UID: types.UID(ref.UID)},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	err := e.Client.SubResource("binding").Create(ctx, pod, binding)
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err):
		// Already bound: to this node is success (idempotent), else the
		// Conflict stands.
		var cur corev1.Pod
		if gerr := e.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &cur); gerr == nil &&
			cur.Spec.NodeName == node && (ref.UID == "" || string(cur.UID) == ref.UID) {
			return nil
		}
		return err
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("bind %s to %s: %w: %w", ref, node, gpu.ErrOutcomeUnknown, err)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		if code >= 400 && code < 500 && !apierrors.IsTimeout(err) && !apierrors.IsTooManyRequests(err) {
			return err // a definite refusal: not bound
		}
	}
	return fmt.Errorf("bind %s to %s: %w: %w", ref, node, gpu.ErrOutcomeUnknown, err)
}

// Event implements gpu.BindExecutor: an event on the pod through Recorder.
func (e *BindExecutor) Event(_ context.Context, ref gpu.PodRef, eventType, reason, message string) error {
	if e.Recorder == nil {
		return nil
	}
	e.Recorder.Event(&corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ref.Namespace, Name: ref.Name, UID: types.UID(ref.UID)},
		eventType, reason, message)
	return nil
}

// ForgetAssumed implements gpu.BindExecutor through Forget.
func (e *BindExecutor) ForgetAssumed(ctx context.Context, ref gpu.PodRef) error {
	if e.Forget == nil {
		return nil
	}
	return e.Forget(ctx, ref)
}

// BindWaiter is the gpu.Waiter of a live scheduler: a clock (the real one
// unless Clock is set), its timers, and wake-ups from a NodeLockStore's change
// notifications (its own writes, and other processes' when an informer feeds
// its EventHandler). It is gpu.StoreWaiter over a NodeLockStore.
type BindWaiter struct {
	// Store, when set, supplies Changes; without it every wait sleeps out.
	Store *NodeLockStore
	// Clock reads the time and runs the timers; nil means the real clock.
	Clock clock.Clock
}

var _ gpu.Waiter = BindWaiter{}

func (w BindWaiter) waiter() gpu.StoreWaiter {
	sw := gpu.StoreWaiter{Clock: w.Clock}
	if w.Store != nil {
		sw.Store = w.Store
	}
	return sw
}

// Now implements gpu.Waiter.
func (w BindWaiter) Now() time.Time { return w.waiter().Now() }

// Changes implements gpu.Waiter.
func (w BindWaiter) Changes(node, lockName string) <-chan struct{} {
	if w.Store == nil {
		return nil
	}
	return w.Store.Changes(lock.Key{Name: lockName, Node: node})
}

// Sleep implements gpu.Waiter.
func (w BindWaiter) Sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) (bool, error) {
	return w.waiter().Sleep(ctx, d, wake)
}

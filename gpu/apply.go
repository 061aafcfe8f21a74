package gpu

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/lock"
)

// BindExecutor performs the Bind flow's actions against a cluster: a
// Kubernetes client and a lock store in production, package fake in tests.
// Every method takes ctx first and must be idempotent where the API allows:
// Bind of a pod already bound to node succeeds, Release of a lock not held is
// a no-op.
type BindExecutor interface {
	// GetPod reads the pod (from an informer cache, as HAMi v2.9+ does).
	GetPod(ctx context.Context, pod PodRef) (*corev1.Pod, error)
	// GetNode checks that the node exists.
	GetNode(ctx context.Context, node string) error
	// Lock acquires lockName on node for pod and returns the grant's fencing
	// epoch. When the lock is held by someone else the error MUST wrap
	// lock.ErrContention, the only error Bind retries.
	Lock(ctx context.Context, node, lockName string, pod PodRef) (epoch uint64, err error)
	// Release gives lockName on node back, owner-checked: a lock held by
	// someone else is left alone and is not an error.
	Release(ctx context.Context, node, lockName string, pod PodRef) error
	// PatchPodAnnotations merge-patches the pod's annotations (no
	// resourceVersion, as HAMi).
	PatchPodAnnotations(ctx context.Context, pod PodRef, annotations map[string]string) error
	// Bind binds the pod to node (a Binding with the pod's name and UID). An
	// error whose outcome is unknown MUST wrap ErrOutcomeUnknown (or
	// context.DeadlineExceeded).
	Bind(ctx context.Context, pod PodRef, node string) error
	// Event records an event on the pod; its error is reported, never fatal.
	Event(ctx context.Context, pod PodRef, eventType, reason, message string) error
	// ForgetAssumed drops the pod's assumed device usage from the scheduler's
	// cache (Filter recorded it).
	ForgetAssumed(ctx context.Context, pod PodRef) error
}

// Waiter gives ApplyBind its clock and its backoff sleeps.
type Waiter interface {
	// Now reads the clock.
	Now() time.Time
	// Changes returns a channel closed at the next change of lockName on node
	// after the call, or nil when the store cannot notify.
	Changes(node, lockName string) <-chan struct{}
	// Sleep waits d, or until wake is closed (woken), or until ctx ends (err).
	Sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) (woken bool, err error)
}

// ApplyBind runs the Bind state machine to its end (Bind is a step machine
// rather than one Plan applied at once, because each step depends on what
// the cluster answered to the previous one): it performs each action
// Next returns through exec, classifies the result (lock.ErrContention,
// ErrOutcomeUnknown) and feeds it back with StepBind. It never re-plans and
// never skips the failure path: a failed Bind has written bind-phase=failed
// and released exactly the locks it took, in reverse, before ApplyBind
// returns the original error. The returned error is Outcome.Err.
//
// A contended lock's change channel is taken before the Lock call, so a
// release between the refusal and the Wait still wakes the retry.
//
// The flow's start, its waits and its retry deadline are all read from w,
// one clock: BindInput.Now must be zero or w's current reading, and any
// other time is refused (ErrInvalidInput naming now) rather than replaced.
func ApplyBind(ctx context.Context, in BindInput, exec BindExecutor, w Waiter) (Outcome, error) {
	if plancore.IsNil(exec) || plancore.IsNil(w) {
		return Outcome{Err: ErrNilExecutor, ReturnGoError: true}, ErrNilExecutor
	}
	now := w.Now()
	if !in.Now.IsZero() && !in.Now.Equal(now) {
		err := plancore.Invalid(ErrInvalidInput, field.ErrorList{field.Invalid(field.NewPath("now"), in.Now.String(),
			"ApplyBind times the whole flow on its Waiter's clock (now "+now.String()+"): leave Now zero, or drive StartBind and StepBind on your own clock")})
		return Outcome{Err: err, ReturnGoError: true}, err
	}
	in.Now = now
	st, err := StartBind(in)
	if err != nil {
		return Outcome{Err: err, ReturnGoError: true}, err
	}
	var wake <-chan struct{}
	for !st.Done() {
		a := st.Next()
		var r Result
		if a.Kind == ActionWait {
			if len(a.WaitLocks) == 0 {
				wake = nil // polling, as HAMi does
			}
			r.Woken, r.Err = w.Sleep(ctx, a.Wait, wake)
			wake = nil
		} else {
			var ch <-chan struct{}
			r, ch = Perform(ctx, a, exec, w.Changes)
			if ch != nil {
				wake = ch
			}
		}
		r.Now = w.Now()
		if st, err = StepBind(st, r); err != nil {
			return Outcome{Err: err, ReturnGoError: true}, err
		}
	}
	out := st.Outcome()
	return out, out.Err
}

// Perform executes one action other than Wait through exec and classifies its
// result: Contention for an error wrapping lock.ErrContention, OutcomeUnknown
// for a Bind error wrapping ErrOutcomeUnknown or context.DeadlineExceeded.
// Result.Now is left for the caller to set. For a Lock, changes (which may be
// nil) is consulted before the call, so a release between the refusal and the
// Wait is not missed; on contention that channel is returned as wake.
//
// The failure path's writes, Event and ForgetAssumed run on a context without
// ctx's cancellation, so a cancelled Bind still cleans up.
func Perform(ctx context.Context, a Action, exec BindExecutor, changes func(node, lockName string) <-chan struct{}) (r Result, wake <-chan struct{}) {
	switch a.Kind {
	case ActionGetPod:
		r.Pod, r.Err = exec.GetPod(ctx, a.Pod)
	case ActionGetNode:
		r.Err = exec.GetNode(ctx, a.Node)
	case ActionLock:
		var ch <-chan struct{}
		if changes != nil {
			ch = changes(a.Node, a.Lock)
		}
		r.Epoch, r.Err = exec.Lock(ctx, a.Node, a.Lock, a.Pod)
		if r.Err != nil && errors.Is(r.Err, lock.ErrContention) {
			r.Contention, wake = true, ch
		}
	case ActionRelease:
		r.Err = exec.Release(cleanup(ctx, a), a.Node, a.Lock, a.Pod)
	case ActionPatchPod:
		r.Err = exec.PatchPodAnnotations(cleanup(ctx, a), a.Pod, a.Annotations)
	case ActionBind:
		r.Err = exec.Bind(ctx, a.Pod, a.Node)
		r.OutcomeUnknown = r.Err != nil && (errors.Is(r.Err, ErrOutcomeUnknown) || errors.Is(r.Err, context.DeadlineExceeded))
	case ActionEvent:
		r.Err = exec.Event(context.WithoutCancel(ctx), a.Pod, a.EventType, a.EventReason, a.Message)
	case ActionForgetAssumed:
		r.Err = exec.ForgetAssumed(context.WithoutCancel(ctx), a.Pod)
	default:
		r.Err = fmt.Errorf("%w: Perform cannot run action %q", ErrInvalidBind, a.Kind)
	}
	return r, wake
}

// cleanup returns the context for a write: the failure path's writes must not
// be skipped because the Bind's own context ended.
func cleanup(ctx context.Context, a Action) context.Context {
	switch a.Reason.Code {
	case ReasonFailureRollback, ReasonMarkFailed, ReasonRetryRollback:
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// VerifyFence reports whether the allocator may serve pod under the lock
// record rec of lockName: the record must name the pod (by UID when the
// record has one, else by namespace/name) and carry exactly the epoch the pod's
// plancore.io/lock-epoch annotation holds for that lock. A record without an
// epoch (a HAMi writer stole the lock) never verifies. HAMi serves whichever
// pod the lock names (#3076, #3096).
func VerifyFence(rec lock.Record, lockName string, pod *corev1.Pod) bool {
	if pod == nil || rec.Epoch == 0 || rec.Namespace != pod.Namespace || rec.Name != pod.Name {
		return false
	}
	if rec.UID != "" && rec.UID != string(pod.UID) {
		return false
	}
	held, err := ParseLockEpochs(pod.Annotations[AnnoLockEpoch])
	if err != nil {
		return false
	}
	for _, h := range held {
		if h.Name == lockName {
			return h.Epoch == rec.Epoch
		}
	}
	return false
}

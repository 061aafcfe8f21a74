package gpu

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// PodRef names the pod being bound.
type PodRef struct {
	Namespace string
	Name      string
	UID       string
}

// String renders "namespace/name".
func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// BindInput is the extender's Bind call: which pod goes to which node.
type BindInput struct {
	// Pod names the pod; UID may be empty (the extender arguments carry it).
	Pod PodRef
	// Node is the target node.
	Node string
	// Now is the time Bind starts; bind-time and the retry deadline are taken
	// from it.
	Now time.Time
	// Registry decides which locks the pod needs.
	Registry Registry
	// Options tunes retries and timeouts.
	Options Options
	// Seed feeds the retry jitter, together with the pod UID.
	Seed uint64
}

// ActionKind names one step of the Bind flow.
type ActionKind string

// The actions of the Bind state machine, in the order a successful Bind emits
// them (Wait, Release, Event and ForgetAssumed appear on retries and failures).
const (
	ActionGetPod        ActionKind = "GetPod"
	ActionGetNode       ActionKind = "GetNode"
	ActionLock          ActionKind = "Lock"
	ActionRelease       ActionKind = "Release"
	ActionWait          ActionKind = "Wait"
	ActionPatchPod      ActionKind = "PatchPod"
	ActionBind          ActionKind = "Bind"
	ActionEvent         ActionKind = "Event"
	ActionForgetAssumed ActionKind = "ForgetAssumed"
	// ActionDone means the state machine has finished; see BindState.Outcome.
	ActionDone ActionKind = "Done"
)

// Reason codes of Bind actions.
const (
	// ReasonRead: GetPod or GetNode at the start of Bind.
	ReasonRead ReasonCode = "Read"
	// ReasonRereadAfterUnknown: GetPod after a Bind whose outcome is unknown.
	ReasonRereadAfterUnknown ReasonCode = "RereadAfterUnknown"
	// ReasonAcquire: Lock of a required lock.
	ReasonAcquire ReasonCode = "Acquire"
	// ReasonRetryRollback: Release of a partial lock before retrying contention.
	ReasonRetryRollback ReasonCode = "RetryRollback"
	// ReasonBackoff: Wait before the next lock attempt.
	ReasonBackoff ReasonCode = "Backoff"
	// ReasonMarkAllocating: PatchPod writing bind-phase=allocating and the epochs.
	ReasonMarkAllocating ReasonCode = "MarkAllocating"
	// ReasonBind: the Bind call itself.
	ReasonBind ReasonCode = "Bind"
	// ReasonReport: the Event reporting the outcome.
	ReasonReport ReasonCode = "Report"
	// ReasonMarkFailed: PatchPod writing bind-phase=failed on the failure path.
	ReasonMarkFailed ReasonCode = "MarkFailed"
	// ReasonFailureRollback: Release of a taken lock on the failure path.
	ReasonFailureRollback ReasonCode = "FailureRollback"
	// ReasonForget: ForgetAssumed of the pod's assumed usage.
	ReasonForget ReasonCode = "Forget"
)

// actionMessages are the messages of each Bind action code.
var actionMessages = map[ReasonCode]string{
	ReasonRead:               "read before locking",
	ReasonRereadAfterUnknown: "the Bind outcome is unknown: re-read the pod",
	ReasonAcquire:            "take the next required lock, in ascending order",
	ReasonRetryRollback:      "contention: release the partial locks, in reverse, before retrying",
	ReasonBackoff:            "contention: back off, woken early by a release",
	ReasonMarkAllocating:     "mark the pod allocating and record the fencing epochs",
	ReasonBind:               "bind the pod to the node",
	ReasonReport:             "record the outcome",
	ReasonMarkFailed:         "the Bind failed: mark it before releasing anything",
	ReasonFailureRollback:    "the Bind failed: release the locks taken, in reverse",
	ReasonForget:             "drop the pod's assumed device usage",
}

func actionReason(c ReasonCode) Reason { return Reason{Code: c, Message: actionMessages[c]} }

// Event reasons Bind records on the pod.
const (
	EventBindingSucceeded = "BindingSucceeded"
	EventBindingFailed    = "BindingFailed"
	EventBindingUnknown   = "BindingOutcomeUnknown"
)

// Action is the one thing the executor must do next.
type Action struct {
	Kind ActionKind
	// Pod and Node identify the objects; every action carries them.
	Pod  PodRef
	Node string
	// Lock is the lock name for Lock and Release.
	Lock string
	// Annotations is the merge patch for PatchPod.
	Annotations map[string]string
	// Wait is the longest a Wait may sleep; it ends early when the contended
	// lock changes on Node. WaitLocks are the locks being waited for; empty
	// means poll (FixedInterval): sleep out the whole Wait.
	Wait      time.Duration
	WaitLocks []string
	// EventType ("Normal" or "Warning"), EventReason and Message describe an Event.
	EventType   string
	EventReason string
	Message     string
	// Reason says why the executor performs the action; match on its Code
	// (ReasonAcquire, ReasonRetryRollback, ReasonFailureRollback, ...).
	Reason Reason
}

// Result is what the executor reports for the action it just performed.
type Result struct {
	// Now is the time at which the action completed.
	Now time.Time
	// Err is the action's error, nil on success.
	Err error
	// Pod is GetPod's result.
	Pod *corev1.Pod
	// Epoch is the fencing epoch a successful Lock granted.
	Epoch uint64
	// Contention reports that a Lock's Err is lock contention (the lock core's
	// ErrContention): the only error Bind retries.
	Contention bool
	// OutcomeUnknown reports that a Bind's Err leaves open whether the pod was
	// bound (a timeout); Bind then re-reads the pod.
	OutcomeUnknown bool
	// Woken reports that a Wait ended on a lock change rather than its timeout.
	Woken bool
}

// HeldLock is one lock a Bind holds, with the epoch it was granted.
type HeldLock struct {
	Name  string
	Epoch uint64
}

// Outcome is how a finished Bind ended.
type Outcome struct {
	// Bound is true when the pod is bound to the node.
	Bound bool
	// Unknown is true when the Bind call's outcome could not be determined
	// even by re-reading the pod: the locks are kept, to expire by TTL.
	Unknown bool
	// Held are the locks kept for the allocator (on success, or when the outcome
	// could not be determined).
	Held []HeldLock
	// Released are the locks released on the failure path, in release order.
	Released []string
	// Attempts is the number of lock attempts started (0 for a pod that needs
	// no lock).
	Attempts int
	// Err is the original error of a failed Bind, nil on success. It wraps the
	// executor's error, so errors.Is sees the lock core's ErrContention.
	Err error
	// PhaseErr is the error of writing bind-phase=failed, if that write failed.
	PhaseErr error
	// ReleaseErrs are the errors of failure-path releases (logged by HAMi and
	// otherwise ignored).
	ReleaseErrs []error
	// ReturnGoError is true when the extender must return Err as its Go error as
	// well as in the result (HAMi does so only when the pod cannot be read).
	ReturnGoError bool
}

// ExtenderError renders the extender result's Error field: the original error,
// plus the bind-phase write error when that failed too.
func (o Outcome) ExtenderError() string {
	if o.Err == nil {
		return ""
	}
	if o.PhaseErr != nil {
		return fmt.Sprintf("%v; also failed to mark %s=%s: %v", o.Err, AnnoBindPhase, PhaseFailed, o.PhaseErr)
	}
	return o.Err.Error()
}

type bindPhase int

const (
	phGetPod bindPhase = iota
	phGetNode
	phLock
	phRetryRelease
	phWait
	phPatch
	phBind
	phReread
	phSuccessEvent
	phFailPatch
	phFailRelease
	phFailEvent
	phForget
	phDone
)

// BindState is the Bind state machine: a plain value advanced by StepBind. The
// zero value is not valid; start with StartBind.
type BindState struct {
	in       BindInput
	opts     Options
	phase    bindPhase
	locks    []string   // required, ascending
	taken    []HeldLock // acquired in this attempt, in order
	idx      int        // next lock (phLock) or next release (phRetryRelease/phFailRelease)
	attempt  int        // failed lock attempts so far
	retry    bool       // this pod retries contention
	bindTime int64
	waitFor  time.Duration
	// contention is the last contention error, reported if the deadline passes.
	contention error
	err        error
	goErr      bool
	unknown    bool // the outcome could not be determined; locks are kept
	out        Outcome
}

// Validate reports every invalid field of the input, wrapping ErrInvalidBind
// (and so ErrInvalidInput): an empty pod namespace or name or node, a zero
// Now; and invalid Options, wrapping ErrInvalidOptions.
func (in BindInput) Validate() error {
	var errs field.ErrorList
	if in.Pod.Namespace == "" {
		errs = append(errs, field.Required(field.NewPath("pod", "namespace"), "the pod's namespace"))
	}
	if in.Pod.Name == "" {
		errs = append(errs, field.Required(field.NewPath("pod", "name"), "the pod's name"))
	}
	if in.Node == "" {
		errs = append(errs, field.Required(field.NewPath("node"), "the target node"))
	}
	if in.Now.IsZero() {
		errs = append(errs, field.Required(field.NewPath("now"), "the time Bind starts"))
	}
	return plancore.Join(invalid(ErrInvalidBind, errs), in.Options.Validate())
}

// StartBind validates in and returns the initial state, whose first action is
// GetPod.
func StartBind(in BindInput) (BindState, error) {
	if err := in.Validate(); err != nil {
		return BindState{}, err
	}
	return BindState{in: in, opts: in.Options.withDefaults(), phase: phGetPod, bindTime: in.Now.Unix()}, nil
}

// Done reports whether the state machine has finished.
func (s BindState) Done() bool { return s.phase == phDone }

// Outcome returns the result of a finished Bind; before that it is the zero Outcome.
func (s BindState) Outcome() Outcome {
	if s.phase != phDone {
		return Outcome{}
	}
	out := s.out
	out.Held = slices.Clone(out.Held)
	out.Released = slices.Clone(out.Released)
	out.ReleaseErrs = slices.Clone(out.ReleaseErrs)
	return out
}

// RequiredLocks returns the locks the Bind needs, once the pod has been read.
func (s BindState) RequiredLocks() []string { return slices.Clone(s.locks) }

// Next returns the action the executor must perform now. It is ActDone once the
// Bind has finished.
func (s BindState) Next() Action {
	a := Action{Pod: s.in.Pod, Node: s.in.Node}
	switch s.phase {
	case phGetPod:
		a.Kind, a.Reason = ActionGetPod, actionReason(ReasonRead)
	case phReread:
		a.Kind, a.Reason = ActionGetPod, actionReason(ReasonRereadAfterUnknown)
	case phGetNode:
		a.Kind, a.Reason = ActionGetNode, actionReason(ReasonRead)
	case phLock:
		a.Kind, a.Lock, a.Reason = ActionLock, s.locks[s.idx], actionReason(ReasonAcquire)
	case phRetryRelease:
		a.Kind, a.Lock, a.Reason = ActionRelease, s.taken[len(s.taken)-1-s.idx].Name, actionReason(ReasonRetryRollback)
	case phWait:
		a.Kind, a.Wait, a.Reason = ActionWait, s.waitFor, actionReason(ReasonBackoff)
		if s.opts.FixedInterval == 0 {
			// HAMi polls (Options.FixedInterval restores that); plancore wakes on release.
			a.WaitLocks = slices.Clone(s.locks)
		}
	case phPatch:
		a.Kind, a.Reason = ActionPatchPod, actionReason(ReasonMarkAllocating)
		a.Annotations = map[string]string{
			AnnoBindPhase: PhaseAllocating,
			AnnoBindTime:  strconv.FormatInt(s.bindTime, 10),
		}
		if len(s.taken) > 0 {
			a.Annotations[AnnoLockEpoch] = FormatLockEpochs(s.taken)
		}
	case phBind:
		a.Kind, a.Reason = ActionBind, actionReason(ReasonBind)
	case phSuccessEvent:
		a.Kind, a.EventType, a.EventReason, a.Reason = ActionEvent, "Normal", EventBindingSucceeded, actionReason(ReasonReport)
		a.Message = fmt.Sprintf("bound %s to %s", s.in.Pod, s.in.Node)
		if s.unknown {
			a.EventType, a.EventReason = "Warning", EventBindingUnknown
			a.Message = fmt.Sprintf("binding %s to %s: %v; locks kept until they expire", s.in.Pod, s.in.Node, s.err)
		}
	case phFailPatch:
		a.Kind, a.Reason = ActionPatchPod, actionReason(ReasonMarkFailed)
		a.Annotations = map[string]string{AnnoBindPhase: PhaseFailed}
	case phFailRelease:
		a.Kind, a.Lock, a.Reason = ActionRelease, s.taken[len(s.taken)-1-s.idx].Name, actionReason(ReasonFailureRollback)
	case phFailEvent:
		a.Kind, a.EventType, a.EventReason, a.Reason = ActionEvent, "Warning", EventBindingFailed, actionReason(ReasonReport)
		a.Message = fmt.Sprintf("binding %s to %s failed: %v", s.in.Pod, s.in.Node, s.err)
	case phForget:
		a.Kind, a.Reason = ActionForgetAssumed, actionReason(ReasonForget)
	default:
		a.Kind = ActionDone
	}
	return a
}

// StepBind feeds the result of the action Next returned and returns the next
// state. s is not modified. Feeding a result to a finished Bind is an error
// wrapping ErrInvalidBind.
func StepBind(s BindState, r Result) (BindState, error) {
	if s.phase == phDone {
		return s, fmt.Errorf("%w: pod %s: result %v after the Bind finished", ErrInvalidBind, s.in.Pod, r.Err)
	}
	// Every slice is copied before it changes, so s stays untouched.
	s.locks = slices.Clip(s.locks)
	s.taken = slices.Clip(s.taken)
	s.out.Held = slices.Clip(s.out.Held)
	s.out.Released = slices.Clip(s.out.Released)
	s.out.ReleaseErrs = slices.Clip(s.out.ReleaseErrs)

	return stepHandlers[s.phase](s, r), nil
}

// stepHandlers feeds a result to the phase that asked for it; each phase's
// handler returns the next state.
var stepHandlers = [...]func(BindState, Result) BindState{
	phGetPod:       BindState.onGetPod,
	phGetNode:      BindState.onGetNode,
	phLock:         BindState.onLock,
	phRetryRelease: BindState.onRetryRelease,
	phWait:         BindState.onWait,
	phPatch:        BindState.onPatch,
	phBind:         BindState.onBind,
	phReread:       BindState.onReread,
	phSuccessEvent: BindState.onSuccessEvent,
	phFailPatch:    BindState.onFailPatch,
	phFailRelease:  BindState.onFailRelease,
	phFailEvent:    func(s BindState, _ Result) BindState { s.phase = phForget; return s },
	phForget:       BindState.onForget,
}

// onGetPod reads the locks the pod needs and whether it retries contention.
func (s BindState) onGetPod(r Result) BindState {
	if r.Err == nil && r.Pod == nil {
		r.Err = errors.New("executor returned no pod and no error")
	}
	if r.Err == nil && s.in.Pod.UID != "" && string(r.Pod.UID) != s.in.Pod.UID {
		r.Err = fmt.Errorf("pod %s has UID %s, Bind was asked for UID %s (the pod was replaced)", s.in.Pod, r.Pod.UID, s.in.Pod.UID)
	}
	if r.Err != nil {
		// HAMi: drop the assumed allocation and return the error both in
		// the result and as the Go error. No pod, so no bind-phase to write.
		s.err = fmt.Errorf("get pod %s: %w", s.in.Pod, r.Err)
		s.goErr = true
		s.phase = phForget
		return s
	}
	locks, err := RequiredLocks(r.Pod, s.in.Registry)
	if err != nil {
		return s.fail(fmt.Errorf("pod %s: %w", s.in.Pod, err))
	}
	s.locks = locks
	s.retry = !s.opts.RetryPodGroupOnly || r.Pod.Labels[LabelPodGroup] != ""
	s.phase = phGetNode
	return s
}

func (s BindState) onGetNode(r Result) BindState {
	if r.Err != nil {
		return s.fail(fmt.Errorf("get node %s: %w", s.in.Node, r.Err))
	}
	s.phase, s.idx = phLock, 0
	return s.afterLock()
}

// onLock records a granted lock, or decides between the failure path, the
// retry rollback and the wait after contention.
func (s BindState) onLock(r Result) BindState {
	name := s.locks[s.idx]
	if r.Err == nil {
		s.taken = append(s.taken, HeldLock{Name: name, Epoch: r.Epoch})
		s.idx++
		return s.afterLock()
	}
	s.attempt++
	if !r.Contention {
		// Any error but contention may come after the write took effect
		// (a lost response), so the failure path releases this lock too,
		// first; the release is owner-checked, so if the write never
		// happened it is a no-op.
		s.taken = append(s.taken, HeldLock{Name: name})
		return s.fail(fmt.Errorf("lock %s on node %s: %w", name, s.in.Node, r.Err))
	}
	if !s.retry {
		return s.fail(fmt.Errorf("lock %s on node %s (no retry: not a pod-group member): %w", name, s.in.Node, r.Err))
	}
	s.contention = fmt.Errorf("lock %s on node %s: %w", name, s.in.Node, r.Err)
	if r.Now.Sub(s.in.Now) >= s.opts.RetryDeadline || len(s.taken) == 0 {
		// Past the deadline the partial locks go straight to the failure
		// path; with none taken there is nothing to roll back.
		return s.enterWait(r.Now)
	}
	s.idx = 0
	s.phase = phRetryRelease
	return s
}

func (s BindState) onRetryRelease(r Result) BindState {
	if r.Err != nil {
		// Only contention is retried. The locks not yet released, the
		// failed one included, go to the failure path, which releases
		// them in reverse once more.
		name := s.taken[len(s.taken)-1-s.idx].Name
		s.taken = s.taken[:len(s.taken)-s.idx]
		return s.fail(fmt.Errorf("release %s on node %s before retrying: %w", name, s.in.Node, r.Err))
	}
	s.idx++
	if s.idx == len(s.taken) {
		s.taken = nil
		return s.enterWait(r.Now)
	}
	return s
}

func (s BindState) onWait(r Result) BindState {
	if r.Err != nil {
		return s.fail(fmt.Errorf("waiting to retry the lock on node %s: %w", s.in.Node, r.Err))
	}
	s.idx = 0
	return s.afterLock()
}

func (s BindState) onPatch(r Result) BindState {
	if r.Err != nil {
		return s.fail(fmt.Errorf("patch pod %s: %w", s.in.Pod, r.Err))
	}
	s.phase = phBind
	return s
}

func (s BindState) onBind(r Result) BindState {
	switch {
	case r.Err == nil:
		return s.succeed()
	case r.OutcomeUnknown:
		s.err = fmt.Errorf("bind pod %s to %s: %w", s.in.Pod, s.in.Node, r.Err)
		s.phase = phReread
		return s
	default:
		return s.fail(fmt.Errorf("bind pod %s to %s: %w", s.in.Pod, s.in.Node, r.Err))
	}
}

// onReread settles an unknown Bind outcome from a re-read of the pod.
func (s BindState) onReread(r Result) BindState {
	switch {
	case r.Err != nil || r.Pod == nil:
		// Nobody knows whether the pod is bound. Releasing could strand a
		// bound pod without its allocation; keep the locks (their TTL
		// recovers them) and report.
		s.unknown = true
		s.err = fmt.Errorf("%w; re-reading the pod failed: %v", s.err, r.Err)
		s.phase = phSuccessEvent
		return s
	case r.Pod.Spec.NodeName == s.in.Node:
		s.err = nil
		return s.succeed()
	default:
		return s.fail(s.err)
	}
}

func (s BindState) onSuccessEvent(Result) BindState {
	s.phase = phDone
	s.out.Bound = !s.unknown
	s.out.Unknown = s.unknown
	s.out.Held = slices.Clone(s.taken)
	s.out.Err = s.err
	return s
}

func (s BindState) onFailPatch(r Result) BindState {
	if r.Err != nil {
		s.out.PhaseErr = r.Err
	}
	s.idx = 0
	s.phase = phFailRelease
	if len(s.taken) == 0 {
		s.phase = phFailEvent
	}
	return s
}

func (s BindState) onFailRelease(r Result) BindState {
	name := s.taken[len(s.taken)-1-s.idx].Name
	s.out.Released = append(s.out.Released, name)
	if r.Err != nil {
		s.out.ReleaseErrs = append(s.out.ReleaseErrs, fmt.Errorf("release %s: %w", name, r.Err))
	}
	s.idx++
	if s.idx == len(s.taken) {
		s.phase = phFailEvent
	}
	return s
}

func (s BindState) onForget(Result) BindState {
	s.phase = phDone
	s.out.Err = s.err
	s.out.ReturnGoError = s.goErr
	s.out.Held = nil
	return s
}

// afterLock moves on once the lock at idx is taken: the next lock, or the patch.
func (s BindState) afterLock() BindState {
	if s.idx < len(s.locks) {
		if s.idx == 0 {
			s.out.Attempts++
		}
		s.phase = phLock
		return s
	}
	s.phase = phPatch
	return s
}

// enterWait schedules the backoff after a contended attempt whose partial locks
// are released, taking the time left from now so that the sleep never ends
// past the deadline; past the deadline it gives up with the contention error.
func (s BindState) enterWait(now time.Time) BindState {
	sleep, ok := NextRetry(s.attempt-1, now.Sub(s.in.Now), s.opts, jitterDraw(s.in.Seed, s.in.Pod.UID, s.attempt-1))
	if !ok {
		return s.fail(fmt.Errorf("still contended after %v and %d attempts: %w", s.opts.RetryDeadline, s.attempt, s.contention))
	}
	s.waitFor = sleep
	s.phase = phWait
	return s
}

func (s BindState) succeed() BindState {
	s.phase = phSuccessEvent
	return s
}

// fail enters the failure path: mark bind-phase=failed first,
// so no allocator fallback serves the pod once its lock is free, then release
// exactly the locks taken, in reverse, then the event and ForgetAssumed. HAMi
// never writes failed on the Bind path and leaves allocating behind (#2645),
// and releases every backend in forward order even after its rollback.
func (s BindState) fail(err error) BindState {
	s.err = err
	s.idx = 0
	s.phase = phFailPatch
	return s
}

// FormatLockEpochs renders the plancore.io/lock-epoch annotation:
// "<lock name>=<epoch>" entries joined by ";" in acquisition order.
func FormatLockEpochs(held []HeldLock) string {
	parts := make([]string, len(held))
	for i, h := range held {
		parts[i] = h.Name + "=" + strconv.FormatUint(h.Epoch, 10)
	}
	return strings.Join(parts, ";")
}

// ParseLockEpochs parses the plancore.io/lock-epoch annotation. Every
// malformed entry is reported at once in a *plancore.InvalidError wrapping
// ErrInvalidBind (and so ErrInvalidInput), named by its position among the
// ";"-separated entries (metadata.annotations[plancore.io/lock-epoch][1])
// with the entry as the value.
func ParseLockEpochs(s string) ([]HeldLock, error) {
	if s == "" {
		return nil, nil
	}
	var out []HeldLock
	var errs field.ErrorList
	for i, part := range strings.Split(s, ";") {
		anno := func() *field.Path { return field.NewPath("metadata", "annotations").Key(AnnoLockEpoch).Index(i) }
		name, num, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			errs = append(errs, field.Invalid(anno(), part, "want <lock name>=<epoch>"))
			continue
		}
		e, err := strconv.ParseUint(num, 10, 64)
		if err != nil || e == 0 {
			errs = append(errs, field.Invalid(anno(), part, fmt.Sprintf("epoch %q is not an integer ≥ 1", num)))
			continue
		}
		out = append(out, HeldLock{Name: name, Epoch: e})
	}
	if err := invalid(ErrInvalidBind, errs); err != nil {
		return nil, err
	}
	return out, nil
}

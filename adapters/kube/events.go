package kube

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/reconcile"
)

// Event is one Kubernetes Event that a pass records on the object it
// reconciled: what a plan did, or why it could not act. Each core turns its
// plan and report into a list of them (ReconcileEvents, DAGEvents); Emit
// records the list through controller-runtime's recorder.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is the core's typed reason code (UpperCamelCase), so a reader
	// filters events as a program matches codes.
	Reason string
	// Message is the reason's message, for people.
	Message string
}

// ErrNilRecorder is returned by Emit without an EventRecorder.
var ErrNilRecorder = errors.New("kube: Emit without an EventRecorder (use mgr.GetEventRecorderFor)")

// ErrNilEventObject is returned by Emit without an object to record on.
var ErrNilEventObject = errors.New("kube: Emit without an object to record events on")

// ErrBadEvent is wrapped by Emit's error for each event it refused: a type
// other than Normal or Warning, or an empty reason, which client-go's
// recorder would drop silently.
var ErrBadEvent = errors.New("kube: event refused")

// Emit records events on obj through rec (a manager's
// GetEventRecorderFor(name)), in order, each (type, reason, message) once:
// a pass that creates five pods for the same reason records one event, not
// five. Call it once per pass and object, so the deduplication is per pass;
// the recorder itself aggregates the same event across passes (its count).
// Events with a bad type or an empty reason are skipped and reported in the
// error (ErrBadEvent) after the good ones are recorded. A nil rec or obj
// records nothing and returns ErrNilRecorder or ErrNilEventObject.
func Emit(rec record.EventRecorder, obj runtime.Object, events []Event) error {
	if plancore.IsNil(rec) {
		return ErrNilRecorder
	}
	if plancore.IsNil(obj) {
		return ErrNilEventObject
	}
	seen := make(map[Event]bool, len(events))
	var errs []error
	for _, e := range events {
		if (e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning) || e.Reason == "" {
			errs = append(errs, fmt.Errorf("%w: type %q, reason %q, message %q", ErrBadEvent, e.Type, e.Reason, e.Message))
			continue
		}
		if seen[e] {
			continue
		}
		seen[e] = true
		rec.Event(obj, e.Type, e.Reason, e.Message)
	}
	return errors.Join(errs...)
}

// reconcileWaiting are the reconcile stop codes that mean the plan waits
// for something already under way (an informer event, a terminating pod, a
// formation backoff, the caller's own status write): nothing needs a
// person, and they get no event (see ReconcileEvents). Every other stop
// or notice is a Warning.
var reconcileWaiting = map[reconcile.ReasonCode]bool{
	reconcile.ReasonExpectationsPending:          true,
	reconcile.ReasonHeadPredecessorTerminating:   true,
	reconcile.ReasonReplicaGroupForming:          true,
	reconcile.ReasonReplicaGroupFormationBackoff: true,
	reconcile.ReasonSuspendRequested:             true,
	reconcile.ReasonSuspended:                    true,
	reconcile.ReasonBurstLimited:                 true,
}

// ReconcileEvents returns the events of one reconcile pass, to record on
// the cluster object with Emit:
//
//   - one per action, with the action's reason: Normal when the call was
//     done (or already done), Warning when it failed or its outcome is
//     unknown (the message then ends with the error); an action Apply did
//     not attempt (skipped after an earlier failure, or absent from the
//     report) has none. With a nil rep (a dry run) every action counts as
//     done;
//   - one Warning per stop or notice that needs a person (the outcome's
//     reason when it is not OK, each group's own stop, each notice: several
//     heads, mTLS not ready, a head restart disabled, pods of a group not in
//     the spec, ...).
//
// A stop or notice that only waits for something already under way
// (expectations pending, a terminating head, a forming replica group or its
// backoff, a suspension in progress, the burst limit) gets no event: it
// recurs on pass after pass, and client-go's recorder lets an object record
// 25 events and then one per 5 minutes, so waits would crowd out the events
// that matter. The plan and the status conditions show them.
//
// Reason is the reason code and Message the reason's message, so actions
// that share a reason (the creates of one scale-up) are one event after
// Emit's deduplication.
func ReconcileEvents(p reconcile.Plan, rep *reconcile.Report) []Event {
	var out []Event
	for i := range p.Actions {
		a := &p.Actions[i]
		e := Event{Type: corev1.EventTypeNormal, Reason: string(a.Reason.Code), Message: a.Reason.Message}
		if rep != nil {
			if i >= len(rep.Results) {
				continue
			}
			switch res := rep.Results[i]; res.Status {
			case reconcile.CallDone, reconcile.CallAlreadyDone:
			case reconcile.CallFailed, reconcile.CallAmbiguous:
				e.Type, e.Message = corev1.EventTypeWarning, failedMessage(e.Message, string(res.Kind)+" "+res.Target, res.Status, res.Err)
			default:
				continue
			}
		}
		out = append(out, e)
	}
	stop := func(r reconcile.Reason) {
		if !reconcileWaiting[r.Code] {
			out = append(out, Event{Type: corev1.EventTypeWarning, Reason: string(r.Code), Message: r.Message})
		}
	}
	if c := p.Verdict.Reason.Code; c != "" && c != reconcile.ReasonOK {
		stop(p.Verdict.Reason)
	}
	for _, g := range p.Groups {
		if g.Stopped != nil {
			stop(*g.Stopped)
		}
	}
	for _, n := range p.Notices {
		stop(n)
	}
	return out
}

// dagProblems are the codes of waiting flows that no event or wake-up will
// clear without a person (a broken spec, a job name held by another
// workflow): their events are Warnings; every other wait has none.
var dagProblems = map[dag.ReasonCode]bool{
	dag.ReasonNameConflict:  true,
	dag.ReasonInvalidSpec:   true,
	dag.ReasonCycle:         true,
	dag.ReasonUnknownTarget: true,
}

// DAGEvents returns the events of one workflow pass, to record on the
// workflow object with Emit:
//
//   - one per job deleted or created, with the action's reason code and the
//     message "job <name>: <reason message>" (the dag core's messages
//     describe the flow; the event names the job): Normal when done,
//     Warning with the error when it failed, none when Apply skipped it or
//     rep does not list it. With a nil rep (a dry run) every action counts
//     as done;
//   - one Warning per reason of a waiting flow (Plan.Blocked) that needs a
//     person: a name conflict, an invalid spec, a cycle or an unknown
//     target, with the message "flow <name>: <reason message>".
//
// The waits that resolve on their own (dependencies, backoff, parallelism,
// finally flows, retries, probes) get no event: they recur on pass after
// pass, and client-go's recorder lets an object record 25 events and then
// one per 5 minutes, so they would crowd out the events that matter. The
// plan and the workflow's status show them.
func DAGEvents(p dag.Plan, rep *dag.Report) []Event {
	var out []Event
	action := func(i int, kind dag.ActionKind, job string, r dag.Reason) {
		e := Event{Type: corev1.EventTypeNormal, Reason: string(r.Code), Message: "job " + job + ": " + r.Message}
		if rep != nil {
			if i >= len(rep.Actions) || rep.Actions[i].Kind != kind || rep.Actions[i].Name != job || rep.Actions[i].Skipped {
				return
			}
			if err := rep.Actions[i].Err; err != nil {
				e.Type, e.Message = corev1.EventTypeWarning, failedMessage(e.Message, string(kind)+" "+job, "failed", err)
			}
		}
		out = append(out, e)
	}
	// Apply reports deletes, then creates, in plan order.
	for i, d := range p.Delete {
		action(i, dag.ActionDelete, d.Name, d.Reason)
	}
	for i, c := range p.Create {
		action(len(p.Delete)+i, dag.ActionCreate, c.Name, c.Reason)
	}
	for _, b := range p.Blocked {
		for _, r := range b.Reasons {
			if dagProblems[r.Code] {
				out = append(out, Event{Type: corev1.EventTypeWarning, Reason: string(r.Code), Message: "flow " + b.Flow + ": " + r.Message})
			}
		}
	}
	return out
}

// failedMessage is a failed action's event message: the reason's message,
// what failed and the error on one line.
func failedMessage[S ~string](msg, what string, status S, err error) string {
	detail := "no error reported"
	if err != nil {
		detail = strings.ReplaceAll(err.Error(), "\n", ": ")
	}
	return fmt.Sprintf("%s (%s %s: %s)", msg, what, status, detail)
}

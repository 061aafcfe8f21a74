package lock

import (
	"errors"
	"fmt"
	"time"
)

// CheckPlan reports every invariant that p, the result of PlanAcquire(in, o),
// breaks, joined into one error, or nil. It is the write contract plancore's
// own property checks, exported for properties over your own locking code:
//
//   - a grant (Acquire, StealExpired, StealDangling) writes with exactly the
//     observed precondition (presence, version and, for steals, raw value), a
//     record naming the requester, an epoch above the key's high-water mark,
//     and Now truncated to whole seconds (the wire's precision);
//   - AlreadyHeld, Refuse and Invalid write nothing (a zero precondition);
//   - a refusal for contention says when to retry (RequeueAfter), except for
//     an allocating holder, which only its release ends; no RequeueAfter is
//     negative;
//   - the plan is for the observed key, with a reason code.
func CheckPlan(in AcquireInput, o Options, p Plan) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	obs, req := in.Observation, in.Requester
	switch {
	case p.Kind.Grants():
		if p.Precondition != obs.precondition() {
			fail("%s precondition %+v does not match the observation (present %v, version %q, raw %q)", p.Kind, p.Precondition, obs.Present, obs.Version, obs.Raw)
		}
		if p.Record.Epoch <= obs.EpochHigh {
			fail("%s epoch %d is not above the high-water mark %d", p.Kind, p.Record.Epoch, obs.EpochHigh)
		}
		if p.Record.Namespace != req.Namespace || p.Record.Name != req.Name || p.Record.UID != req.UID {
			fail("%s record %s/%s (UID %q) does not name the requester %s/%s (UID %q)", p.Kind, p.Record.Namespace, p.Record.Name, p.Record.UID, req.Namespace, req.Name, req.UID)
		}
		if !p.Record.Time.Equal(in.Now.Truncate(time.Second)) {
			fail("%s record time %v, want Now at whole seconds %v", p.Kind, p.Record.Time, in.Now.Truncate(time.Second))
		}
	case p.Kind == AlreadyHeld || p.Kind == Refuse || p.Kind == Invalid:
		if p.Precondition != (Precondition{}) {
			fail("%s carries a write precondition %+v", p.Kind, p.Precondition)
		}
	default:
		fail("PlanAcquire planned %q", p.Kind)
	}
	if p.Kind == Refuse && p.Reason.Code.Contention() && p.RequeueAfter == 0 && p.Reason.Code != ReasonHolderAllocating {
		fail("a refusal for contention (%s) without a RequeueAfter", p.Reason.Code)
	}
	if p.RequeueAfter < 0 {
		fail("negative RequeueAfter %v", p.RequeueAfter)
	}
	if p.Key != obs.Key || p.Reason.Code == "" {
		fail("plan for key %v with reason %q, observed key %v", p.Key, p.Reason.Code, obs.Key)
	}
	return errors.Join(errs...)
}

// CheckRelease reports every invariant that p, the result of
// PlanRelease(in, o), breaks, joined into one error, or nil: a release plans
// Release or NoOp only; an absent lock is NoOp; a Release deletes exactly the
// observed value at the observed version (one compare-and-delete) and writes
// no record; a NoOp carries no precondition.
func CheckRelease(in ReleaseInput, o Options, p Plan) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	obs := in.Observation
	switch p.Kind {
	case Release:
		if !obs.Present {
			fail("Release of an absent lock")
		}
		if p.Precondition != obs.precondition() {
			fail("Release precondition %+v does not match the observation (version %q, raw %q)", p.Precondition, obs.Version, obs.Raw)
		}
		if p.Record != (Record{}) {
			fail("Release writes a record %+v", p.Record)
		}
	case NoOp:
		if p.Precondition != (Precondition{}) {
			fail("NoOp carries a write precondition %+v", p.Precondition)
		}
	default:
		fail("PlanRelease planned %q", p.Kind)
	}
	if p.Key != obs.Key || p.Reason.Code == "" {
		fail("plan for key %v with reason %q, observed key %v", p.Key, p.Reason.Code, obs.Key)
	}
	return errors.Join(errs...)
}

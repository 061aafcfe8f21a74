package capacity

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/plancore/plancore"
)

// DefaultMaxAttempts is how many candidates Dispatch tries by default.
const DefaultMaxAttempts = 3

// DispatchOptions configure Dispatch; the zero value means the defaults,
// the wall clock among them (set Clock in tests).
type DispatchOptions struct {
	// MaxAttempts bounds the reserve calls of one Dispatch. Default 3; the
	// seed walks the whole candidate list.
	MaxAttempts int
	// TTL is the lease asked for; zero means the store's default.
	TTL time.Duration
	// RetryAfter is the requeue hint when every attempt was refused and none
	// left a pending-expiry hint. Default 1 s.
	RetryAfter time.Duration
	// Clock is read once, after the attempts, to turn the earliest pending
	// expiry into a requeue hint. Nil means the wall clock.
	Clock clock.PassiveClock
}

// Validate reports every field out of range, as a *plancore.InvalidError
// wrapping ErrInvalidOptions.
func (o DispatchOptions) Validate() error {
	var errs field.ErrorList
	if o.MaxAttempts < 0 {
		errs = append(errs, field.Invalid(field.NewPath("maxAttempts"), o.MaxAttempts, "must not be negative"))
	}
	if o.TTL < 0 {
		errs = append(errs, field.Invalid(field.NewPath("ttl"), o.TTL, "must not be negative"))
	}
	if o.RetryAfter < 0 {
		errs = append(errs, field.Invalid(field.NewPath("retryAfter"), o.RetryAfter, "must not be negative"))
	}
	return plancore.Invalid(ErrInvalidOptions, errs)
}

// Attempt is one reserve call made by Dispatch.
type Attempt struct {
	Node   string
	Result ReserveResult
	// Reason is ReasonReserved for the granted attempt, ReasonReserveRefused
	// (with the store's status) for a refusal.
	Reason Reason
}

// Lease is what the scheduler sends to the node with the job.
type Lease struct {
	Node string
	RID  string
	// Epoch is the node epoch the store saw; the node refuses another.
	Epoch uint64
	// Expiry is the lease's expiry in store time (zero for a job already
	// acknowledged).
	Expiry time.Time
}

// DispatchResult is what Dispatch came to.
type DispatchResult struct {
	Verdict Verdict
	// Lease is set when Verdict is Selected.
	Lease Lease
	// Attempts lists every reserve call in order, refused ones with reasons.
	Attempts []Attempt
	// Excluded and Breakdown are the plan's, so a NoCapacity result explains
	// every node: excluded by Decide, or refused by the store.
	Excluded  []Exclusion
	Breakdown Breakdown
	// RequeueAfter is set for NoCapacity: the time until the earliest pending
	// lease among the refusals expires, else DispatchOptions.RetryAfter (or the
	// plan's hint when there was no candidate).
	RequeueAfter time.Duration
}

// Dispatch reserves a slot for rid on the candidates of p in rank order,
// trying at most MaxAttempts of them; a refusal moves on to the next. It never
// decides again. A store error stops the walk and is returned: the next node
// lives in the same store, and an error must never become an optimistic yes.
// The caller then sends the job with the Lease; on a send failure or a NACK it
// calls Release and retries under a new attempt rid. A nil store is an error
// wrapping ErrNilStore and ErrInvalidInput.
//
// Each reserve carries the M Decide read (Candidate.Max): when the node's
// heartbeat states another, the store refuses it (ReserveLimitMismatch)
// instead of enforcing a limit Decide did not see.
func Dispatch(ctx context.Context, store SlotStore, p Plan, rid string, o DispatchOptions) (DispatchResult, error) {
	if err := o.Validate(); err != nil {
		return DispatchResult{}, err
	}
	if plancore.IsNil(store) {
		return DispatchResult{}, ErrNilStore
	}
	if err := plancore.Invalid(ErrInvalidInput, validateRID(rid)); err != nil {
		return DispatchResult{}, err
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.RetryAfter == 0 {
		o.RetryAfter = DefaultRetryAfter
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	out := DispatchResult{Excluded: p.Excluded, Breakdown: p.Breakdown}
	var earliest time.Time
	for i, c := range p.Candidates {
		if i == o.MaxAttempts {
			break
		}
		res, err := store.Reserve(ctx, Reservation{Node: c.ID, RID: rid, Max: c.Max, TTL: o.TTL, Running: c.Running})
		if err != nil {
			return out, fmt.Errorf("capacity: dispatch %q: reserve on node %q: %w", rid, c.ID, err)
		}
		if res.Status.Granted() {
			out.Attempts = append(out.Attempts, Attempt{Node: c.ID, Result: res, Reason: Reason{Code: ReasonReserved, Message: "lease granted (" + res.Status.String() + ")"}})
			out.Verdict = Selected
			out.Lease = Lease{Node: c.ID, RID: rid, Epoch: res.Epoch, Expiry: res.Expiry}
			return out, nil
		}
		out.Attempts = append(out.Attempts, Attempt{Node: c.ID, Result: res, Reason: Reason{Code: ReasonReserveRefused, Message: "store answered " + res.Status.String()}})
		if e := res.EarliestExpiry; !e.IsZero() && (earliest.IsZero() || e.Before(earliest)) {
			earliest = e
		}
	}
	out.Verdict = NoCapacity
	now := o.Clock.Now()
	switch {
	case len(p.Candidates) == 0 && p.RequeueAfter > 0:
		out.RequeueAfter = p.RequeueAfter
	case !earliest.IsZero() && earliest.After(now):
		out.RequeueAfter = earliest.Sub(now)
	default:
		out.RequeueAfter = o.RetryAfter
	}
	return out, nil
}

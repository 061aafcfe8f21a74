package capacity

import (
	"context"
	"fmt"
	"time"
)

// SlotStore keeps the reservations of every node: MemStore in one process, the
// Redis store of github.com/plancore/plancore/adapters/redis across several
// scheduler instances. Every method is atomic per node and idempotent per rid.
//
// Errors are for bad input (wrapping ErrInvalidInput, naming the field) and
// for store failures (wrapping ErrStoreUnavailable). A store failure is NEVER
// reported as a refusal or as a grant: the caller must treat the outcome as
// unknown, and may retry the same rid safely.
type SlotStore interface {
	// Reserve asks for a pending lease of r.TTL for r.RID on r.Node.
	Reserve(ctx context.Context, r Reservation) (ReserveResult, error)
	// ReserveBatch reserves several items, several per node allowed, decided
	// in order, in one atomic step per store shard.
	ReserveBatch(ctx context.Context, items []Reservation, mode BatchMode) (BatchResult, error)
	// Ack commits the node's acknowledgement. The node starts the job only on
	// an answer whose Start() is true.
	Ack(ctx context.Context, a Ack) (AckStatus, error)
	// Release drops a pending lease; an unknown, expired or acknowledged rid
	// is a no-op. It reports whether a lease was dropped.
	Release(ctx context.Context, node, rid string) (bool, error)
	// Heartbeat applies a node's heartbeat.
	Heartbeat(ctx context.Context, node string, h Heartbeat) (HeartbeatStatus, error)
	// Loads reports nodes in the order asked, without changing anything:
	// advisory input to Select (Reserve re-checks atomically).
	Loads(ctx context.Context, nodes []string) ([]NodeLoad, error)
}

// DefaultMaxAttempts is how many candidates Dispatch tries by default.
const DefaultMaxAttempts = 3

// DispatchOptions configure Dispatch. The zero value means the defaults.
type DispatchOptions struct {
	// MaxAttempts bounds the reserve calls of one Dispatch. Default 3; the
	// seed walks the whole candidate list.
	MaxAttempts int
	// TTL is the lease asked for; zero means the store's default.
	TTL time.Duration
	// RetryAfter is the requeue hint when every attempt was refused and none
	// left a pending-expiry hint. Default 1 s.
	RetryAfter time.Duration
}

// Validate reports the first field out of range, wrapping ErrInvalidOptions.
func (o DispatchOptions) Validate() error {
	switch {
	case o.MaxAttempts < 0:
		return fmt.Errorf("%w: MaxAttempts %d is negative", ErrInvalidOptions, o.MaxAttempts)
	case o.TTL < 0:
		return fmt.Errorf("%w: TTL %v is negative", ErrInvalidOptions, o.TTL)
	case o.RetryAfter < 0:
		return fmt.Errorf("%w: RetryAfter %v is negative", ErrInvalidOptions, o.RetryAfter)
	}
	return nil
}

// Attempt is one reserve call made by Dispatch.
type Attempt struct {
	Node   string
	Result ReserveResult
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
	Outcome Outcome
	// Lease is set when Outcome is Selected.
	Lease Lease
	// Attempts lists every reserve call in order, refused ones with reasons.
	Attempts []Attempt
	// Excluded and Breakdown are the selection's, so a NoCapacity result
	// explains every node: excluded by Select, or refused by the store.
	Excluded  []Exclusion
	Breakdown Breakdown
	// RequeueAfter is set for NoCapacity: the time until the earliest pending
	// lease among the refusals expires, else DispatchOptions.RetryAfter (or the
	// selection's hint when there was no candidate).
	RequeueAfter time.Duration
}

// Dispatch reserves a slot for rid on the candidates of sel in rank order,
// trying at most MaxAttempts of them; a refusal moves on to the next. It never
// re-selects. A store error stops the walk and is returned: the next node
// lives in the same store, and an error must never become an optimistic yes.
// The caller then sends the job with the Lease; on a send failure or a NACK it
// calls Release and retries under a new attempt rid.
//
// now is the caller's clock, read only to turn a pending expiry into a
// requeue hint.
func Dispatch(ctx context.Context, store SlotStore, sel Selection, rid string, opts DispatchOptions, now time.Time) (DispatchResult, error) {
	if err := opts.Validate(); err != nil {
		return DispatchResult{}, err
	}
	if err := validateRID(rid); err != nil {
		return DispatchResult{}, err
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.RetryAfter == 0 {
		opts.RetryAfter = DefaultRetryAfter
	}
	out := DispatchResult{Excluded: sel.Excluded, Breakdown: sel.Breakdown}
	var earliest time.Time
	for i, c := range sel.Candidates {
		if i == opts.MaxAttempts {
			break
		}
		res, err := store.Reserve(ctx, Reservation{Node: c.ID, RID: rid, Max: c.Max, TTL: opts.TTL, Running: c.Running})
		out.Attempts = append(out.Attempts, Attempt{Node: c.ID, Result: res})
		if err != nil {
			out.Attempts = out.Attempts[:len(out.Attempts)-1]
			return out, fmt.Errorf("capacity: dispatch %q: reserve on node %q: %w", rid, c.ID, err)
		}
		if res.Status.Granted() {
			out.Outcome = Selected
			out.Lease = Lease{Node: c.ID, RID: rid, Epoch: res.Epoch, Expiry: res.Expiry}
			return out, nil
		}
		if e := res.EarliestExpiry; !e.IsZero() && (earliest.IsZero() || e.Before(earliest)) {
			earliest = e
		}
	}
	out.Outcome = NoCapacity
	switch {
	case len(sel.Candidates) == 0 && sel.RequeueAfter > 0:
		out.RequeueAfter = sel.RequeueAfter
	case !earliest.IsZero() && earliest.After(now):
		out.RequeueAfter = earliest.Sub(now)
	default:
		out.RequeueAfter = opts.RetryAfter
	}
	return out, nil
}

package capacity

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// Reservation asks for one slot on one node for one job attempt.
type Reservation struct {
	// Node is the node id. Required; see ValidateNodeID.
	Node string
	// RID names the job attempt (job id plus attempt number). Required. Reserve,
	// ack and release are idempotent per rid.
	RID string
	// Max is the node's M as the caller knows it (Dispatch passes the M that
	// Decide read). When the node's heartbeat states its own M, that value is
	// enforced and a different non-zero Max is refused (ReserveLimitMismatch),
	// never silently overridden. When the heartbeat states none, Max is the
	// limit, and zero means Options.MaxJobs. Negative is invalid, and so is a
	// value above MaxLimit.
	Max int
	// TTL is the lease of the pending reservation. Zero means Options.TTL;
	// negative is invalid.
	TTL time.Duration
	// Running is the caller's own copy of the node's running count. Only the
	// SeedMax accounting reads it (the seed passes it to its script); Sum uses
	// the stored heartbeat instead. Negative or above MaxCount is invalid.
	Running int
}

// Resolve validates r for a store with options o and fills its TTL default
// (Max stays as given: zero means "the node's limit"). Bad input is a
// *plancore.InvalidError wrapping ErrInvalidInput that names every field.
// With o.ClampToOne, a zero or negative Max and TTL become 1 (job, second)
// instead. Every SlotStore resolves its reservations this way.
func (r Reservation) Resolve(o Options) (Reservation, error) {
	errs := validateNodeID("node", r.Node)
	r, more := r.resolveNoNode(o.WithDefaults())
	return r, plancore.Invalid(ErrInvalidInput, append(errs, more...))
}

// resolveNoNode validates and defaults everything but the node id, which a
// single-node ledger does not need.
func (r Reservation) resolveNoNode(o Options) (Reservation, field.ErrorList) {
	errs := validateRID(r.RID)
	if o.ClampToOne {
		if r.Max <= 0 {
			r.Max = 1
		}
		if r.TTL <= 0 {
			r.TTL = time.Second
		}
	}
	switch {
	case r.Max < 0:
		errs = append(errs, field.Invalid(field.NewPath("max"), r.Max, "must not be negative"))
	case r.Max > MaxLimit:
		errs = append(errs, field.Invalid(field.NewPath("max"), r.Max, "must be at most MaxLimit (1024)"))
	}
	if r.TTL < 0 {
		errs = append(errs, field.Invalid(field.NewPath("ttl"), r.TTL, "must not be negative"))
	}
	switch {
	case r.Running < 0:
		errs = append(errs, field.Invalid(field.NewPath("running"), r.Running, "must not be negative"))
	case r.Running > MaxCount:
		errs = append(errs, field.Invalid(field.NewPath("running"), r.Running, "must be at most MaxCount (2147483647)"))
	}
	if r.TTL == 0 {
		r.TTL = o.TTL
	}
	return r, errs
}

// limit is the M a reserve enforces on a node whose heartbeat states hbMax
// (zero: none) for a reservation asking max (zero: none), or -1 when both
// are stated and disagree.
func limit(hbMax, max int, o Options) int {
	switch {
	case hbMax > 0 && max > 0 && hbMax != max:
		return -1
	case hbMax > 0:
		return hbMax
	case max > 0:
		return max
	}
	return o.MaxJobs
}

// ReserveStatus is the answer of a reserve.
type ReserveStatus string

const (
	// ReserveOK means a new pending lease was written.
	ReserveOK ReserveStatus = "ok"
	// ReserveDuplicate means the rid already holds a slot (pending or acked);
	// nothing changed and the existing lease was not extended, so a retry after
	// an unknown outcome is safe.
	ReserveDuplicate ReserveStatus = "duplicate"
	// ReserveFull means the node's effective load is at or above M.
	ReserveFull ReserveStatus = "full"
	// ReserveUnknownNode means the store holds no heartbeat for the node.
	ReserveUnknownNode ReserveStatus = "unknown-node"
	// ReserveStaleHeartbeat means the node's last heartbeat is older than the
	// heartbeat timeout.
	ReserveStaleHeartbeat ReserveStatus = "stale-heartbeat"
	// ReserveLimitMismatch means the reservation's Max differs from the M the
	// node's heartbeat states: the caller decided with a wrong limit. Nothing
	// changed; decide again from fresh Loads.
	ReserveLimitMismatch ReserveStatus = "limit-mismatch"
)

// reserveStatuses lists every ReserveStatus, for the counters.
var reserveStatuses = [...]ReserveStatus{ReserveOK, ReserveDuplicate, ReserveFull, ReserveUnknownNode, ReserveStaleHeartbeat, ReserveLimitMismatch}

// String returns the status's name.
func (s ReserveStatus) String() string { return string(s) }

// Granted reports whether the rid holds a slot after the call.
func (s ReserveStatus) Granted() bool { return s == ReserveOK || s == ReserveDuplicate }

// ReserveResult is the outcome of one reserve.
type ReserveResult struct {
	Status ReserveStatus
	// Epoch is the node's heartbeat epoch, which the dispatch carries to the
	// node so that it can refuse work meant for an earlier boot. Zero when the
	// store has no heartbeat.
	Epoch uint64
	// Expiry is the lease's expiry for OK and for a duplicate of a pending
	// lease; zero for a duplicate of an acknowledged job and for refusals.
	Expiry time.Time
	// Load is the node's effective load after the call (for a refusal, the load
	// that caused it).
	Load int
	// EarliestExpiry is set for ReserveFull: the earliest expiry among the
	// node's pending leases, when a slot may free up (zero if none).
	EarliestExpiry time.Time
}

// String renders the result on one line.
func (r ReserveResult) String() string {
	s := fmt.Sprintf("%s epoch=%d load=%d", r.Status, r.Epoch, r.Load)
	if !r.Expiry.IsZero() {
		s += " expiry=" + fmtTime(r.Expiry)
	}
	if !r.EarliestExpiry.IsZero() {
		s += " earliest=" + fmtTime(r.EarliestExpiry)
	}
	return s
}

// Ack is the node's acknowledgement that it accepted a job.
type Ack struct {
	Node string
	RID  string
	// Epoch is the node's epoch; it must match the stored heartbeat's.
	Epoch uint64
	// Seq is the sequence number the node assigned the job when it accepted it.
	Seq uint64
}

// Validate reports a bad node id and an empty rid, wrapping ErrInvalidInput.
func (a Ack) Validate() error {
	return plancore.Invalid(ErrInvalidInput, append(validateNodeID("node", a.Node), validateRID(a.RID)...))
}

// AckStatus is the answer to an ACK.
type AckStatus string

const (
	// AckOK moved the pending lease to the acknowledged set. Start the job.
	AckOK AckStatus = "ok"
	// AckDuplicate means the rid was already acknowledged with this Seq (a
	// retried ACK). Start the job (if not already running). Fenced, an ACK of
	// an acknowledged rid with another Seq (a second acceptance of the same
	// job) is AckExpired.
	AckDuplicate AckStatus = "duplicate"
	// AckEpochMismatch means the epoch differs from the stored heartbeat's (or
	// there is none). Nothing changed; the node must not start the job.
	AckEpochMismatch AckStatus = "epoch-mismatch"
	// AckExpired means the lease lapsed or was released (fenced mode). Nothing
	// changed; the node must not start the job.
	AckExpired AckStatus = "expired"
	// AckLate means the lease lapsed but, unfenced, the job is counted anyway
	// because the node has already started it.
	AckLate AckStatus = "late"
)

// ackStatuses lists every AckStatus, for the counters.
var ackStatuses = [...]AckStatus{AckOK, AckDuplicate, AckEpochMismatch, AckExpired, AckLate}

// String returns the status's name.
func (s AckStatus) String() string { return string(s) }

// Start reports whether the node may start (or keep) the job.
func (s AckStatus) Start() bool { return s == AckOK || s == AckDuplicate || s == AckLate }

// Usage is a node's resource usage in percent (0-100). A negative or NaN value
// means unknown, and Decide excludes the node (fail closed).
type Usage struct {
	CPU    float64
	Memory float64
	// GPU is read only when HasGPU is set; the seed checks GPU usage only on
	// nodes that have one.
	GPU    float64
	HasGPU bool
}

// Heartbeat is a node's periodic report, sampled under the node's own mutex.
type Heartbeat struct {
	// Epoch is the node's boot epoch: totally ordered, never a random id.
	Epoch uint64
	// Seq is the node's sequence number at sampling time. It counts every job
	// accepted below it that still runs.
	Seq uint64
	// Running is how many jobs the node holds (started or being acknowledged).
	Running int
	// Max is the node's own M, the one statement of its limit: the store
	// keeps it, Loads reports it, Decide reads it and reserve enforces it.
	// Zero means the node states none (Options.MaxJobs or the reservation's
	// Max then applies).
	Max   int
	Usage Usage
}

// Validate reports every count out of range (negative; running above
// MaxCount, so that a node's load can never wrap; max above MaxLimit, which
// bounds a node's state), wrapping ErrInvalidInput with the field paths
// heartbeat.running and heartbeat.max.
func (h Heartbeat) Validate() error {
	var errs field.ErrorList
	for _, c := range []struct {
		name  string
		v     int
		limit int
		msg   string
	}{{"running", h.Running, MaxCount, "must be at most MaxCount (2147483647)"}, {"max", h.Max, MaxLimit, "must be at most MaxLimit (1024)"}} {
		switch {
		case c.v < 0:
			errs = append(errs, field.Invalid(field.NewPath("heartbeat", c.name), c.v, "must not be negative"))
		case c.v > c.limit:
			errs = append(errs, field.Invalid(field.NewPath("heartbeat", c.name), c.v, c.msg))
		}
	}
	return plancore.Invalid(ErrInvalidInput, errs)
}

// HeartbeatStatus is the answer to a heartbeat.
type HeartbeatStatus string

const (
	// HeartbeatApplied means the heartbeat replaced the stored one.
	HeartbeatApplied HeartbeatStatus = "applied"
	// HeartbeatStale means the stored heartbeat is newer (higher epoch, or same
	// epoch and a seq at least as high); nothing changed.
	HeartbeatStale HeartbeatStatus = "stale"
)

// String returns the status's name.
func (s HeartbeatStatus) String() string { return string(s) }

// NodeLoad is what a store knows of one node, and Decide's input. A caller
// that keeps its own node registry fills it from there.
type NodeLoad struct {
	ID string
	// Max is the node's M: the heartbeat's, or the store's Options.MaxJobs
	// when the heartbeat states none, which is what a reserve without Max
	// enforces. Zero means Decide's Options.MaxJobs.
	Max int
	// Epoch and Seq are those of the last applied heartbeat.
	Epoch, Seq uint64
	// Running is the last applied heartbeat's running count.
	Running int
	// Pending counts unexpired pending leases.
	Pending int
	// AckedUncounted counts acknowledged jobs no heartbeat has counted yet.
	AckedUncounted int
	// HeartbeatAt is when the store applied the last heartbeat (store clock);
	// zero if it has none.
	HeartbeatAt time.Time
	Usage       Usage
}

// Effective returns the node's effective load under accounting a. The sum
// saturates at math.MaxInt instead of wrapping; negative counts count as 0.
func (l NodeLoad) Effective(a Accounting) int {
	r, p, u := max(l.Running, 0), max(l.Pending, 0), max(l.AckedUncounted, 0)
	if a == SeedMax {
		return max(r, p)
	}
	return satAdd(satAdd(r, p), u)
}

// BatchMode chooses what ReserveBatch does when an item is refused.
type BatchMode string

const (
	// AllOrNothing (the default; the empty BatchMode means it) commits no
	// item if any item is refused.
	AllOrNothing BatchMode = "AllOrNothing"
	// Partial commits every granted item.
	Partial BatchMode = "Partial"
)

// String returns the mode's name.
func (m BatchMode) String() string {
	if m == "" {
		return string(AllOrNothing)
	}
	return string(m)
}

// BatchResult is the outcome of ReserveBatch.
type BatchResult struct {
	// Items holds one result per item, in order, each decided as if the items
	// before it had been committed.
	Items []ReserveResult
	// Committed reports whether the granted items hold their slots: always in
	// Partial mode, only when every item was granted in AllOrNothing mode.
	Committed bool
}

// Granted counts the items that hold a slot after the call.
func (b BatchResult) Granted() int {
	if !b.Committed {
		return 0
	}
	n := 0
	for _, it := range b.Items {
		if it.Status.Granted() {
			n++
		}
	}
	return n
}

func fmtTime(t time.Time) string {
	return t.UTC().Format("15:04:05.000")
}

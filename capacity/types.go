package capacity

import (
	"fmt"
	"time"
)

// Reservation asks for one slot on one node for one job attempt.
type Reservation struct {
	// Node is the node id. Required; see ValidateNodeID.
	Node string
	// RID names the job attempt (job id plus attempt number). Required. Reserve,
	// ack and release are idempotent per rid.
	RID string
	// Max is the node's M. Zero means Options.MaxJobs; negative is invalid.
	Max int
	// TTL is the lease of the pending reservation. Zero means Options.TTL;
	// negative is invalid.
	TTL time.Duration
	// Running is the caller's own copy of the node's running count. Only the
	// SeedMax accounting reads it (the seed passes it to its script); Sum uses
	// the stored heartbeat instead.
	Running int
}

// Resolve validates r for a store with options o and fills its defaults (Max
// and TTL from o). Bad input is an error wrapping ErrInvalidInput that names
// the field. Every SlotStore resolves its reservations this way.
func (r Reservation) Resolve(o Options) (Reservation, error) {
	if err := ValidateNodeID(r.Node); err != nil {
		return r, err
	}
	return r.resolveNoNode(o.WithDefaults())
}

// resolveNoNode validates and defaults everything but the node id, which a
// single-node ledger does not need.
func (r Reservation) resolveNoNode(o Options) (Reservation, error) {
	if err := validateRID(r.RID); err != nil {
		return r, err
	}
	switch {
	case r.Max < 0:
		return r, fmt.Errorf("%w: Max %d for rid %q is below 1", ErrInvalidInput, r.Max, r.RID)
	case r.TTL < 0:
		return r, fmt.Errorf("%w: TTL %v for rid %q is negative", ErrInvalidInput, r.TTL, r.RID)
	case r.Running < 0:
		return r, fmt.Errorf("%w: Running %d for rid %q is negative", ErrInvalidInput, r.Running, r.RID)
	}
	if r.Max == 0 {
		r.Max = o.MaxJobs
	}
	if r.TTL == 0 {
		r.TTL = o.TTL
	}
	return r, nil
}

// ReserveStatus is the answer of a reserve.
type ReserveStatus uint8

const (
	// ReserveOK means a new pending lease was written.
	ReserveOK ReserveStatus = iota + 1
	// ReserveDuplicate means the rid already holds a slot (pending or acked);
	// nothing changed and the existing lease was not extended, so a retry after
	// an unknown outcome is safe.
	ReserveDuplicate
	// ReserveFull means the node's effective load is at or above M.
	ReserveFull
	// ReserveUnknownNode means the store holds no heartbeat for the node.
	ReserveUnknownNode
	// ReserveStaleHeartbeat means the node's last heartbeat is older than the
	// heartbeat timeout.
	ReserveStaleHeartbeat
)

var reserveStatusNames = [...]string{"", "ok", "duplicate", "full", "unknown-node", "stale-heartbeat"}

// String returns the status's name.
func (s ReserveStatus) String() string {
	if int(s) < len(reserveStatusNames) && s != 0 {
		return reserveStatusNames[s]
	}
	return fmt.Sprintf("ReserveStatus(%d)", uint8(s))
}

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

// Validate reports a bad node id or an empty rid, wrapping ErrInvalidInput.
func (a Ack) Validate() error {
	if err := ValidateNodeID(a.Node); err != nil {
		return err
	}
	return validateRID(a.RID)
}

// AckStatus is the answer to an ACK.
type AckStatus uint8

const (
	// AckOK moved the pending lease to the acknowledged set. Start the job.
	AckOK AckStatus = iota + 1
	// AckDuplicate means the rid was already acknowledged. Start the job (if
	// not already running).
	AckDuplicate
	// AckEpochMismatch means the epoch differs from the stored heartbeat's (or
	// there is none). Nothing changed; the node must not start the job.
	AckEpochMismatch
	// AckExpired means the lease lapsed or was released (fenced mode). Nothing
	// changed; the node must not start the job.
	AckExpired
	// AckLate means the lease lapsed but, unfenced, the job is counted anyway
	// because the node has already started it.
	AckLate
)

var ackStatusNames = [...]string{"", "ok", "duplicate", "epoch-mismatch", "expired", "late"}

// String returns the status's name.
func (s AckStatus) String() string {
	if int(s) < len(ackStatusNames) && s != 0 {
		return ackStatusNames[s]
	}
	return fmt.Sprintf("AckStatus(%d)", uint8(s))
}

// Start reports whether the node may start (or keep) the job.
func (s AckStatus) Start() bool { return s == AckOK || s == AckDuplicate || s == AckLate }

// Usage is a node's resource usage in percent (0-100). A negative or NaN value
// means unknown, and Select excludes the node (fail closed).
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
	// Max is the node's own M, informational (Loads reports it). Zero if unknown.
	Max   int
	Usage Usage
}

// Validate reports a negative Running or Max, wrapping ErrInvalidInput;
// node only names the node in the message.
func (h Heartbeat) Validate(node string) error {
	switch {
	case h.Running < 0:
		return fmt.Errorf("%w: heartbeat Running %d of node %q is negative", ErrInvalidInput, h.Running, node)
	case h.Max < 0:
		return fmt.Errorf("%w: heartbeat Max %d of node %q is negative", ErrInvalidInput, h.Max, node)
	}
	return nil
}

// HeartbeatStatus is the answer to a heartbeat.
type HeartbeatStatus uint8

const (
	// HeartbeatApplied means the heartbeat replaced the stored one.
	HeartbeatApplied HeartbeatStatus = iota + 1
	// HeartbeatStale means the stored heartbeat is newer (higher epoch, or same
	// epoch and a seq at least as high); nothing changed.
	HeartbeatStale
)

// String returns the status's name.
func (s HeartbeatStatus) String() string {
	switch s {
	case HeartbeatApplied:
		return "applied"
	case HeartbeatStale:
		return "stale"
	}
	return fmt.Sprintf("HeartbeatStatus(%d)", uint8(s))
}

// NodeLoad is what a store knows of one node, and Select's input. A caller
// that keeps its own node registry fills it from there.
type NodeLoad struct {
	ID string
	// Max is the node's M; zero means SelectOptions.MaxJobs.
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

// Effective returns the node's effective load under accounting a.
func (l NodeLoad) Effective(a Accounting) int {
	if a == SeedMax {
		return max(l.Running, l.Pending)
	}
	return l.Running + l.Pending + l.AckedUncounted
}

// BatchMode chooses what ReserveBatch does when an item is refused.
type BatchMode uint8

const (
	// AllOrNothing commits no item if any item is refused.
	AllOrNothing BatchMode = iota
	// Partial commits every granted item.
	Partial
)

// String returns the mode's name.
func (m BatchMode) String() string {
	switch m {
	case AllOrNothing:
		return "all-or-nothing"
	case Partial:
		return "partial"
	}
	return fmt.Sprintf("BatchMode(%d)", uint8(m))
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

package capacity

import (
	"fmt"
	"time"
)

// Accounting chooses how a node's effective load is computed.
type Accounting uint8

const (
	// Sum is plancore's accounting (the default): effective load is the running
	// count of the last applied heartbeat, plus unexpired pending leases, plus
	// acknowledged jobs whose node sequence number is above that heartbeat's.
	// A job is charged from its reservation until a heartbeat that sampled it
	// running, exactly once, so the node is never promised more than M jobs.
	Sum Accounting = iota
	// SeedMax reproduces the seed scheduler's accounting, max(running,
	// reserved), with the caller's own copy of running and the reservation
	// released on ACK. It OVERSELLS: max undercounts by the smaller term, so one
	// fresh heartbeat lets up to 2M-1 jobs onto a node, and every ACK leaks a
	// slot until the next heartbeat counts the job (see the package
	// documentation). It exists only to reproduce the seed's decisions for
	// migration and shadow runs, and as the known-bad oracle of the tests.
	SeedMax

	// sumReleaseOnAck is the known-bad variant "sum, but release on ACK" that
	// the tests must catch overselling: it drops the reservation at the ACK and
	// so charges the job nowhere until a heartbeat sees it. Unexported: no
	// caller should ever choose it.
	sumReleaseOnAck
)

// String returns the accounting's name.
func (a Accounting) String() string {
	switch a {
	case Sum:
		return "sum"
	case SeedMax:
		return "seed-max"
	case sumReleaseOnAck:
		return "sum-release-on-ack"
	}
	return fmt.Sprintf("Accounting(%d)", uint8(a))
}

// Defaults applied by Options when a field is zero.
const (
	DefaultMaxJobs          = 4
	DefaultTTL              = 5 * time.Second
	DefaultHeartbeatTimeout = 45 * time.Second
	DefaultMaxBatch         = 128
	// DefaultLifetimeFactor times the heartbeat timeout is how long a node's
	// heartbeat and acknowledged entries live without a refresh.
	DefaultLifetimeFactor = 10
)

// Options configure the accounting of one node ledger and of the slot stores.
// The zero value means the documented defaults.
type Options struct {
	// MaxJobs is M for a reservation that does not carry its own. Default 4, the
	// seed's scheduler.max_concurrent_jobs_per_node. Negative is invalid.
	MaxJobs int
	// TTL is the lease of a pending reservation that does not carry its own.
	// Default 5 s, as in the seed. Negative is invalid.
	TTL time.Duration
	// HeartbeatTimeout is how old the last applied heartbeat may be before
	// reserve refuses the node (StaleHeartbeat). Default 45 s, three of the
	// seed's heartbeat intervals. Negative is invalid.
	HeartbeatTimeout time.Duration
	// Lifetime is how long a node's heartbeat and acknowledged entries survive
	// without a refresh. Default 10 × HeartbeatTimeout. Negative is invalid.
	Lifetime time.Duration
	// Unfenced counts an ACK that arrives after its lease lapsed (AckLate)
	// instead of refusing it (AckExpired). Use it only for nodes that start a
	// job before the store answers; the node's hard limit is then the only
	// guard against a lapsed lease's slot being handed out twice.
	Unfenced bool
	// Accounting is Sum by default. SeedMax oversells; see its comment.
	Accounting Accounting
	// MaxBatch caps the items of one ReserveBatch call, because a batch holds
	// locks (or blocks Redis) while it runs. Default 128. Negative is invalid.
	MaxBatch int
}

// Validate reports the first field out of range, wrapping ErrInvalidOptions.
func (o Options) Validate() error {
	switch {
	case o.MaxJobs < 0:
		return fmt.Errorf("%w: MaxJobs %d is negative", ErrInvalidOptions, o.MaxJobs)
	case o.TTL < 0:
		return fmt.Errorf("%w: TTL %v is negative", ErrInvalidOptions, o.TTL)
	case o.HeartbeatTimeout < 0:
		return fmt.Errorf("%w: HeartbeatTimeout %v is negative", ErrInvalidOptions, o.HeartbeatTimeout)
	case o.Lifetime < 0:
		return fmt.Errorf("%w: Lifetime %v is negative", ErrInvalidOptions, o.Lifetime)
	case o.Accounting > sumReleaseOnAck:
		return fmt.Errorf("%w: Accounting %v is unknown", ErrInvalidOptions, o.Accounting)
	case o.MaxBatch < 0:
		return fmt.Errorf("%w: MaxBatch %d is negative", ErrInvalidOptions, o.MaxBatch)
	}
	return nil
}

// WithDefaults returns o with every zero field replaced by its default.
func (o Options) WithDefaults() Options {
	if o.MaxJobs == 0 {
		o.MaxJobs = DefaultMaxJobs
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.HeartbeatTimeout == 0 {
		o.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if o.Lifetime == 0 {
		o.Lifetime = DefaultLifetimeFactor * o.HeartbeatTimeout
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	return o
}

// ValidateNodeID checks a node id for every store: non-empty and free of '{'
// and '}', because the Redis store puts it inside a {n:<id>} hash tag and a
// brace would move the key to another cluster slot.
func ValidateNodeID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: node id is empty", ErrInvalidInput)
	}
	for i := 0; i < len(id); i++ {
		if id[i] == '{' || id[i] == '}' {
			return fmt.Errorf("%w: node id %q contains a brace", ErrInvalidInput, id)
		}
	}
	return nil
}

func validateRID(rid string) error {
	if rid == "" {
		return fmt.Errorf("%w: rid (job id) is empty", ErrInvalidInput)
	}
	return nil
}

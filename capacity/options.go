package capacity

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// Accounting chooses how a node's effective load is computed.
type Accounting string

const (
	// Sum is plancore's accounting (the default; the empty Accounting means
	// Sum): effective load is the running count of the last applied
	// heartbeat, plus unexpired pending leases, plus acknowledged jobs whose
	// node sequence number is above that heartbeat's. A job is charged from
	// its reservation until a heartbeat that sampled it running, exactly
	// once, so the node is never promised more than M jobs.
	Sum Accounting = "Sum"
	// SeedMax reproduces the seed scheduler's accounting, max(running,
	// reserved), with the caller's own copy of running and the reservation
	// released on ACK. It OVERSELLS: max undercounts by the smaller term, so one
	// fresh heartbeat lets up to 2M-1 jobs onto a node, and every ACK leaks a
	// slot until the next heartbeat counts the job (see the package
	// documentation). It exists only to reproduce the seed's decisions for
	// migration and shadow runs (preset Seed), and as the known-bad oracle of
	// the tests.
	SeedMax Accounting = "SeedMax"

	// sumReleaseOnAck is the known-bad variant "sum, but release on ACK" that
	// the tests must catch overselling: it drops the reservation at the ACK and
	// so charges the job nowhere until a heartbeat sees it. Unexported: no
	// caller should ever choose it.
	sumReleaseOnAck Accounting = "sumReleaseOnAck"
)

// String returns the accounting's name; the empty Accounting is Sum.
func (a Accounting) String() string {
	if a == "" {
		return string(Sum)
	}
	return string(a)
}

// RankBy chooses how Decide orders candidates.
type RankBy string

const (
	// RankUtilisation (the default; the empty RankBy means it) orders by
	// effective/M (fair across nodes of different M), then effective load,
	// then the node's highest usage, then id.
	RankUtilisation RankBy = "Utilisation"
	// RankJobs orders by effective load alone, then id, as the seed does.
	RankJobs RankBy = "Jobs"
)

// Defaults applied by Options when a field is zero.
const (
	DefaultMaxJobs          = 4
	DefaultTTL              = 5 * time.Second
	DefaultHeartbeatTimeout = 45 * time.Second
	DefaultMaxBatch         = 128
	// DefaultLifetimeFactor times the heartbeat timeout is how long a node's
	// heartbeat and acknowledged entries live without a refresh.
	DefaultLifetimeFactor = 10
	// DefaultThreshold is the resource usage, in percent, above which Decide
	// skips a node: the seed's 90 (exactly 90 passes).
	DefaultThreshold = 90.0
	// DefaultRetryAfter is the requeue hint of a NoCapacity outcome.
	DefaultRetryAfter = time.Second
)

// MaxCount is the largest count (a node's limit M, its running jobs) that a
// heartbeat, a reservation or a node load may carry. Larger values are
// refused where they enter (heartbeat, reserve) or exclude the node (Decide),
// so that no sum of counts can wrap.
const MaxCount = math.MaxInt32

// MaxLimit is the largest limit M a node may have (Options.MaxJobs, a
// reservation's Max, a heartbeat's Max). A store holds at most about M
// entries per node and a reserve reads them all, so M bounds the cost of a
// call; larger limits are refused where they enter. A node that can run
// more jobs than this at once is better split into several.
const MaxLimit = 1024

// Options configure Decide, the node ledger and the slot stores. The zero
// value means the documented defaults; Seed returns the seed scheduler's.
type Options struct {
	// MaxJobs is M for a node whose heartbeat states none and a reservation
	// that carries none. Default 4, the seed's
	// scheduler.max_concurrent_jobs_per_node. Negative is invalid.
	MaxJobs int
	// TTL is the lease of a pending reservation that does not carry its own.
	// Default 5 s, as in the seed. Negative is invalid.
	TTL time.Duration
	// HeartbeatTimeout is how old the last applied heartbeat may be before
	// Decide excludes the node and reserve refuses it (StaleHeartbeat).
	// Default 45 s, three of the seed's heartbeat intervals. Negative is
	// invalid.
	HeartbeatTimeout time.Duration
	// IgnoreHeartbeatAge makes Decide keep nodes whatever the age of their
	// heartbeat (or without one), as the seed's selection does. Reserve
	// still refuses them under Sum.
	IgnoreHeartbeatAge bool
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
	// ClampToOne clamps a reservation's zero or negative Max and TTL to 1
	// (1 job, 1 s) instead of defaulting (zero) or refusing (negative) them,
	// as the seed's Redis wrapper does (ttl_seconds.max(1), max_jobs.max(1)).
	ClampToOne bool
	// MaxBatch caps the items of one ReserveBatch call, because a batch holds
	// locks (or blocks Redis) while it runs. Default 128. Negative is invalid.
	MaxBatch int
	// Threshold is the CPU, GPU and memory usage in percent above which
	// Decide skips a node. Default 90. It reads a lagging heartbeat: a soft
	// filter, never a safety mechanism. Negative or NaN is invalid.
	Threshold float64
	// RankBy picks Decide's ranking; default RankUtilisation.
	RankBy RankBy
	// RetryAfter is Decide's requeue hint when no node qualifies. Default
	// 1 s. Negative is invalid.
	RetryAfter time.Duration
}

// Seed returns the options that reproduce the seed scheduler's decisions:
// SeedMax accounting (which oversells), ranking by jobs alone, a selection
// that ignores heartbeat age, and zero or negative limits and TTLs clamped
// to 1, with the seed's M of 4, TTL of 5 s and threshold of 90 %.
// Assign it whole: each field it sets is one of the anchor's behaviours, and
// copying only some of them reproduces none of the anchor exactly.
func Seed() Options {
	return Options{
		MaxJobs: DefaultMaxJobs, TTL: DefaultTTL, Threshold: DefaultThreshold,
		Accounting: SeedMax, RankBy: RankJobs, IgnoreHeartbeatAge: true, ClampToOne: true,
	}
}

// Validate reports every field out of range at once, as a
// *plancore.InvalidError wrapping ErrInvalidOptions.
func (o Options) Validate() error {
	var errs field.ErrorList
	neg := func(name string, bad bool, v any) {
		if bad {
			errs = append(errs, field.Invalid(field.NewPath(name), v, "must not be negative"))
		}
	}
	neg("maxJobs", o.MaxJobs < 0, o.MaxJobs)
	if o.MaxJobs > MaxLimit {
		errs = append(errs, field.Invalid(field.NewPath("maxJobs"), o.MaxJobs, "must be at most MaxLimit (1024)"))
	}
	neg("ttl", o.TTL < 0, o.TTL)
	neg("heartbeatTimeout", o.HeartbeatTimeout < 0, o.HeartbeatTimeout)
	neg("lifetime", o.Lifetime < 0, o.Lifetime)
	neg("maxBatch", o.MaxBatch < 0, o.MaxBatch)
	neg("retryAfter", o.RetryAfter < 0, o.RetryAfter)
	if math.IsNaN(o.Threshold) || o.Threshold < 0 {
		errs = append(errs, field.Invalid(field.NewPath("threshold"), o.Threshold, "must be a percentage"))
	}
	switch o.Accounting {
	case "", Sum, SeedMax, sumReleaseOnAck:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("accounting"), string(o.Accounting), []string{"", string(Sum), string(SeedMax)}))
	}
	switch o.RankBy {
	case "", RankUtilisation, RankJobs:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("rankBy"), string(o.RankBy), []string{"", string(RankUtilisation), string(RankJobs)}))
	}
	return plancore.Invalid(ErrInvalidOptions, errs)
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
		// Saturates: a heartbeat timeout near the largest duration gives
		// the largest lifetime, never a wrapped one.
		o.Lifetime = satMulDuration(o.HeartbeatTimeout, DefaultLifetimeFactor)
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.Accounting == "" {
		o.Accounting = Sum
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.RankBy == "" {
		o.RankBy = RankUtilisation
	}
	if o.RetryAfter == 0 {
		o.RetryAfter = DefaultRetryAfter
	}
	return o
}

func satMulDuration(d time.Duration, k int64) time.Duration {
	if d > time.Duration(math.MaxInt64/k) {
		return math.MaxInt64
	}
	return d * time.Duration(k)
}

// satAdd adds non-negative counts without wrapping: the sum saturates at
// math.MaxInt.
func satAdd(a, b int) int {
	if b > math.MaxInt-a {
		return math.MaxInt
	}
	return a + b
}

// ValidateNodeID checks a node id for every store: non-empty and free of '{'
// and '}', because the Redis store puts it inside a {n:<id>} hash tag and a
// brace would move the key to another cluster slot. The error wraps
// ErrInvalidInput and names the field path "node".
func ValidateNodeID(id string) error {
	return plancore.Invalid(ErrInvalidInput, validateNodeID("node", id))
}

// validateNodeID checks a node id, reported under the field name; the path
// is built only for an error, since every reserve checks its node.
func validateNodeID(name, id string) field.ErrorList {
	if id == "" {
		return field.ErrorList{field.Required(field.NewPath(name), "a node id is required")}
	}
	for i := 0; i < len(id); i++ {
		if id[i] == '{' || id[i] == '}' {
			return field.ErrorList{field.Invalid(field.NewPath(name), id, "must not contain a brace")}
		}
	}
	return nil
}

func validateRID(rid string) field.ErrorList {
	if rid == "" {
		return field.ErrorList{field.Required(field.NewPath("rid"), "a reservation id (job id) is required")}
	}
	return nil
}

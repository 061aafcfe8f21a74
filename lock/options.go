package lock

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// DefaultTTL is the lock timeout when Options.TTL is zero: HAMi's
// NodeLockTimeout (5 minutes). It is the one source of truth for the default;
// HAMi's flag default silently overrode its environment variable (#2790).
const DefaultTTL = 5 * time.Minute

// CambriconTTL is the fixed timeout HAMi's Cambricon vendor uses for its own
// lock name (CambriconLockName). Use it as Options.TTL for that name to keep
// HAMi's behaviour.
const CambriconTTL = 2 * time.Minute

// AllocatingCeilingNever, as Options.AllocatingCeiling, means a holder that is
// still allocating is never stolen from, however old its lock.
const AllocatingCeilingNever time.Duration = -1

// MaxTTL is the largest Options.TTL (and, times three, the largest
// Options.AllocatingCeiling) Validate accepts: ten years. Larger values would
// make "now + TTL" overflow and a retry time land in the past.
const MaxTTL = 10 * 365 * 24 * time.Hour

// ExpiryClock chooses whose clock measures a lock's age.
type ExpiryClock string

const (
	// WriterClock (the default; "" means it too) measures age as Now minus the
	// record's timestamp, as HAMi does. It needs no observer state and expires
	// at the same instant as HAMi components, but it trusts the writer's clock,
	// so a timestamp more than TTL in the future is treated as malformed.
	WriterClock ExpiryClock = "WriterClock"
	// ObservationClock measures age as Now minus Observation.FirstObservedAt,
	// the local time the caller first saw this exact value, as a Kubernetes
	// Lease does. It is immune to writer clock skew.
	ObservationClock ExpiryClock = "ObservationClock"
)

// MalformedPolicy chooses what happens to a value that cannot be decoded.
type MalformedPolicy string

const (
	// StealAfterTTL (the default; "" means it too) refuses with Invalid until
	// the same value has been observed unchanged for more than TTL, then
	// plans StealExpired with reason Malformed. HAMi blocks such a node until a
	// human deletes the annotation.
	StealAfterTTL MalformedPolicy = "StealAfterTTL"
	// BlockForever refuses with Invalid forever, as HAMi does. It also keeps a
	// far future timestamp merely "not expired" instead of malformed.
	BlockForever MalformedPolicy = "BlockForever"
)

// Identity chooses how a record's owner is compared with a requester.
type Identity string

const (
	// UIDThenName (the default; "" means it too) compares UIDs when both the
	// record and the requester carry one (and still requires namespace and
	// name to match); otherwise it compares namespace and name. A re-created
	// StatefulSet pod with the same name is therefore not the owner (HAMi #2570).
	UIDThenName Identity = "UIDThenName"
	// NameOnly compares namespace and name only, as HAMi does.
	NameOnly Identity = "NameOnly"
)

// Options tune the decisions. The zero value means the documented defaults:
// a 5 minute TTL measured on the writer's clock, malformed values stealable
// after TTL, UID-aware identity, terminal holders treated as dangling, holders
// still allocating protected up to 3 × TTL, and legacy values released only by
// expiry or steal.
type Options struct {
	// TTL is the lock timeout: a lock whose age is strictly greater than TTL is
	// expired (age == TTL is not). Zero means DefaultTTL; negative is invalid, and so is a TTL above MaxTTL.
	TTL time.Duration
	// ExpiryClock chooses the clock that measures age. Default WriterClock.
	ExpiryClock ExpiryClock
	// Malformed chooses what happens to undecodable values. Default StealAfterTTL.
	Malformed MalformedPolicy
	// Identity chooses how owners are compared. Default UIDThenName.
	Identity Identity
	// TerminalHolderAlive, when set, counts a Succeeded or Failed holder pod as
	// alive, so its lock is held until TTL, as in HAMi (#1368). By default such
	// a lock is dangling and is stolen at once.
	TerminalHolderAlive bool
	// StealFromAllocatingHolder, when set, steals an expired lock even when its
	// holder is Pending with bind-phase=allocating, as HAMi does (#3096). By
	// default such a holder is protected until its lock is older than
	// AllocatingCeiling.
	StealFromAllocatingHolder bool
	// AllocatingCeiling bounds that protection: an allocating holder's lock is
	// stolen once its age is strictly greater than this. Zero means 3 × TTL;
	// AllocatingCeilingNever means never. Other negative values are invalid.
	AllocatingCeiling time.Duration
	// LegacyReleasableByAnyone, when set, lets any requester release a value
	// without a comma (legacy or malformed), as HAMi does (#2054). By default
	// such a value is freed only by expiry or steal.
	LegacyReleasableByAnyone bool
}

// HAMi returns the options that reproduce HAMi v2.10's node lock: a 5
// minute TTL on the writer's clock, malformed values blocking forever,
// namespace/name identity, terminal holders alive until expiry, expired locks
// stolen even from a holder still allocating, and comma-less values
// releasable by anyone.
// Assign it whole: each field it sets is one of the anchor's behaviours, and
// copying only some of them reproduces none of the anchor exactly.
func HAMi() Options {
	return Options{
		TTL:                       DefaultTTL,
		ExpiryClock:               WriterClock,
		Malformed:                 BlockForever,
		Identity:                  NameOnly,
		TerminalHolderAlive:       true,
		StealFromAllocatingHolder: true,
		LegacyReleasableByAnyone:  true,
	}
}

// Validate reports every invalid field, wrapping ErrInvalidOptions: a TTL that
// is negative or above MaxTTL, an allocating ceiling that is negative (other
// than AllocatingCeilingNever) or above 3 × MaxTTL, an unknown enum value.
func (o Options) Validate() error {
	return plancore.Invalid(ErrInvalidOptions, o.validate(func() *field.Path { return field.NewPath("options") }))
}

func (o Options) validate(p func() *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case o.TTL < 0:
		errs = append(errs, field.Invalid(p().Child("ttl"), o.TTL.String(), fmt.Sprintf("must be positive (zero means %v)", DefaultTTL)))
	case o.TTL > MaxTTL:
		errs = append(errs, field.Invalid(p().Child("ttl"), o.TTL.String(), fmt.Sprintf("must be at most %v", MaxTTL)))
	}
	switch o.ExpiryClock {
	case "", WriterClock, ObservationClock:
	default:
		errs = append(errs, field.NotSupported(p().Child("expiryClock"), o.ExpiryClock, []ExpiryClock{WriterClock, ObservationClock}))
	}
	switch o.Malformed {
	case "", StealAfterTTL, BlockForever:
	default:
		errs = append(errs, field.NotSupported(p().Child("malformed"), o.Malformed, []MalformedPolicy{StealAfterTTL, BlockForever}))
	}
	switch o.Identity {
	case "", UIDThenName, NameOnly:
	default:
		errs = append(errs, field.NotSupported(p().Child("identity"), o.Identity, []Identity{UIDThenName, NameOnly}))
	}
	switch {
	case o.AllocatingCeiling < 0 && o.AllocatingCeiling != AllocatingCeilingNever:
		errs = append(errs, field.Invalid(p().Child("allocatingCeiling"), o.AllocatingCeiling.String(), "must be positive, zero (3 × TTL) or AllocatingCeilingNever"))
	case o.AllocatingCeiling > 3*MaxTTL:
		errs = append(errs, field.Invalid(p().Child("allocatingCeiling"), o.AllocatingCeiling.String(), fmt.Sprintf("must be at most %v", 3*MaxTTL)))
	}
	return errs
}

func (o Options) writerClock() bool { return o.ExpiryClock != ObservationClock }

func (o Options) stealAfterTTL() bool { return o.Malformed != BlockForever }

func (o Options) uidThenName() bool { return o.Identity != NameOnly }

// EffectiveTTL returns TTL with the default applied.
func (o Options) EffectiveTTL() time.Duration {
	if o.TTL == 0 {
		return DefaultTTL
	}
	return o.TTL
}

// effectiveCeiling returns the allocating ceiling with the default applied, and
// whether there is one at all.
func (o Options) effectiveCeiling() (time.Duration, bool) {
	switch {
	case o.AllocatingCeiling == AllocatingCeilingNever:
		return 0, false
	case o.AllocatingCeiling == 0:
		return 3 * o.EffectiveTTL(), true
	default:
		return o.AllocatingCeiling, true
	}
}

// ResolveTTL picks the lock timeout from HAMi's two configuration sources with
// the precedence "flag explicitly set > environment > default": flag is the
// value of --node-lock-timeout and flagSet whether the user passed it; env is
// the value of HAMI_NODELOCK_EXPIRE ("" when unset). HAMi lets the flag's
// default silently override the environment (#2790) and only logs an invalid
// environment value; ResolveTTL returns an error for it instead.
func ResolveTTL(flag time.Duration, flagSet bool, env string) (time.Duration, error) {
	if flagSet {
		if flag <= 0 || flag > MaxTTL {
			return 0, plancore.Invalid(ErrInvalidOptions, field.ErrorList{field.Invalid(field.NewPath("flag"), flag.String(), "--node-lock-timeout must be positive")})
		}
		return flag, nil
	}
	env = strings.TrimSpace(env)
	if env == "" {
		return DefaultTTL, nil
	}
	d, err := time.ParseDuration(env)
	if err != nil {
		return 0, plancore.Invalid(ErrInvalidOptions, field.ErrorList{field.Invalid(field.NewPath("env"), env, "HAMI_NODELOCK_EXPIRE is not a Go duration: "+err.Error())})
	}
	if d <= 0 || d > MaxTTL {
		return 0, plancore.Invalid(ErrInvalidOptions, field.ErrorList{field.Invalid(field.NewPath("env"), env, "HAMI_NODELOCK_EXPIRE must be positive")})
	}
	return d, nil
}

package lock

import (
	"fmt"
	"strings"
	"time"
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

// ExpiryClock chooses whose clock measures a lock's age.
type ExpiryClock uint8

const (
	// WriterClock (the default) measures age as Now minus the record's
	// timestamp, as HAMi does. It needs no observer state and expires at the
	// same instant as HAMi components, but it trusts the writer's clock, so a
	// timestamp more than TTL in the future is treated as malformed (D3).
	WriterClock ExpiryClock = iota
	// ObservationClock measures age as Now minus Observation.FirstObservedAt,
	// the local time the caller first saw this exact value, as a Kubernetes
	// Lease does. It is immune to writer clock skew.
	ObservationClock
)

// MalformedPolicy chooses what happens to a value that cannot be decoded.
type MalformedPolicy uint8

const (
	// StealAfterTTL (the default) returns Invalid until the same value has been
	// observed unchanged for more than TTL, then StealExpired with reason
	// Malformed. HAMi blocks such a node until a human deletes the annotation (D2).
	StealAfterTTL MalformedPolicy = iota
	// BlockForever returns Invalid forever, as HAMi does. It also keeps a far
	// future timestamp merely "not expired" instead of malformed.
	BlockForever
)

// Identity chooses how a record's owner is compared with a requester.
type Identity uint8

const (
	// UIDThenName (the default) compares UIDs when both the record and the
	// requester carry one (and still requires namespace and name to match);
	// otherwise it compares namespace and name. A re-created StatefulSet pod
	// with the same name is therefore not the owner (D4, HAMi #2570).
	UIDThenName Identity = iota
	// NameOnly compares namespace and name only, as HAMi does.
	NameOnly
)

// Options tune the decisions. The zero value means the documented defaults:
// a 5 minute TTL measured on the writer's clock, malformed values stealable
// after TTL, UID-aware identity, terminal holders treated as dangling, holders
// still allocating protected up to 3 × TTL, and legacy values released only by
// expiry or steal.
type Options struct {
	// TTL is the lock timeout: a lock whose age is strictly greater than TTL is
	// expired (age == TTL is not). Zero means DefaultTTL; negative is invalid.
	TTL time.Duration
	// ExpiryClock chooses the clock that measures age. Default WriterClock.
	ExpiryClock ExpiryClock
	// Malformed chooses what happens to undecodable values. Default StealAfterTTL.
	Malformed MalformedPolicy
	// Identity chooses how owners are compared. Default UIDThenName.
	Identity Identity
	// TerminalHolderAlive, when set, counts a Succeeded or Failed holder pod as
	// alive, so its lock is held until TTL, as in HAMi (#1368). By default such
	// a lock is dangling and is stolen at once (D6).
	TerminalHolderAlive bool
	// StealFromAllocatingHolder, when set, steals an expired lock even when its
	// holder is Pending with bind-phase=allocating, as HAMi does (#3096). By
	// default such a holder is protected until its lock is older than
	// AllocatingCeiling (D7).
	StealFromAllocatingHolder bool
	// AllocatingCeiling bounds D7's protection: an allocating holder's lock is
	// stolen once its age is strictly greater than this. Zero means 3 × TTL;
	// AllocatingCeilingNever means never. Other negative values are invalid.
	AllocatingCeiling time.Duration
	// LegacyReleasableByAnyone, when set, lets any requester release a value
	// without a comma (legacy or malformed), as HAMi does (#2054). By default
	// such a value is freed only by expiry or steal (D10).
	LegacyReleasableByAnyone bool
}

// Validate reports the first invalid field, wrapping ErrBadInput.
func (o Options) Validate() error {
	if o.TTL < 0 {
		return fmt.Errorf("%w: Options.TTL must be positive (zero means %v), got %v", ErrBadInput, DefaultTTL, o.TTL)
	}
	if o.ExpiryClock > ObservationClock {
		return fmt.Errorf("%w: Options.ExpiryClock %d is not a known clock", ErrBadInput, o.ExpiryClock)
	}
	if o.Malformed > BlockForever {
		return fmt.Errorf("%w: Options.Malformed %d is not a known policy", ErrBadInput, o.Malformed)
	}
	if o.Identity > NameOnly {
		return fmt.Errorf("%w: Options.Identity %d is not a known identity", ErrBadInput, o.Identity)
	}
	if o.AllocatingCeiling < 0 && o.AllocatingCeiling != AllocatingCeilingNever {
		return fmt.Errorf("%w: Options.AllocatingCeiling must be positive, zero (3 × TTL) or AllocatingCeilingNever, got %v", ErrBadInput, o.AllocatingCeiling)
	}
	return nil
}

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
// environment value; ResolveTTL returns an error for it instead (D8).
func ResolveTTL(flag time.Duration, flagSet bool, env string) (time.Duration, error) {
	if flagSet {
		if flag <= 0 {
			return 0, fmt.Errorf("%w: --node-lock-timeout must be positive, got %v", ErrBadInput, flag)
		}
		return flag, nil
	}
	env = strings.TrimSpace(env)
	if env == "" {
		return DefaultTTL, nil
	}
	d, err := time.ParseDuration(env)
	if err != nil {
		return 0, fmt.Errorf("%w: HAMI_NODELOCK_EXPIRE=%q is not a Go duration: %v", ErrBadInput, env, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%w: HAMI_NODELOCK_EXPIRE must be positive, got %v", ErrBadInput, d)
	}
	return d, nil
}

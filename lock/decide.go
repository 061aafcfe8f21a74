package lock

import (
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// view is what an observation says before any holder lookup: the shared first
// half of PlanAcquire and NeedsHolder.
type view struct {
	ttl time.Duration
	// rec is the observed record, with the sidecar's UID and epoch when the
	// sidecar matches.
	rec Record
	// invalid is ReasonMalformed or ReasonFutureTimestamp for a value that
	// cannot be trusted, "" otherwise.
	invalid ReasonCode
	// invalidStealable reports whether an invalid value has been seen
	// unchanged for more than TTL; invalidRetryAt is when it will have been.
	invalidStealable bool
	invalidRetryAt   time.Time
	// age is the lock's age on the configured clock; base is the instant age
	// is measured from.
	age  time.Duration
	base time.Time
	// expired reports age > TTL (strictly: age == TTL is not expired).
	expired bool
	// own reports that the requester is the record's owner.
	own bool
	// next is the epoch the next grant carries.
	next uint64
}

// AcquireInput is everything PlanAcquire needs.
type AcquireInput struct {
	// Observation is what a Store read returned, with FirstObservedAt filled
	// by the caller (zero means "first seen now").
	Observation Observation
	// Requester is the pod asking for the lock.
	Requester Requester
	// Holder is the holder pod's state, when NeedsHolder says it is needed;
	// the zero value means not checked.
	Holder Holder
	// Now is the requester's clock. The zero time is invalid.
	Now time.Time
}

// Validate reports every invalid field of the input, wrapping ErrInvalidInput:
// an empty key or requester field, a separator inside a requester field, a
// zero Now, an unknown holder state, an exhausted epoch.
func (in AcquireInput) Validate() error {
	return plancore.Invalid(ErrInvalidInput, in.validate())
}

// The paths of the inputs' parts, built only when a check fails: the
// planners validate on every call, so valid input allocates nothing.
func observationKeyPath() *field.Path { return field.NewPath("observation", "key") }
func requesterPath() *field.Path      { return field.NewPath("requester") }

func (in AcquireInput) validate() field.ErrorList {
	errs := in.Observation.Key.validate(observationKeyPath)
	errs = append(errs, in.Requester.validate(requesterPath)...)
	if in.Now.IsZero() {
		errs = append(errs, field.Required(field.NewPath("now"), "the requester's clock"))
	}
	if !in.Holder.State.known() {
		errs = append(errs, field.NotSupported(field.NewPath("holder", "state"), in.Holder.State,
			[]HolderState{HolderNotChecked, HolderExists, HolderNotFound, HolderTerminal, HolderUnknown}))
	}
	if in.Observation.EpochHigh == math.MaxUint64 {
		errs = append(errs, field.Invalid(field.NewPath("observation", "epochHigh"), in.Observation.EpochHigh, "the key's epochs are exhausted"))
	}
	return errs
}

// validateBoth validates input errors and options, options first.
func validateBoth(inErrs field.ErrorList, o Options) error {
	return plancore.Join(o.Validate(), plancore.Invalid(ErrInvalidInput, inErrs))
}

// assess validates the inputs and reads the observation.
func assess(in AcquireInput, opts Options) (view, error) {
	if err := validateBoth(in.validate(), opts); err != nil {
		return view{}, err
	}
	obs, now := in.Observation, in.Now
	v := view{ttl: opts.EffectiveTTL()}
	high := obs.EpochHigh
	if !obs.Present {
		v.next = high + 1
		return v, nil
	}
	// The observed-time base: when this exact value was first seen. Zero means
	// the caller is seeing it for the first time now.
	seen := obs.FirstObservedAt
	if seen.IsZero() || seen.After(now) {
		seen = now
	}
	rec, format, err := Decode(obs.Raw)
	if obs.Sidecar != "" {
		sc, scFormat, scErr := Decode(obs.Sidecar)
		if scErr == nil && scFormat == FormatExtended {
			high = max(high, sc.Epoch)
			if format == FormatHAMi && strings.HasPrefix(obs.Sidecar, obs.Raw) &&
				len(obs.Sidecar) > len(obs.Raw) && obs.Sidecar[len(obs.Raw)] == ',' {
				rec.UID, rec.Epoch = sc.UID, sc.Epoch
			}
		}
	}
	high = max(high, rec.Epoch)
	if high == math.MaxUint64 {
		return view{}, plancore.Invalid(ErrInvalidInput, field.ErrorList{
			field.Invalid(field.NewPath("observation", "raw"), obs.Raw, "the key's epochs are exhausted")})
	}
	v.next = high + 1
	v.rec = rec
	switch {
	case err != nil:
		v.invalid = ReasonMalformed
	case opts.writerClock() && opts.stealAfterTTL() && rec.Time.Sub(now) > v.ttl:
		// HAMi's writer-clock age of a future timestamp is negative, so it would
		// never expire.
		v.invalid = ReasonFutureTimestamp
	}
	if v.invalid != "" {
		if opts.stealAfterTTL() {
			v.invalidStealable = now.Sub(seen) > v.ttl
			v.invalidRetryAt = seen.Add(v.ttl + 1)
			if v.invalid == ReasonFutureTimestamp {
				// The timestamp stops being "too far ahead" at rec.Time - TTL.
				v.invalidRetryAt = minTime(v.invalidRetryAt, rec.Time.Add(-v.ttl))
			}
		}
		return v, nil
	}
	if !opts.writerClock() {
		v.base = seen
	} else {
		v.base = rec.Time
	}
	v.age = now.Sub(v.base)
	v.expired = v.age > v.ttl
	v.own = sameOwner(rec, in.Requester, opts)
	return v, nil
}

// sameOwner compares a record's owner with a requester: namespace and name
// must match and, under UIDThenName when both sides carry a UID, the UIDs too.
func sameOwner(rec Record, req Requester, o Options) bool {
	if rec.Namespace != req.Namespace || rec.Name != req.Name {
		return false
	}
	if o.uidThenName() && rec.UID != "" && req.UID != "" {
		return rec.UID == req.UID
	}
	return true
}

// protects reports whether the allocating-holder protection covers an expired
// lock of this age, if its holder turns out to be allocating.
func (v view) protects(opts Options) bool {
	if opts.StealFromAllocatingHolder || !v.rec.Named() || v.own {
		return false
	}
	ceiling, ok := opts.effectiveCeiling()
	return !ok || v.age <= ceiling
}

// NeedsHolder reports whether PlanAcquire needs the holder's state for these
// inputs, that is whether the executor must look the holder pod up first. It
// is true only when the value decodes and names an owner other than the
// requester, and the lock is either not expired, or expired while the
// allocating-holder protection may still apply. Without a needed holder,
// PlanAcquire refuses with ReasonHolderUnknown. in.Holder is ignored.
func NeedsHolder(in AcquireInput, o Options) (bool, error) {
	in.Holder = Holder{}
	v, err := assess(in, o)
	if err != nil || !in.Observation.Present || v.invalid != "" {
		return false, err
	}
	if v.expired {
		return v.protects(o), nil
	}
	return !v.own && v.rec.Named(), nil
}

// acquirePlanner carries one PlanAcquire call's inputs and view, so each step
// reads as a small method.
type acquirePlanner struct {
	in   AcquireInput
	o    Options
	v    view
	base Plan
}

// grant plans taking the lock with a new record under the observed precondition.
func (a acquirePlanner) grant(k Kind, c ReasonCode) Plan {
	p := a.base
	p.Kind, p.Reason = k, reason(c)
	p.Record = Record{Time: a.in.Now.UTC().Truncate(time.Second), Namespace: a.in.Requester.Namespace,
		Name: a.in.Requester.Name, UID: a.in.Requester.UID, Epoch: a.v.next}
	p.Precondition = a.in.Observation.precondition()
	return p
}

// refuse plans no write; retryAt (zero: none) becomes RequeueAfter.
func (a acquirePlanner) refuse(k Kind, c ReasonCode, retryAt time.Time) Plan {
	p := a.base
	p.Kind, p.Reason, p.Record = k, reason(c), a.v.rec
	if !retryAt.IsZero() {
		p.RequeueAfter = max(retryAt.Sub(a.in.Now), 1)
	}
	return p
}

// invalidValue plans for a malformed or future-dated value.
func (a acquirePlanner) invalidValue() Plan {
	if a.v.invalidStealable {
		return a.grant(StealExpired, ReasonCode(a.v.invalid))
	}
	return a.refuse(Invalid, ReasonCode(a.v.invalid), a.v.invalidRetryAt)
}

// expired plans for a lock older than TTL: steal it, unless its holder is
// allocating (or must be looked up to know) under the protection.
func (a acquirePlanner) expired() Plan {
	if a.v.protects(a.o) {
		switch a.in.Holder.State {
		case HolderExists:
			if a.in.Holder.Allocating {
				var at time.Time
				if ceiling, ok := a.o.effectiveCeiling(); ok {
					at = a.v.base.Add(ceiling + 1)
				}
				return a.refuse(Refuse, ReasonHolderAllocating, at)
			}
		case HolderNotChecked, HolderUnknown:
			return a.refuse(Refuse, ReasonHolderUnknown, time.Time{})
		}
	}
	return a.grant(StealExpired, ReasonExpired)
}

// live plans for a lock within its TTL held by someone else: steal it from a
// dangling holder, refuse otherwise.
func (a acquirePlanner) live() Plan {
	expiry := a.v.base.Add(a.v.ttl + 1)
	if !a.v.rec.Named() {
		return a.refuse(Refuse, ReasonHeldByOther, expiry)
	}
	switch a.in.Holder.State {
	case HolderNotFound:
		if a.in.Holder.Replaced {
			return a.grant(StealDangling, ReasonHolderReplaced)
		}
		return a.grant(StealDangling, ReasonHolderGone)
	case HolderTerminal:
		if !a.o.TerminalHolderAlive {
			return a.grant(StealDangling, ReasonHolderTerminal)
		}
		return a.refuse(Refuse, ReasonHeldByOther, expiry)
	case HolderExists:
		return a.refuse(Refuse, ReasonHeldByOther, expiry)
	default:
		return a.refuse(Refuse, ReasonHolderUnknown, time.Time{})
	}
}

// PlanAcquire plans what a requester does about one lock, given what was
// observed, the holder's state (see NeedsHolder), and Now on the requester's
// clock. It is pure: same inputs, same plan; it reads no clock and writes
// nothing. Invalid input or options give an error naming every bad field
// (wrapping ErrInvalidInput or ErrInvalidOptions); every lock value, however
// malformed, gives a plan.
//
// The order, with default options (HAMi v2.10 LockNode, with the differences
// listed in the package documentation):
//  1. absent → Acquire;
//  2. malformed, or dated more than TTL in the future → Invalid, then
//     StealExpired(Malformed) once seen unchanged for more than TTL;
//  3. age > TTL (strictly) → StealExpired, unless the holder is allocating and
//     age ≤ the allocating ceiling → Refuse(HolderAllocating);
//  4. same owner → AlreadyHeld (no write, no re-stamp);
//  5. unnamed owner → Refuse(HeldByOther) until expiry;
//  6. holder NotFound or Terminal → StealDangling; Exists → Refuse(HeldByOther);
//     Unknown or NotChecked → Refuse(HolderUnknown).
func PlanAcquire(in AcquireInput, o Options) (Plan, error) {
	v, err := assess(in, o)
	if err != nil {
		return Plan{}, err
	}
	a := acquirePlanner{in: in, o: o, v: v, base: Plan{Key: in.Observation.Key, TTL: v.ttl}}
	switch {
	case !in.Observation.Present:
		return a.grant(Acquire, ReasonUnlocked), nil
	case v.invalid != "":
		return a.invalidValue(), nil
	case v.expired:
		return a.expired(), nil
	case v.own:
		p := a.base
		p.Kind, p.Reason, p.Record = AlreadyHeld, reason(ReasonSameOwner), v.rec
		return p, nil
	}
	return a.live(), nil
}

// ReleaseInput is everything PlanRelease needs. A release reads no clock, so
// it has no Now.
type ReleaseInput struct {
	// Observation is what a Store read returned.
	Observation Observation
	// Requester is the pod giving the lock back. Ignored with Force.
	Requester Requester
	// Force releases whatever was observed, owner or not: the one
	// administrative removal, still a compare-and-delete of exactly the
	// observed value and version, so it can never remove a value written after
	// the observation.
	Force bool
	// FirstRead is the value the release's first read returned, set when this
	// observation is a re-read after the first delete conflicted (nil on the
	// first attempt). A release that no owner check protects, a forced one or
	// one of a legacy value under Options.LegacyReleasableByAnyone, removes
	// only that first value: if another writer put a new value in between,
	// the new holder keeps its lock (HAMi #2197). An owner's release is not
	// affected: a lock re-stamped by the same owner is still released.
	FirstRead *string
}

// Validate reports every invalid field of the input, wrapping ErrInvalidInput.
func (in ReleaseInput) Validate() error {
	return plancore.Invalid(ErrInvalidInput, in.validate())
}

func (in ReleaseInput) validate() field.ErrorList {
	errs := in.Observation.Key.validate(observationKeyPath)
	if !in.Force {
		errs = append(errs, in.Requester.validate(requesterPath)...)
	}
	return errs
}

// PlanRelease plans whether a requester may remove a lock (HAMi
// ReleaseNodeLock, owner-checked):
//   - absent → NoOp(NotLocked);
//   - Force → Release(Forced);
//   - an extended value, or a HAMi value whose sidecar matches: the owner
//     comparison of PlanAcquire (UID-aware) → Release(Owner), else
//     NoOp(NotOwner);
//   - any other value with a comma, including a 3-part value with a bad
//     timestamp: HAMi's owner-suffix rule, the raw value must end with
//     ",<namespace>,<name>" (the leading comma matters, HAMi #1433);
//   - a value without a comma (legacy or malformed) names no owner: NoOp,
//     unless Options.LegacyReleasableByAnyone (HAMi #2054), and then only
//     the value first read (ReleaseInput.FirstRead).
//
// Invalid input is refused with HAMi's "cannot release node lock: " before
// the *plancore.InvalidError that names every field.
//
// A Release must be applied as one compare-and-delete of the observed value
// and version; on conflict, re-read and plan again, so a lock re-stamped by
// the same owner is still released and one taken by someone else is kept. A
// release never lowers the key's epoch high-water mark.
func PlanRelease(in ReleaseInput, o Options) (Plan, error) {
	if err := validateBoth(in.validate(), o); err != nil {
		// HAMi's ReleaseNodeLock words a release it refuses (a nil pod) so.
		return Plan{}, fmt.Errorf("cannot release node lock: %w", err)
	}
	obs := in.Observation
	p := Plan{Kind: NoOp, Key: obs.Key}
	release := func(c ReasonCode) (Plan, error) {
		p.Kind, p.Reason, p.Precondition = Release, reason(c), obs.precondition()
		return p, nil
	}
	switch {
	case !obs.Present:
		p.Reason = reason(ReasonNotLocked)
		return p, nil
	case in.Force && in.changedSinceFirstRead():
		p.Reason = reason(ReasonChangedSinceFirstRead)
		return p, nil
	case in.Force:
		return release(ReasonForced)
	}
	if releasableBy(obs, in.Requester, o) {
		return release(ReasonOwner)
	}
	if !strings.Contains(obs.Raw, Separator) && o.LegacyReleasableByAnyone {
		if in.changedSinceFirstRead() {
			p.Reason = reason(ReasonChangedSinceFirstRead)
			return p, nil
		}
		return release(ReasonLegacyReleasable)
	}
	p.Reason = reason(ReasonNotOwner)
	return p, nil
}

// changedSinceFirstRead reports whether this is a re-read whose value is not
// the one the release first read.
func (in ReleaseInput) changedSinceFirstRead() bool {
	return in.FirstRead != nil && *in.FirstRead != in.Observation.Raw
}

// releasableBy reports whether req owns the observed value for a release.
func releasableBy(obs Observation, req Requester, o Options) bool {
	rec, format, _ := Decode(obs.Raw)
	if format == FormatHAMi {
		if uid, epoch, ok := sidecarFor(obs.Raw, obs.Sidecar); ok {
			rec.UID, rec.Epoch, format = uid, epoch, FormatExtended
		}
	}
	switch {
	case format == FormatExtended:
		return sameOwner(rec, req, o)
	case strings.Contains(obs.Raw, Separator):
		return hasOwnerSuffix(obs.Raw, req.Namespace, req.Name)
	}
	return false
}

// hasOwnerSuffix reports whether raw ends with "," + ns + "," + name, without
// building that string.
func hasOwnerSuffix(raw, ns, name string) bool {
	if !strings.HasSuffix(raw, name) {
		return false
	}
	raw = raw[:len(raw)-len(name)]
	if !strings.HasSuffix(raw, Separator) {
		return false
	}
	raw = raw[:len(raw)-1]
	if !strings.HasSuffix(raw, ns) {
		return false
	}
	raw = raw[:len(raw)-len(ns)]
	return strings.HasSuffix(raw, Separator)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

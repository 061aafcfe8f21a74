package lock

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// view is what an observation says before any holder lookup: the shared first
// half of Decide and NeedsHolder.
type view struct {
	ttl time.Duration
	// rec is the observed record, with the sidecar's UID and epoch when the
	// sidecar matches.
	rec Record
	// invalid is ReasonMalformed or ReasonFutureTimestamp for a value that
	// cannot be trusted, "" otherwise.
	invalid Reason
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
	// own reports that the requester is the record's owner (§3.2).
	own bool
	// next is the epoch the next grant carries.
	next uint64
}

// assess validates the inputs and reads the observation.
func assess(obs Observation, req Requester, now time.Time, opts Options) (view, error) {
	if err := obs.Key.Validate(); err != nil {
		return view{}, err
	}
	if err := req.Validate(); err != nil {
		return view{}, err
	}
	if err := opts.Validate(); err != nil {
		return view{}, err
	}
	v := view{ttl: opts.EffectiveTTL()}
	high := obs.EpochHigh
	if !obs.Present {
		if high == math.MaxUint64 {
			return view{}, fmt.Errorf("%w: Observation.EpochHigh of %s is exhausted", ErrBadInput, obs.Key)
		}
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
		return view{}, fmt.Errorf("%w: the epoch of %s is exhausted", ErrBadInput, obs.Key)
	}
	v.next = high + 1
	v.rec = rec
	switch {
	case err != nil:
		v.invalid = ReasonMalformed
	case opts.ExpiryClock == WriterClock && opts.Malformed == StealAfterTTL && rec.Time.Sub(now) > v.ttl:
		// HAMi's writer-clock age of a future timestamp is negative, so it would
		// never expire (D3).
		v.invalid = ReasonFutureTimestamp
	}
	if v.invalid != "" {
		if opts.Malformed == StealAfterTTL {
			v.invalidStealable = now.Sub(seen) > v.ttl
			v.invalidRetryAt = seen.Add(v.ttl + 1)
			if v.invalid == ReasonFutureTimestamp {
				// The timestamp stops being "too far ahead" at rec.Time - TTL.
				v.invalidRetryAt = minTime(v.invalidRetryAt, rec.Time.Add(-v.ttl))
			}
		}
		return v, nil
	}
	if opts.ExpiryClock == ObservationClock {
		v.base = seen
	} else {
		v.base = rec.Time
	}
	v.age = now.Sub(v.base)
	v.expired = v.age > v.ttl
	v.own = sameOwner(rec, req, opts.Identity)
	return v, nil
}

// sameOwner compares a record's owner with a requester (§3.2): namespace and
// name must match and, under UIDThenName when both sides carry a UID, the UIDs
// too.
func sameOwner(rec Record, req Requester, id Identity) bool {
	if rec.Namespace != req.Namespace || rec.Name != req.Name {
		return false
	}
	if id == UIDThenName && rec.UID != "" && req.UID != "" {
		return rec.UID == req.UID
	}
	return true
}

// protects reports whether D7 protects an expired lock of this age, if its
// holder turns out to be allocating.
func (v view) protects(opts Options) bool {
	if opts.StealFromAllocatingHolder || !v.rec.Named() || v.own {
		return false
	}
	ceiling, ok := opts.effectiveCeiling()
	return !ok || v.age <= ceiling
}

// NeedsHolder reports whether Decide needs the holder's state for these
// inputs, that is whether the executor must look the holder pod up first. It
// is true only when the value decodes and names an owner other than the
// requester, and the lock is either not expired, or expired while D7's
// protection may still apply. Without a needed holder, Decide refuses with
// ReasonHolderUnknown.
func NeedsHolder(obs Observation, req Requester, now time.Time, opts Options) (bool, error) {
	v, err := assess(obs, req, now, opts)
	if err != nil || !obs.Present || v.invalid != "" {
		return false, err
	}
	if v.expired {
		return v.protects(opts), nil
	}
	return !v.own && v.rec.Named(), nil
}

// Decide decides what a requester does about one lock, given what was
// observed, the holder's state (see NeedsHolder), and Now on the requester's
// clock. It is pure: same inputs, same decision; it reads no clock and writes
// nothing. Invalid arguments give an error naming the field; every lock value,
// however malformed, gives a decision.
//
// The order, with default options (HAMi v2.10 LockNode, with D1-D7 fixed):
//  1. absent → Acquire;
//  2. malformed, or dated more than TTL in the future → Invalid, then
//     StealExpired(Malformed) once seen unchanged for more than TTL;
//  3. age > TTL (strictly) → StealExpired, unless the holder is allocating and
//     age ≤ the allocating ceiling → Refuse(HolderAllocating);
//  4. same owner → AlreadyHeld (no write, no re-stamp);
//  5. unnamed owner → Refuse(HeldByOther) until expiry;
//  6. holder NotFound or Terminal → StealDangling; Exists → Refuse(HeldByOther);
//     Unknown or NotChecked → Refuse(HolderUnknown).
func Decide(obs Observation, req Requester, now time.Time, opts Options, holder Holder) (Decision, error) {
	v, err := assess(obs, req, now, opts)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Key: obs.Key, TTL: v.ttl}
	grant := func(k Kind, r Reason) Decision {
		d.Kind, d.Reason = k, r
		d.Record = Record{Time: now.UTC().Truncate(time.Second), Namespace: req.Namespace, Name: req.Name, UID: req.UID, Epoch: v.next}
		d.Precondition = obs.precondition()
		return d
	}
	refuse := func(k Kind, r Reason, retryAt time.Time) Decision {
		d.Kind, d.Reason, d.Record, d.RetryAt = k, r, v.rec, retryAt
		return d
	}
	if !obs.Present {
		return grant(Acquire, ReasonUnlocked), nil
	}
	if v.invalid != "" {
		if v.invalidStealable {
			return grant(StealExpired, v.invalid), nil
		}
		return refuse(Invalid, v.invalid, v.invalidRetryAt), nil
	}
	if v.expired {
		if v.protects(opts) {
			switch holder.State {
			case HolderExists:
				if holder.Allocating {
					var at time.Time
					if ceiling, ok := opts.effectiveCeiling(); ok {
						at = v.base.Add(ceiling + 1)
					}
					return refuse(Refuse, ReasonHolderAllocating, at), nil
				}
			case HolderNotChecked, HolderUnknown:
				return refuse(Refuse, ReasonHolderUnknown, time.Time{}), nil
			}
		}
		return grant(StealExpired, ReasonExpired), nil
	}
	expiry := v.base.Add(v.ttl + 1)
	if v.own {
		d.Kind, d.Reason, d.Record = AlreadyHeld, ReasonSameOwner, v.rec
		return d, nil
	}
	if !v.rec.Named() {
		return refuse(Refuse, ReasonHeldByOther, expiry), nil
	}
	switch holder.State {
	case HolderNotFound:
		if holder.Replaced {
			return grant(StealDangling, ReasonHolderReplaced), nil
		}
		return grant(StealDangling, ReasonHolderGone), nil
	case HolderTerminal:
		if !opts.TerminalHolderAlive {
			return grant(StealDangling, ReasonHolderTerminal), nil
		}
		return refuse(Refuse, ReasonHeldByOther, expiry), nil
	case HolderExists:
		return refuse(Refuse, ReasonHeldByOther, expiry), nil
	default:
		return refuse(Refuse, ReasonHolderUnknown, time.Time{}), nil
	}
}

// DecideRelease decides whether a requester may remove a lock (HAMi
// ReleaseNodeLock, owner-checked):
//   - absent → NoOp(NotLocked);
//   - an extended value, or a HAMi value whose sidecar matches: the owner
//     comparison of Decide (UID-aware) → Release(Owner), else NoOp(NotOwner);
//   - any other value with a comma, including a 3-part value with a bad
//     timestamp: HAMi's owner-suffix rule, the raw value must end with
//     ",<namespace>,<name>" (the leading comma matters, #1433);
//   - a value without a comma (legacy or malformed) names no owner: NoOp,
//     unless Options.LegacyReleasableByAnyone (HAMi #2054; D10).
//
// A Release must be applied as one compare-and-delete of the observed value
// and version; on conflict, re-read and decide again, so a lock re-stamped by
// the same owner is still released and one taken by someone else is kept.
func DecideRelease(obs Observation, req Requester, opts Options) (ReleaseDecision, error) {
	if err := obs.Key.Validate(); err != nil {
		return ReleaseDecision{}, err
	}
	if err := req.Validate(); err != nil {
		return ReleaseDecision{}, fmt.Errorf("cannot release node lock: %w", err)
	}
	if err := opts.Validate(); err != nil {
		return ReleaseDecision{}, err
	}
	d := ReleaseDecision{Kind: NoOp, Key: obs.Key}
	if !obs.Present {
		d.Reason = ReasonNotLocked
		return d, nil
	}
	rec, format, _ := Decode(obs.Raw)
	if format == FormatHAMi {
		if uid, epoch, ok := sidecarFor(obs.Raw, obs.Sidecar); ok {
			rec.UID, rec.Epoch, format = uid, epoch, FormatExtended
		}
	}
	var owner bool
	switch {
	case format == FormatExtended:
		owner = sameOwner(rec, req, opts.Identity)
	case strings.Contains(obs.Raw, Separator):
		owner = hasOwnerSuffix(obs.Raw, req.Namespace, req.Name)
	case opts.LegacyReleasableByAnyone:
		d.Kind, d.Reason, d.Precondition = Release, ReasonLegacyReleasable, obs.precondition()
		return d, nil
	}
	if !owner {
		d.Reason = ReasonNotOwner
		return d, nil
	}
	d.Kind, d.Reason, d.Precondition = Release, ReasonOwner, obs.precondition()
	return d, nil
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

// ForceRelease is the one administrative removal: it releases whatever was
// observed, owner or not, still as a compare-and-delete of exactly the
// observed value and version, so it can never remove a value written after the
// observation. There is deliberately no "release, skipping the owner check"
// against a re-read value (D1).
func ForceRelease(obs Observation) (ReleaseDecision, error) {
	if err := obs.Key.Validate(); err != nil {
		return ReleaseDecision{}, err
	}
	if !obs.Present {
		return ReleaseDecision{Kind: NoOp, Reason: ReasonNotLocked, Key: obs.Key}, nil
	}
	return ReleaseDecision{Kind: Release, Reason: ReasonForced, Key: obs.Key, Precondition: obs.precondition()}, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

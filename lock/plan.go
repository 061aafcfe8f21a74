package lock

import (
	"fmt"
	"strings"
	"time"
)

// Kind is what an acquire decision tells the caller to do.
type Kind uint8

const (
	// Acquire: the lock is free; write Record if the key is still absent at
	// the observed version.
	Acquire Kind = iota + 1
	// AlreadyHeld: the requester already holds the lock. Nothing is written and
	// the timestamp is not refreshed (HAMi v2.10 re-entrancy, #2255, #2570).
	AlreadyHeld
	// StealExpired: the lock is older than TTL (or malformed for longer than
	// TTL); overwrite exactly the observed value with Record in one
	// compare-and-swap.
	StealExpired
	// StealDangling: the holder pod is gone, replaced or terminal; overwrite
	// exactly the observed value with Record in one compare-and-swap.
	StealDangling
	// Refuse: someone else holds the lock. Nothing is written. RetryAt says
	// when the answer may change without any other write.
	Refuse
	// Invalid: the value is malformed (or, on the writer's clock, dated more
	// than TTL in the future). Nothing is written. RetryAt says when it becomes
	// stealable (zero with BlockForever).
	Invalid
)

var kindNames = [...]string{"Kind(0)", "Acquire", "AlreadyHeld", "StealExpired", "StealDangling", "Refuse", "Invalid"}

// String returns the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Grants reports whether the kind takes the lock by a write (Acquire or a steal).
func (k Kind) Grants() bool { return k == Acquire || k == StealExpired || k == StealDangling }

// Reason is the machine-readable cause of a decision.
type Reason string

// Reasons of acquire and release decisions.
const (
	// ReasonUnlocked: Acquire of an absent key.
	ReasonUnlocked Reason = "Unlocked"
	// ReasonSameOwner: AlreadyHeld.
	ReasonSameOwner Reason = "SameOwner"
	// ReasonExpired: StealExpired of a lock older than TTL.
	ReasonExpired Reason = "Expired"
	// ReasonMalformed: Invalid, or StealExpired once the malformed value has
	// been seen unchanged for longer than TTL.
	ReasonMalformed Reason = "Malformed"
	// ReasonFutureTimestamp: like ReasonMalformed, for a writer timestamp more
	// than TTL in the future (writer clock only).
	ReasonFutureTimestamp Reason = "FutureTimestamp"
	// ReasonHolderGone: StealDangling, the holder pod does not exist.
	ReasonHolderGone Reason = "HolderGone"
	// ReasonHolderReplaced: StealDangling, a different pod (another UID) now
	// has the holder's name.
	ReasonHolderReplaced Reason = "HolderReplaced"
	// ReasonHolderTerminal: StealDangling, the holder pod is Succeeded or Failed.
	ReasonHolderTerminal Reason = "HolderTerminal"
	// ReasonHeldByOther: Refuse, another live (or unnamed) owner holds the
	// lock. Counts as contention.
	ReasonHeldByOther Reason = "HeldByOther"
	// ReasonHolderAllocating: Refuse, the lock is expired but its holder is
	// still allocating (D7). Counts as contention.
	ReasonHolderAllocating Reason = "HolderAllocating"
	// ReasonHolderUnknown: Refuse, the holder had to be looked up and its
	// state is unknown. Not contention.
	ReasonHolderUnknown Reason = "HolderUnknown"

	// ReasonOwner: Release by the lock's owner.
	ReasonOwner Reason = "Owner"
	// ReasonLegacyReleasable: Release of an ownerless value under
	// Options.LegacyReleasableByAnyone.
	ReasonLegacyReleasable Reason = "LegacyReleasable"
	// ReasonForced: Release by ForceRelease.
	ReasonForced Reason = "Forced"
	// ReasonNotLocked: NoOp, the key is absent.
	ReasonNotLocked Reason = "NotLocked"
	// ReasonNotOwner: NoOp, the requester does not own the value.
	ReasonNotOwner Reason = "NotOwner"
)

// Contention reports whether a Refuse for this reason counts as contention
// (wraps ErrContention).
func (r Reason) Contention() bool { return r == ReasonHeldByOther || r == ReasonHolderAllocating }

// Decision is the outcome of Decide. For the grant kinds the executor MUST
// write exactly Record under exactly Precondition, in one compare-and-swap,
// and on a failed precondition MUST re-read and decide again: it never deletes
// a re-read value (D1). For every other kind it MUST NOT write.
type Decision struct {
	Kind   Kind
	Reason Reason
	// Key is the lock decided on.
	Key Key
	// Record is, for the grant kinds, the exact record to write; for
	// AlreadyHeld, Refuse and a decodable Invalid, the observed record.
	Record Record
	// Precondition is, for the grant kinds, the compare-and-swap precondition:
	// absent at the observed version (Acquire) or holding the observed raw
	// value at the observed version (steals). Zero otherwise.
	Precondition Precondition
	// RetryAt is, for Refuse and Invalid, the earliest instant at which the
	// same inputs (with Now moved on) give another answer: the expiry
	// instant, the allocating ceiling, or the malformed grace period's end.
	// Zero when only another write can change the answer.
	RetryAt time.Time
	// TTL is the timeout the decision used, for messages.
	TTL time.Duration
}

// Err returns the error a caller that gives up on this decision reports:
// contention (wrapping ErrContention, with HAMi's message "node <node> has been
// locked within <TTL>: node lock contention"), ErrHolderUnknown, or ErrInvalid.
// It returns nil for the grant kinds and AlreadyHeld.
func (d Decision) Err() error {
	switch d.Kind {
	case Refuse:
		if d.Reason.Contention() {
			if d.Reason == ReasonHolderAllocating {
				return fmt.Errorf("node %s has been locked within %v (holder %s/%s is still allocating): %w",
					d.Key.Node, d.TTL, d.Record.Namespace, d.Record.Name, ErrContention)
			}
			return fmt.Errorf("node %s has been locked within %v: %w", d.Key.Node, d.TTL, ErrContention)
		}
		return fmt.Errorf("%w: node %s lock %s is held by %s/%s", ErrHolderUnknown, d.Key.Node, d.Key.Name, d.Record.Namespace, d.Record.Name)
	case Invalid:
		return fmt.Errorf("%w: node %s lock %s (%s)", ErrInvalid, d.Key.Node, d.Key.Name, d.Reason)
	}
	return nil
}

// String renders the decision on one line, deterministically.
func (d Decision) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s(%s) %s", d.Kind, d.Reason, d.Key)
	switch {
	case d.Kind.Grants():
		fmt.Fprintf(&b, ": write %s if %s", Encode(d.Record, FormatExtended), d.Precondition)
	case d.Kind == AlreadyHeld:
		fmt.Fprintf(&b, ": held as %s", Encode(d.Record, FormatExtended))
	case !d.RetryAt.IsZero():
		fmt.Fprintf(&b, ": retry at %s", d.RetryAt.UTC().Format(time.RFC3339Nano))
	}
	return b.String()
}

// ReleaseKind is what a release decision tells the caller to do.
type ReleaseKind uint8

const (
	// NoOp: nothing to remove (absent, or not the requester's).
	NoOp ReleaseKind = iota + 1
	// Release: delete the value under Precondition, in one compare-and-delete.
	Release
)

// String returns the kind's name.
func (k ReleaseKind) String() string {
	switch k {
	case NoOp:
		return "NoOp"
	case Release:
		return "Release"
	}
	return fmt.Sprintf("ReleaseKind(%d)", int(k))
}

// ReleaseDecision is the outcome of DecideRelease. For Release the executor
// MUST delete under exactly Precondition and, on a failed precondition, re-read
// and decide again. A release never lowers the key's epoch high-water mark.
type ReleaseDecision struct {
	Kind   ReleaseKind
	Reason Reason
	Key    Key
	// Precondition is, for Release, "holds the observed raw value at the
	// observed version".
	Precondition Precondition
}

// String renders the decision on one line.
func (d ReleaseDecision) String() string {
	if d.Kind == Release {
		return fmt.Sprintf("%s(%s) %s: delete if %s", d.Kind, d.Reason, d.Key, d.Precondition)
	}
	return fmt.Sprintf("%s(%s) %s", d.Kind, d.Reason, d.Key)
}

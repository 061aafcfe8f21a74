package lock

import (
	"fmt"
	"strings"
	"time"

	"github.com/plancore/plancore"
)

// Kind is what a plan tells the caller to do.
type Kind string

const (
	// Acquire: the lock is free; write Record if the key is still absent at
	// the observed version.
	Acquire Kind = "Acquire"
	// AlreadyHeld: the requester already holds the lock. Nothing is written and
	// the timestamp is not refreshed (HAMi v2.10 re-entrancy, HAMi #2255, #2570).
	AlreadyHeld Kind = "AlreadyHeld"
	// StealExpired: the lock is older than TTL (or malformed for longer than
	// TTL); overwrite exactly the observed value with Record in one
	// compare-and-swap.
	StealExpired Kind = "StealExpired"
	// StealDangling: the holder pod is gone, replaced or terminal; overwrite
	// exactly the observed value with Record in one compare-and-swap.
	StealDangling Kind = "StealDangling"
	// Refuse: someone else holds the lock. Nothing is written. RequeueAfter
	// says when the answer may change without any other write.
	Refuse Kind = "Refuse"
	// Invalid: the value is malformed (or, on the writer's clock, dated more
	// than TTL in the future). Nothing is written. RequeueAfter says when it
	// becomes stealable (zero with BlockForever).
	Invalid Kind = "Invalid"
	// Release: delete the value under Precondition, in one compare-and-delete.
	Release Kind = "Release"
	// NoOp: a release with nothing to remove (absent, or not the requester's).
	NoOp Kind = "NoOp"
)

// String returns the kind's name.
func (k Kind) String() string { return string(k) }

// Grants reports whether the kind takes the lock by a write (Acquire or a steal).
func (k Kind) Grants() bool { return k == Acquire || k == StealExpired || k == StealDangling }

// Writes reports whether Apply performs a store write for the kind.
func (k Kind) Writes() bool { return k.Grants() || k == Release }

// ReasonCode is the machine-readable cause of a plan. The codes are part of
// the API: match on them, never on Reason.Message.
type ReasonCode string

// Reason codes of acquire and release plans.
const (
	// ReasonUnlocked: Acquire of an absent key.
	ReasonUnlocked ReasonCode = "Unlocked"
	// ReasonSameOwner: AlreadyHeld.
	ReasonSameOwner ReasonCode = "SameOwner"
	// ReasonExpired: StealExpired of a lock older than TTL.
	ReasonExpired ReasonCode = "Expired"
	// ReasonMalformed: Invalid, or StealExpired once the malformed value has
	// been seen unchanged for longer than TTL.
	ReasonMalformed ReasonCode = "Malformed"
	// ReasonFutureTimestamp: like ReasonMalformed, for a writer timestamp more
	// than TTL in the future (writer clock only).
	ReasonFutureTimestamp ReasonCode = "FutureTimestamp"
	// ReasonHolderGone: StealDangling, the holder pod does not exist.
	ReasonHolderGone ReasonCode = "HolderGone"
	// ReasonHolderReplaced: StealDangling, a different pod (another UID) now
	// has the holder's name.
	ReasonHolderReplaced ReasonCode = "HolderReplaced"
	// ReasonHolderTerminal: StealDangling, the holder pod is Succeeded or Failed.
	ReasonHolderTerminal ReasonCode = "HolderTerminal"
	// ReasonHeldByOther: Refuse, another live (or unnamed) owner holds the
	// lock. Counts as contention.
	ReasonHeldByOther ReasonCode = "HeldByOther"
	// ReasonHolderAllocating: Refuse, the lock is expired but its holder is
	// still allocating. Counts as contention.
	ReasonHolderAllocating ReasonCode = "HolderAllocating"
	// ReasonHolderUnknown: Refuse, the holder had to be looked up and its
	// state is unknown. Not contention.
	ReasonHolderUnknown ReasonCode = "HolderUnknown"

	// ReasonOwner: Release by the lock's owner.
	ReasonOwner ReasonCode = "Owner"
	// ReasonLegacyReleasable: Release of an ownerless value under
	// Options.LegacyReleasableByAnyone.
	ReasonLegacyReleasable ReasonCode = "LegacyReleasable"
	// ReasonForced: Release by a forced release (ReleaseInput.Force).
	ReasonForced ReasonCode = "Forced"
	// ReasonNotLocked: NoOp, the key is absent.
	ReasonNotLocked ReasonCode = "NotLocked"
	// ReasonNotOwner: NoOp, the requester does not own the value.
	ReasonNotOwner ReasonCode = "NotOwner"
	// ReasonChangedSinceFirstRead: NoOp, a forced or legacy release re-read
	// the key after a conflict and found another value than its first read:
	// that value belongs to a newer writer, who keeps it.
	ReasonChangedSinceFirstRead ReasonCode = "ChangedSinceFirstRead"
)

// Contention reports whether a Refuse for this code counts as contention
// (wraps ErrContention).
func (c ReasonCode) Contention() bool { return c == ReasonHeldByOther || c == ReasonHolderAllocating }

// Reason says why a plan is what it is: a code to match on and a message for
// people.
type Reason = plancore.Reason[ReasonCode, plancore.NoFacts]

// reasonMessages are the messages of each code.
var reasonMessages = map[ReasonCode]string{
	ReasonUnlocked:         "the lock is free",
	ReasonSameOwner:        "the requester already holds the lock",
	ReasonExpired:          "the lock is older than its TTL",
	ReasonMalformed:        "the lock value cannot be decoded",
	ReasonFutureTimestamp:  "the lock is dated more than its TTL in the future",
	ReasonHolderGone:       "the holder pod does not exist",
	ReasonHolderReplaced:   "a different pod now has the holder's name",
	ReasonHolderTerminal:   "the holder pod has finished",
	ReasonHeldByOther:      "another owner holds the lock",
	ReasonHolderAllocating: "the lock expired but its holder is still allocating",
	ReasonHolderUnknown:    "the holder pod's state is unknown",
	ReasonOwner:            "the requester owns the lock",
	ReasonLegacyReleasable: "the value names no owner and legacy values are releasable by anyone",
	ReasonForced:           "forced release",
	ReasonNotLocked:        "the lock is not held",
	ReasonNotOwner:         "the requester does not own the lock",

	ReasonChangedSinceFirstRead: "the lock changed after the release's first read; the newer value is kept",
}

func reason(c ReasonCode) Reason { return Reason{Code: c, Message: reasonMessages[c]} }

// Plan is the outcome of PlanAcquire or PlanRelease. For the grant kinds the
// caller MUST write exactly Record under exactly Precondition, in one
// compare-and-swap; for Release it MUST delete under exactly Precondition, in
// one compare-and-delete. On a failed precondition it MUST re-read and plan
// again: it never deletes or overwrites a re-read value. For every other kind
// it MUST NOT write. Apply does exactly this.
type Plan struct {
	Kind   Kind
	Reason Reason
	// Key is the lock planned for.
	Key Key
	// Record is, for the grant kinds, the exact record to write; for
	// AlreadyHeld, Refuse and a decodable Invalid, the observed record. Zero
	// for release plans.
	Record Record
	// Precondition is, for the grant kinds and Release, the conditional
	// write's precondition: absent at the observed version (Acquire) or
	// holding the observed raw value at the observed version (steals,
	// Release). Zero otherwise.
	Precondition Precondition
	// RequeueAfter is, for Refuse and Invalid, how long after the input's Now
	// the same inputs (with Now moved on) first give another answer: the
	// expiry, the allocating ceiling, or the end of the malformed grace
	// period. Zero when only another write can change the answer.
	RequeueAfter time.Duration
	// TTL is the timeout the plan used, for messages.
	TTL time.Duration
}

// Err returns the error a caller that gives up on this plan reports:
// contention (wrapping ErrContention, with HAMi's message "node <node> has been
// locked within <TTL>: node lock contention"), ErrHolderUnknown, or ErrInvalid.
// It returns nil for the other kinds.
func (p Plan) Err() error {
	switch p.Kind {
	case Refuse:
		if p.Reason.Code.Contention() {
			if p.Reason.Code == ReasonHolderAllocating {
				return fmt.Errorf("node %s has been locked within %v (holder %s/%s is still allocating): %w",
					p.Key.Node, p.TTL, p.Record.Namespace, p.Record.Name, ErrContention)
			}
			return fmt.Errorf("node %s has been locked within %v: %w", p.Key.Node, p.TTL, ErrContention)
		}
		return fmt.Errorf("%w: node %s lock %s is held by %s/%s", ErrHolderUnknown, p.Key.Node, p.Key.Name, p.Record.Namespace, p.Record.Name)
	case Invalid:
		return fmt.Errorf("%w: node %s lock %s (%s)", ErrInvalid, p.Key.Node, p.Key.Name, p.Reason.Code)
	}
	return nil
}

// String renders the plan on one line, deterministically.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s(%s) %s", p.Kind, p.Reason.Code, p.Key)
	switch {
	case p.Kind.Grants():
		fmt.Fprintf(&b, ": write %s if %s", Encode(p.Record, FormatExtended), p.Precondition)
	case p.Kind == Release:
		fmt.Fprintf(&b, ": delete if %s", p.Precondition)
	case p.Kind == AlreadyHeld:
		fmt.Fprintf(&b, ": held as %s", Encode(p.Record, FormatExtended))
	case p.RequeueAfter > 0:
		fmt.Fprintf(&b, ": requeue after %s", p.RequeueAfter)
	}
	return b.String()
}

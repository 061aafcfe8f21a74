package lock

import (
	"errors"
	"fmt"
)

// ErrContention is returned (wrapped) when a lock is held by someone else and
// the caller could not take it. Its message matches HAMi v2.10's sentinel
// (HAMi #2066), so log searches and errors.Is checks written for HAMi keep working.
var ErrContention = errors.New("node lock contention")

// ErrInvalid is returned (wrapped) for a lock value that cannot be decoded: the
// wrong number of comma-separated parts, a bad timestamp, a bad UID or epoch.
var ErrInvalid = errors.New("lock: malformed lock annotation")

// ErrConflict is returned (wrapped) by a Store when a compare-and-swap or
// compare-and-delete precondition does not hold: the key changed since it was
// observed. The shell re-reads and decides again; it never retries the write
// blindly.
var ErrConflict = errors.New("lock: store precondition failed")

// ErrInvalidInput is wrapped (inside a *plancore.InvalidError that names every
// field path and bad value) by every error about invalid input: an empty node
// or lock name, a requester without namespace or name, a zero Now, an
// exhausted epoch, a record a store cannot write.
var ErrInvalidInput = errors.New("lock: invalid input")

// ErrInvalidOptions is wrapped (inside a *plancore.InvalidError) by every error
// Options.Validate returns: a negative or out-of-range TTL or allocating
// ceiling, an unknown enum value.
var ErrInvalidOptions = errors.New("lock: invalid options")

// ErrNilStore is returned by Apply and by Locker's methods when the store is
// nil. It wraps ErrInvalidInput.
var ErrNilStore = fmt.Errorf("%w: nil Store", ErrInvalidInput)

// ErrHolderUnknown is returned (wrapped) when the holder of a lock had to be
// looked up and the lookup failed for a reason other than "not found". HAMi
// returns the lookup error as is; like HAMi, it is not contention.
var ErrHolderUnknown = errors.New("lock: holder state unknown")

package lock

import "errors"

// ErrContention is returned (wrapped) when a lock is held by someone else and
// the caller could not take it. Its message matches HAMi v2.10's sentinel
// (#2066), so log searches and errors.Is checks written for HAMi keep working.
var ErrContention = errors.New("node lock contention")

// ErrInvalid is returned (wrapped) for a lock value that cannot be decoded: the
// wrong number of comma-separated parts, a bad timestamp, a bad UID or epoch.
var ErrInvalid = errors.New("lock: malformed lock annotation")

// ErrConflict is returned (wrapped) by a Store when a compare-and-swap or
// compare-and-delete precondition does not hold: the key changed since it was
// observed. The shell re-reads and decides again; it never retries the write
// blindly.
var ErrConflict = errors.New("lock: store precondition failed")

// ErrBadInput is returned (wrapped) for invalid arguments: an empty node or lock
// name, a requester without namespace or name, a negative timeout. The message
// names the field and the value.
var ErrBadInput = errors.New("lock: invalid input")

// ErrHolderUnknown is returned (wrapped) when the holder of a lock had to be
// looked up and the lookup failed for a reason other than "not found". HAMi
// returns the lookup error as is; like HAMi, it is not contention.
var ErrHolderUnknown = errors.New("lock: holder state unknown")

package lock

import (
	"context"
	"fmt"

	"github.com/plancore/plancore"
)

// Store keeps lock values and performs the conditional writes decisions ask
// for. Implementations: MemoryStore here, a Redis store in
// github.com/plancore/plancore/adapters/redis, and a Node-annotation store in
// github.com/plancore/plancore/adapters/kube. package fake wraps any Store
// with fault injection.
//
// Every implementation MUST be linearizable per key, and MUST keep, per key,
// an epoch high-water mark that no delete lowers.
type Store interface {
	// Get reads key. An absent key is Present=false with a Version of its own.
	// FirstObservedAt is left zero.
	Get(ctx context.Context, key Key) (Observation, error)
	// CompareAndSwap writes rec if and only if pre holds (key absent at
	// pre.Version, or holding exactly pre.Raw at pre.Version) and rec.Epoch is
	// exactly the key's epoch high-water mark + 1; it then raises the mark to
	// rec.Epoch. Otherwise it writes nothing and returns an error wrapping
	// ErrConflict. Other errors (the network, the server) may or may not have
	// written: the caller re-reads.
	CompareAndSwap(ctx context.Context, key Key, pre Precondition, rec Record) error
	// CompareAndDelete removes the value if and only if it holds exactly
	// pre.Raw at pre.Version, keeping the epoch high-water mark; otherwise it
	// returns an error wrapping ErrConflict.
	CompareAndDelete(ctx context.Context, key Key, pre Precondition) error
}

// Notifier is implemented by stores that can say when a key changes, so a
// waiting acquirer wakes on a release instead of sleeping out its backoff.
type Notifier interface {
	// Changes returns a channel that is closed at the next write to key, or
	// nil (never closed) if the store cannot tell, so waiters fall back to
	// their backoff.
	Changes(key Key) <-chan struct{}
}

// ActionKind is the store write a plan asks for.
type ActionKind string

const (
	// ActionCompareAndSwap writes Plan.Record under Plan.Precondition.
	ActionCompareAndSwap ActionKind = "CompareAndSwap"
	// ActionCompareAndDelete deletes under Plan.Precondition.
	ActionCompareAndDelete ActionKind = "CompareAndDelete"
)

// Result is what one store write of a plan reported.
type Result struct {
	Action ActionKind
	Key    Key
	// Err is the store's error (wrapping ErrConflict on a failed
	// precondition), nil on success.
	Err error
}

// Report lists what Apply did: one Result per write, none for a plan that
// writes nothing (AlreadyHeld, Refuse, Invalid, NoOp).
type Report struct {
	Results []Result
}

// Apply performs a plan's write: one CompareAndSwap of Record under
// Precondition for Acquire and both steals, one CompareAndDelete under
// Precondition for Release, nothing for the other kinds. It never re-plans;
// on an error wrapping ErrConflict the caller re-reads and plans again
// (Locker does). A nil store is an error wrapping ErrNilStore.
func Apply(ctx context.Context, p Plan, s Store) (Report, error) {
	if !p.Kind.Writes() {
		return Report{}, nil
	}
	if plancore.IsNil(s) {
		return Report{}, fmt.Errorf("lock %s: %s: %w", p.Key, p.Kind, ErrNilStore)
	}
	r := Result{Action: ActionCompareAndSwap, Key: p.Key}
	if p.Kind == Release {
		r.Action = ActionCompareAndDelete
		r.Err = s.CompareAndDelete(ctx, p.Key, p.Precondition)
	} else {
		r.Err = s.CompareAndSwap(ctx, p.Key, p.Precondition, p.Record)
	}
	rep := Report{Results: []Result{r}}
	if r.Err != nil {
		return rep, fmt.Errorf("lock %s: %s: %w", p.Key, p.Kind, r.Err)
	}
	return rep, nil
}

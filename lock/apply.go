package lock

import (
	"context"
	"fmt"
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

// Apply performs a decision's write: one CompareAndSwap of Record under
// Precondition for Acquire and both steals, nothing for the other kinds. It
// never re-plans; on an error wrapping ErrConflict the caller re-reads and
// calls Decide again (Locker.Acquire does).
func Apply(ctx context.Context, d Decision, s Store) error {
	if !d.Kind.Grants() {
		return nil
	}
	if err := s.CompareAndSwap(ctx, d.Key, d.Precondition, d.Record); err != nil {
		return fmt.Errorf("lock %s: %s: %w", d.Key, d.Kind, err)
	}
	return nil
}

// ApplyRelease performs a release decision's write: one CompareAndDelete under
// Precondition for Release, nothing for NoOp.
func ApplyRelease(ctx context.Context, d ReleaseDecision, s Store) error {
	if d.Kind != Release {
		return nil
	}
	if err := s.CompareAndDelete(ctx, d.Key, d.Precondition); err != nil {
		return fmt.Errorf("lock %s: release: %w", d.Key, err)
	}
	return nil
}

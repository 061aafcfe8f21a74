package fake

import (
	"context"

	"github.com/plancore/plancore/lock"
)

// Fault kinds of LockStore, for World.Faults.
const (
	// LockGet is the kind of LockStore.Get calls.
	LockGet = "lock.get"
	// LockCAS is the kind of LockStore.CompareAndSwap calls. Fail one with
	// lock.ErrConflict for a spurious conflict; lose its response for a write
	// that took effect but reported an error.
	LockCAS = "lock.cas"
	// LockCAD is the kind of LockStore.CompareAndDelete calls.
	LockCAD = "lock.cad"
)

// LockStore wraps any lock.Store (by default a lock.MemoryStore) with the
// World's fault injection, latency and call log. Every call goes through
// World.Do with the kinds LockGet, LockCAS and LockCAD and the key as target.
type LockStore struct {
	World *World
	Inner lock.Store
}

// NewLockStore returns a LockStore over a fresh lock.MemoryStore.
func NewLockStore(w *World) *LockStore {
	return &LockStore{World: w, Inner: lock.NewMemoryStore()}
}

// Get implements lock.Store.
func (s *LockStore) Get(ctx context.Context, key lock.Key) (lock.Observation, error) {
	var obs lock.Observation
	err := s.World.Do(LockGet, key.String(), func() error {
		var err error
		obs, err = s.Inner.Get(ctx, key)
		return err
	})
	if err != nil {
		return lock.Observation{}, err
	}
	return obs, nil
}

// CompareAndSwap implements lock.Store.
func (s *LockStore) CompareAndSwap(ctx context.Context, key lock.Key, pre lock.Precondition, rec lock.Record) error {
	return s.World.Do(LockCAS, key.String(), func() error { return s.Inner.CompareAndSwap(ctx, key, pre, rec) })
}

// CompareAndDelete implements lock.Store.
func (s *LockStore) CompareAndDelete(ctx context.Context, key lock.Key, pre lock.Precondition) error {
	return s.World.Do(LockCAD, key.String(), func() error { return s.Inner.CompareAndDelete(ctx, key, pre) })
}

// Changes implements lock.Notifier when the inner store does; otherwise it
// returns nil (a channel that never fires), so waiters fall back to backoff.
func (s *LockStore) Changes(key lock.Key) <-chan struct{} {
	if n, ok := s.Inner.(lock.Notifier); ok {
		return n.Changes(key)
	}
	return nil
}

package gpu

import (
	"context"
	"time"

	"github.com/plancore/plancore/lock"
)

// StoreWaiter is the production Waiter: the wall clock, real timers, and the
// lock store's change notification when it is a lock.Notifier (the in-memory
// store's channel, a Node watch, Redis pub/sub).
type StoreWaiter struct {
	// Store is the lock store Bind's executor locks on.
	Store lock.Store
}

// Now implements Waiter with the wall clock.
func (StoreWaiter) Now() time.Time { return time.Now() }

// Changes implements Waiter through lock.Notifier; nil when Store is not one.
func (w StoreWaiter) Changes(node, lockName string) <-chan struct{} {
	if n, ok := w.Store.(lock.Notifier); ok {
		return n.Changes(lock.Key{Name: lockName, Node: node})
	}
	return nil
}

// Sleep implements Waiter with a real timer.
func (StoreWaiter) Sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) (bool, error) {
	if d <= 0 {
		return false, ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false, nil
	case <-wake:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

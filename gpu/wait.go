package gpu

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	"github.com/plancore/plancore/lock"
)

// StoreWaiter is the production Waiter: a clock (the real one unless Clock is
// set), its timers, and the lock store's change notification when it is a
// lock.Notifier (the in-memory store's channel, a Node watch, Redis pub/sub).
// Its zero value is usable: the real clock, and polling without a store.
type StoreWaiter struct {
	// Store is the lock store Bind's executor locks on.
	Store lock.Store
	// Clock reads the time and runs the timers; nil means the real clock.
	// Tests pass a fake.Clock.
	Clock clock.Clock
}

func (w StoreWaiter) clock() clock.Clock {
	if w.Clock != nil {
		return w.Clock
	}
	return clock.RealClock{}
}

// Now implements Waiter with the clock.
func (w StoreWaiter) Now() time.Time { return w.clock().Now() }

// Changes implements Waiter through lock.Notifier; nil when Store is not one.
func (w StoreWaiter) Changes(node, lockName string) <-chan struct{} {
	if n, ok := w.Store.(lock.Notifier); ok {
		return n.Changes(lock.Key{Name: lockName, Node: node})
	}
	return nil
}

// Sleep implements Waiter with a timer of the clock.
func (w StoreWaiter) Sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) (bool, error) {
	if d <= 0 {
		return false, ctx.Err()
	}
	t := w.clock().NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return false, nil
	case <-wake:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

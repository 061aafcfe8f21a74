package fake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/plancore/plancore/lock"
)

// CheckLockStore runs the lock.Store contract against a store built by
// newStore (called once per clause; each store must be empty, sharing no
// state with the ones before it) and returns every violation
// it finds, in the style of testing/fstest.TestFS. It checks absent reads,
// acquire-if-absent, compare-and-swap on the observed value only, the epoch
// rule (exactly high-water + 1), compare-and-delete of the observed value
// only, that a release keeps the high-water mark, that each written record
// reads back whole (decoded as lock.PlanAcquire does, from the value and a
// matching sidecar, see lock.Observation.Record), and, for a lock.Notifier, that
// Changes fires on a write to its key and not on another key's.
func CheckLockStore(ctx context.Context, newStore func() lock.Store) []Violation {
	return runChecks(ctx, lockChecks, func(ctx context.Context) (*lockStoreCheck, error) {
		return &lockStoreCheck{ctx: ctx, s: newStore(), key: lock.NodeKey("conformance-a"), other: lock.NodeKey("conformance-b")}, nil
	})
}

// lockChecks are the suite's clauses; each builds on a fresh store the
// state it needs (a held lock, a stolen one) with the phases before it.
var lockChecks = []check[*lockStoreCheck]{
	{"acquire if absent, epoch high-water + 1, read back", func(_ context.Context, c *lockStoreCheck) []string {
		c.acquire()
		return c.out
	}},
	{"changes fires on a write to its key only", func(_ context.Context, c *lockStoreCheck) []string {
		n, ok := c.s.(lock.Notifier)
		if !ok {
			return nil // not a Notifier: nothing to check
		}
		changed, otherChanged := n.Changes(c.key), n.Changes(c.other)
		c.acquire()
		c.notified(changed, otherChanged)
		return c.out
	}},
	{"steal is one compare-and-swap of the observed value", func(_ context.Context, c *lockStoreCheck) []string {
		c.steal(c.acquire())
		return c.out
	}},
	{"release is one compare-and-delete and keeps the epoch", func(_ context.Context, c *lockStoreCheck) []string {
		held := c.acquire()
		c.release(held, c.steal(held))
		return c.out
	}},
	{"keys are independent", func(ctx context.Context, c *lockStoreCheck) []string {
		held := c.acquire()
		c.release(held, c.steal(held))
		if o, err := c.s.Get(ctx, c.other); err != nil || o.Present || o.EpochHigh != 0 {
			c.fail("keys are independent", "Get(other) = %+v, %v", o, err)
		}
		return c.out
	}},
}

// lockStoreCheck is one run of CheckLockStore; each phase is a method.
type lockStoreCheck struct {
	ctx        context.Context
	s          lock.Store
	key, other lock.Key
	// out is what the phases found wrong, each prefixed with the clause it
	// breaks.
	out []string
}

func (c *lockStoreCheck) fail(check, format string, args ...any) {
	c.out = append(c.out, check+": "+fmt.Sprintf(format, args...))
}

func (c *lockStoreCheck) rec(name string, epoch uint64) lock.Record {
	t0 := time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)
	return lock.Record{Time: t0, Namespace: "default", Name: name, UID: name + "-uid", Epoch: epoch}
}

func (c *lockStoreCheck) get(check string) lock.Observation {
	obs, err := c.s.Get(c.ctx, c.key)
	if err != nil {
		c.fail(check, "Get: %v", err)
	}
	return obs
}

// mustConflict records a violation unless err wraps lock.ErrConflict; what
// names the write that had to fail.
func (c *lockStoreCheck) mustConflict(check, what string, err error) {
	if err == nil {
		c.fail(check, "%s succeeded", what)
		return
	}
	if !errors.Is(err, lock.ErrConflict) {
		c.fail(check, "got %v, want an error wrapping lock.ErrConflict", err)
	}
}

// lockPre is the precondition matching what obs saw.
func lockPre(obs lock.Observation) lock.Precondition {
	return lock.Precondition{Present: obs.Present, Raw: obs.Raw, Version: obs.Version}
}

// acquire checks acquire-if-absent, the epoch rule and the read-back.
func (c *lockStoreCheck) acquire() lock.Observation {
	empty := c.get("empty store")
	if empty.Present || empty.EpochHigh != 0 || empty.Key != c.key {
		c.fail("empty store", "Get = %+v, want absent with EpochHigh 0", empty)
	}
	if err := c.s.CompareAndSwap(c.ctx, c.key, lockPre(empty), c.rec("a", 2)); !errors.Is(err, lock.ErrConflict) {
		c.fail("epoch must be high-water + 1", "acquire with epoch 2 over high-water 0: %v", err)
	}
	if err := c.s.CompareAndSwap(c.ctx, c.key, lockPre(empty), c.rec("a", 1)); err != nil {
		c.fail("acquire if absent", "%v", err)
	}
	c.mustConflict("acquire if absent", "a second acquire under the same absent precondition",
		c.s.CompareAndSwap(c.ctx, c.key, lockPre(empty), c.rec("b", 2)))
	held := c.get("read back")
	if r, f, err := held.Record(); !held.Present || err != nil || !r.Equal(c.rec("a", 1)) {
		c.fail("read back", "Get = %+v (decoded %+v %v %v), want the record written", held, r, f, err)
	}
	if held.EpochHigh != 1 {
		c.fail("read back", "EpochHigh = %d, want 1", held.EpochHigh)
	}
	return held
}

// notified checks that Changes fires on a write to its key only.
func (c *lockStoreCheck) notified(changed, otherChanged <-chan struct{}) {
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		c.fail("changes", "Changes(key) did not fire within 5s of a write")
	}
	select {
	case <-otherChanged:
		c.fail("changes", "Changes(other key) fired on a write to key")
	default:
	}
}

// steal checks that a steal is one CAS of the observed value.
func (c *lockStoreCheck) steal(held lock.Observation) lock.Observation {
	if err := c.s.CompareAndSwap(c.ctx, c.key, lockPre(held), c.rec("b", 3)); !errors.Is(err, lock.ErrConflict) {
		c.fail("epoch must be high-water + 1", "steal with epoch 3 over high-water 1: %v", err)
	}
	if err := c.s.CompareAndSwap(c.ctx, c.key, lockPre(held), c.rec("b", 2)); err != nil {
		c.fail("steal the observed value", "%v", err)
	}
	stolen := c.get("steal the observed value")
	if r, f, err := stolen.Record(); !stolen.Present || err != nil || !r.Equal(c.rec("b", 2)) || stolen.EpochHigh != 2 {
		c.fail("read back", "Get after the steal = %+v (decoded %+v %v %v), want the thief's record with EpochHigh 2", stolen, r, f, err)
	}
	c.mustConflict("steal the observed value", "a second steal of the replaced value",
		c.s.CompareAndSwap(c.ctx, c.key, lockPre(held), c.rec("c", 3)))
	return stolen
}

// release checks compare-and-delete of the observed value only, and that a
// release keeps the epoch high-water mark.
func (c *lockStoreCheck) release(held, stolen lock.Observation) {
	c.mustConflict("delete the observed value", "deleting a replaced value", c.s.CompareAndDelete(c.ctx, c.key, lockPre(held)))
	if err := c.s.CompareAndDelete(c.ctx, c.key, lockPre(stolen)); err != nil {
		c.fail("delete the observed value", "%v", err)
	}
	free := c.get("release keeps the epoch")
	if free.Present || free.EpochHigh != 2 {
		c.fail("release keeps the epoch", "Get after release = %+v, want absent with EpochHigh 2", free)
	}
	c.mustConflict("delete the observed value", "a second delete", c.s.CompareAndDelete(c.ctx, c.key, lockPre(stolen)))
	if err := c.s.CompareAndSwap(c.ctx, c.key, lockPre(free), c.rec("c", 2)); !errors.Is(err, lock.ErrConflict) {
		c.fail("epoch must be high-water + 1", "re-acquire reusing epoch 2: %v", err)
	}
	if err := c.s.CompareAndSwap(c.ctx, c.key, lockPre(free), c.rec("c", 3)); err != nil {
		c.fail("acquire after release", "%v", err)
	}
}

package fake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/plancore/plancore/lock"
)

// CheckLockStore runs the lock.Store contract against a store built by
// newStore (called once; the store must be empty) and returns every violation
// it finds, in the style of testing/fstest.TestFS. It checks absent reads,
// acquire-if-absent, compare-and-swap on the observed value only, the epoch
// rule (exactly high-water + 1), compare-and-delete of the observed value
// only, that a release keeps the high-water mark, that each written record
// reads back whole (decoded as lock.Decide does, from the value and a
// matching sidecar, see lock.Observation.Record), and, for a lock.Notifier, that
// Changes fires on a write to its key and not on another key's.
func CheckLockStore(ctx context.Context, newStore func() lock.Store) []Violation {
	var out []Violation
	fail := func(check, format string, args ...any) {
		out = append(out, Violation{Check: check, Detail: fmt.Sprintf(format, args...)})
	}
	s := newStore()
	key, other := lock.NodeKey("conformance-a"), lock.NodeKey("conformance-b")
	t0 := time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)
	rec := func(name string, epoch uint64) lock.Record {
		return lock.Record{Time: t0, Namespace: "default", Name: name, UID: name + "-uid", Epoch: epoch}
	}
	get := func(check string) lock.Observation {
		obs, err := s.Get(ctx, key)
		if err != nil {
			fail(check, "Get: %v", err)
		}
		return obs
	}
	conflict := func(check string, err error) {
		if !errors.Is(err, lock.ErrConflict) {
			fail(check, "got %v, want an error wrapping lock.ErrConflict", err)
		}
	}
	pre := func(obs lock.Observation) lock.Precondition {
		return lock.Precondition{Present: obs.Present, Raw: obs.Raw, Version: obs.Version}
	}

	var changed <-chan struct{}
	var otherChanged <-chan struct{}
	n, notifier := s.(lock.Notifier)
	if notifier {
		changed, otherChanged = n.Changes(key), n.Changes(other)
	}

	empty := get("empty store")
	if empty.Present || empty.EpochHigh != 0 || empty.Key != key {
		fail("empty store", "Get = %+v, want absent with EpochHigh 0", empty)
	}
	if err := s.CompareAndSwap(ctx, key, pre(empty), rec("a", 2)); !errors.Is(err, lock.ErrConflict) {
		fail("epoch must be high-water + 1", "acquire with epoch 2 over high-water 0: %v", err)
	}
	if err := s.CompareAndSwap(ctx, key, pre(empty), rec("a", 1)); err != nil {
		fail("acquire if absent", "%v", err)
	}
	if err := s.CompareAndSwap(ctx, key, pre(empty), rec("b", 2)); err == nil {
		fail("acquire if absent", "a second acquire under the same absent precondition succeeded")
	} else {
		conflict("acquire if absent", err)
	}
	held := get("read back")
	if r, f, err := held.Record(); !held.Present || err != nil || !r.Equal(rec("a", 1)) {
		fail("read back", "Get = %+v (decoded %+v %v %v), want the record written", held, r, f, err)
	}
	if held.EpochHigh != 1 {
		fail("read back", "EpochHigh = %d, want 1", held.EpochHigh)
	}
	if notifier {
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			fail("changes", "Changes(key) did not fire within 5s of a write")
		}
		select {
		case <-otherChanged:
			fail("changes", "Changes(other key) fired on a write to key")
		default:
		}
	}
	// Steal: one CAS of the observed value.
	if err := s.CompareAndSwap(ctx, key, pre(held), rec("b", 3)); !errors.Is(err, lock.ErrConflict) {
		fail("epoch must be high-water + 1", "steal with epoch 3 over high-water 1: %v", err)
	}
	if err := s.CompareAndSwap(ctx, key, pre(held), rec("b", 2)); err != nil {
		fail("steal the observed value", "%v", err)
	}
	stolen := get("steal the observed value")
	if r, f, err := stolen.Record(); !stolen.Present || err != nil || !r.Equal(rec("b", 2)) || stolen.EpochHigh != 2 {
		fail("read back", "Get after the steal = %+v (decoded %+v %v %v), want the thief's record with EpochHigh 2", stolen, r, f, err)
	}
	if err := s.CompareAndSwap(ctx, key, pre(held), rec("c", 3)); err == nil {
		fail("steal the observed value", "a second steal of the replaced value succeeded")
	} else {
		conflict("steal the observed value", err)
	}
	// Release: compare-and-delete of the observed value only.
	if err := s.CompareAndDelete(ctx, key, pre(held)); err == nil {
		fail("delete the observed value", "deleting a replaced value succeeded")
	} else {
		conflict("delete the observed value", err)
	}
	if err := s.CompareAndDelete(ctx, key, pre(stolen)); err != nil {
		fail("delete the observed value", "%v", err)
	}
	free := get("release keeps the epoch")
	if free.Present || free.EpochHigh != 2 {
		fail("release keeps the epoch", "Get after release = %+v, want absent with EpochHigh 2", free)
	}
	if err := s.CompareAndDelete(ctx, key, pre(stolen)); err == nil {
		fail("delete the observed value", "a second delete succeeded")
	} else {
		conflict("delete the observed value", err)
	}
	if err := s.CompareAndSwap(ctx, key, pre(free), rec("c", 2)); !errors.Is(err, lock.ErrConflict) {
		fail("epoch must be high-water + 1", "re-acquire reusing epoch 2: %v", err)
	}
	if err := s.CompareAndSwap(ctx, key, pre(free), rec("c", 3)); err != nil {
		fail("acquire after release", "%v", err)
	}
	if o, err := s.Get(ctx, other); err != nil || o.Present || o.EpochHigh != 0 {
		fail("keys are independent", "Get(other) = %+v, %v", o, err)
	}
	return out
}

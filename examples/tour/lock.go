package main

import (
	"context"
	"fmt"
	"time"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/lock"
)

func init() {
	register(5, "lock", "a per-node lock that survives crashed holders (HAMi's node lock)", runLock)
}

func runLock(w *page) error {
	ctx := context.Background()
	world := fake.NewWorld(5, time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC))
	store := fake.NewLockStore(world)
	pods := map[string]bool{"a": true, "b": true} // which holder pods exist
	lookup := func(_ context.Context, _ lock.Key, rec lock.Record) lock.Holder {
		if pods[rec.Name] {
			return lock.Holder{State: lock.HolderExists}
		}
		return lock.Holder{State: lock.HolderNotFound}
	}
	l := &lock.Locker{Store: store, Clock: world.Clock, Holder: lookup}
	key := lock.NodeKey("gpu-node-1")
	a := lock.Requester{Namespace: "default", Name: "a", UID: "uid-a"}
	b := lock.Requester{Namespace: "default", Name: "b", UID: "uid-b"}

	w.term("Bind", "device plugin", "epoch")
	fmt.Fprintln(w, "HAMi, a GPU-sharing scheduler, locks a node with an annotation while it binds a")
	fmt.Fprintln(w, "pod there; the lock stays until the device plugin releases it. Pods a and b race:")
	w.calls(`l := &lock.Locker{Store: store, Clock: world.Clock, Holder: lookup}
g, err := l.Acquire(ctx, key, a)`)
	g, err := l.Acquire(ctx, key, a)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  a: %s, epoch %d\n", g.Plan.Kind, g.Record().Epoch)
	g, err = l.Acquire(ctx, key, a)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  a again (next vendor): %s, nothing written\n", g.Plan.Kind)
	_, err = l.Acquire(ctx, key, b)
	fmt.Fprintf(w, "  b: %v\n", err)

	w.term("CAS")
	fmt.Fprintln(w, "Pod a is deleted before the device plugin runs: its lock dangles, and b takes it")
	fmt.Fprintln(w, "over in one CAS; a's late release finds b's lock and leaves it:")
	w.calls(`if g, err = l.Acquire(ctx, key, b); err != nil {
if d, err := l.Release(ctx, key, a); err == nil {`)
	delete(pods, "a")
	if g, err = l.Acquire(ctx, key, b); err != nil {
		return err
	}
	fmt.Fprintf(w, "  b: %s(%s), epoch %d\n", g.Plan.Kind, g.Plan.Reason, g.Record().Epoch)
	if d, err := l.Release(ctx, key, a); err == nil {
		fmt.Fprintf(w, "  a's late release: %s(%s): b keeps the lock\n", d.Kind, d.Reason)
	}

	w.term("TTL")
	fmt.Fprintln(w, "A malformed lock value blocks HAMi forever; plancore takes it once it has sat")
	fmt.Fprintln(w, "unchanged for the TTL:")
	w.calls(`world.Clock.Advance(lock.DefaultTTL + time.Second)`)
	mem := lock.NewMemoryStore()
	if err := mem.Put(key, "lock"); err != nil {
		return err
	}
	ml := &lock.Locker{Store: mem, Clock: world.Clock}
	_, err = ml.Acquire(ctx, key, a)
	fmt.Fprintf(w, "  now: %v\n", err)
	world.Clock.Advance(lock.DefaultTTL + time.Second)
	if g, err = ml.Acquire(ctx, key, a); err != nil {
		return err
	}
	fmt.Fprintf(w, "  after 5m1s: %s(%s)\n", g.Plan.Kind, g.Plan.Reason)

	return nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/fake/sim"
	"github.com/plancore/plancore/lock"
)

func init() { register(5, "lock: HAMi's node lock, made safe", runLock) }

func runLock(w io.Writer) error {
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

	fmt.Fprintln(w, "Bind locks the node; the lock stays until the device plugin's Allocate releases it.")
	g, err := l.Acquire(ctx, key, a)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  a: %s, epoch %d (the fencing token for Allocate)\n", g.Plan.Kind, g.Record().Epoch)
	g, err = l.Acquire(ctx, key, a)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  a again (next vendor): %s, nothing written\n", g.Plan.Kind)
	_, err = l.Acquire(ctx, key, b)
	fmt.Fprintf(w, "  b: %v\n", err)

	fmt.Fprintln(w, "Pod a is deleted before Allocate: its lock dangles, and b takes it over in one compare-and-swap.")
	delete(pods, "a")
	if g, err = l.Acquire(ctx, key, b); err != nil {
		return err
	}
	fmt.Fprintf(w, "  b: %s(%s), epoch %d\n", g.Plan.Kind, g.Plan.Reason, g.Record().Epoch)
	if d, err := l.Release(ctx, key, a); err == nil {
		fmt.Fprintf(w, "  a's late release: %s(%s): b keeps the lock\n", d.Kind, d.Reason)
	}

	fmt.Fprintln(w, "A malformed value blocks HAMi forever; plancore steals it once it has sat unchanged for the TTL.")
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

	fmt.Fprintln(w, "HAMi steals by deleting a re-read value, so two stealers can both win. Race simulation of")
	fmt.Fprintln(w, "plancore's CAS steal (skewed clocks, deaths, lost responses, spurious conflicts):")
	var sum sim.LockRaceReport
	violations := 0
	for seed := range uint64(50) {
		race := sim.LockRace{Store: lock.NewMemoryStore(), Processes: 4, Nodes: 1, Steps: 150, Faults: true}
		rep, err := race.Run(sim.RandChooser{R: rand.New(rand.NewPCG(seed, 5))})
		if err != nil {
			violations++
		}
		sum.Grants += rep.Grants
		sum.Steals += rep.Steals
		sum.Deaths += rep.Deaths
		sum.LostResponses += rep.LostResponses
	}
	fmt.Fprintf(w, "  50 schedules: %d grants, %d steals, %d deaths, %d lost responses, %d double holders\n",
		sum.Grants, sum.Steals, sum.Deaths, sum.LostResponses, violations)
	if violations != 0 {
		return fmt.Errorf("lock race simulation found %d violations", violations)
	}
	return nil
}

package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/plancore/plancore/fake/sim"
	"github.com/plancore/plancore/lock"
	"pgregory.net/rapid"
)

// genOptions draws the lock options the race property covers. Identity stays
// UIDThenName: under the NameOnly compat option a re-created pod with the
// holder's name inherits its lock (HAMi's behaviour, kept on purpose), so the
// harness, which re-creates pods, rightly finds two holders there.
func genOptions(t *rapid.T) lock.Options {
	return lock.Options{
		TTL:                       time.Minute,
		ExpiryClock:               rapid.SampledFrom([]lock.ExpiryClock{lock.WriterClock, lock.ObservationClock}).Draw(t, "clock"),
		StealFromAllocatingHolder: rapid.Bool().Draw(t, "stealFromAllocating"),
		TerminalHolderAlive:       rapid.Bool().Draw(t, "terminalAlive"),
	}
}

// TestPropertyMutualExclusion checks mutual exclusion, rising epochs and
// fencing under concurrency: many processes with skewed clocks acquire, steal and release
// through lock.Locker against the in-memory store, with holder deaths,
// re-created pods, spurious conflicts and lost responses. No two ever believe
// they hold the same node's lock, epochs strictly increase per node, and a
// fenced resource never sees a believer's epoch go backwards.
func TestPropertyMutualExclusion(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		race := sim.LockRace{
			Store:     lock.NewMemoryStore(),
			Options:   genOptions(t),
			Processes: rapid.IntRange(3, 5).Draw(t, "processes"),
			Nodes:     rapid.IntRange(1, 2).Draw(t, "nodes"),
			Steps:     150,
			Faults:    rapid.Bool().Draw(t, "faults"),
		}
		// The schedule comes from a seeded generator, not from rapid's draws:
		// rapid favours small numbers, which starves the interleavings that
		// matter (a rapid-drawn schedule never found the HAMi-like double
		// holder in 10,000 checks; seeded ones find it in about 1% of runs).
		// A failure prints the seed and the run's transcript.
		seed := rapid.Uint64().Draw(t, "seed")
		if _, err := race.Run(sim.RandChooser{R: rand.New(rand.NewPCG(seed, 99))}); err != nil {
			t.Fatal(err)
		}
	})
}

// hamiClient decides exactly as plancore does (lock.PlanAcquire, same holder
// lookups, same options) but steals as HAMi v2.10's LockNode does: it
// releases with the owner check skipped, which re-reads the value and deletes
// whatever it finds (conditioned only on that re-read), and then sets the lock
// if absent. The steal is the only difference from lock.Locker, so any
// violation it shows is the double-holder race of that steal. It exists to
// show that the race harness catches that race; it is not part of the library.
type hamiClient struct {
	env  sim.LockRaceEnv
	opts lock.Options
	rel  *lock.Locker
}

func newHAMiClient(env sim.LockRaceEnv, opts lock.Options) sim.LockClient {
	return &hamiClient{env: env, opts: opts, rel: &lock.Locker{Store: env.Store, Options: opts, Clock: env.Clock}}
}

func (c *hamiClient) Release(ctx context.Context, key lock.Key, req lock.Requester) (lock.Plan, error) {
	return c.rel.Release(ctx, key, req)
}

func (c *hamiClient) Acquire(ctx context.Context, key lock.Key, req lock.Requester) (lock.Grant, error) {
	obs, err := c.env.Store.Get(ctx, key)
	if err != nil {
		return lock.Grant{}, err
	}
	now := c.env.Clock.Now()
	obs.FirstObservedAt = now
	d, err := decide(obs, req, now, c.opts, lock.Holder{})
	if err != nil {
		return lock.Grant{}, err
	}
	if d.Kind == lock.Refuse && d.Reason.Code == lock.ReasonHolderUnknown {
		if d, err = decide(obs, req, now, c.opts, c.env.Holder(ctx, key, d.Record)); err != nil {
			return lock.Grant{}, err
		}
	}
	switch d.Kind {
	case lock.AlreadyHeld:
		return lock.Grant{Plan: d}, nil
	case lock.Acquire:
		return c.set(ctx, key, req)
	case lock.StealExpired, lock.StealDangling:
		// ReleaseNodeLock(..., skipOwnerCheck=true): re-Get, delete what is there.
		again, err := c.env.Store.Get(ctx, key)
		if err != nil {
			return lock.Grant{}, err
		}
		if again.Present {
			pre := lock.Precondition{Present: true, Raw: again.Raw, Version: again.Version}
			if err := c.env.Store.CompareAndDelete(ctx, key, pre); err != nil {
				return lock.Grant{}, err
			}
		}
		return c.set(ctx, key, req)
	}
	return lock.Grant{}, d.Err()
}

// set is SetNodeLock: re-Get; present means contention; else patch with the
// resourceVersion of that Get.
func (c *hamiClient) set(ctx context.Context, key lock.Key, req lock.Requester) (lock.Grant, error) {
	obs, err := c.env.Store.Get(ctx, key)
	if err != nil {
		return lock.Grant{}, err
	}
	if obs.Present {
		return lock.Grant{}, lock.ErrContention
	}
	rec := lock.Record{Time: c.env.Clock.Now().UTC().Truncate(time.Second), Namespace: req.Namespace, Name: req.Name, UID: req.UID, Epoch: obs.EpochHigh + 1}
	if err := c.env.Store.CompareAndSwap(ctx, key, lock.Precondition{Version: obs.Version}, rec); err != nil {
		return lock.Grant{}, err
	}
	return lock.Grant{Plan: lock.Plan{Kind: lock.Acquire, Key: key, Record: rec}}, nil
}

// raceSeeds is how many seeded runs the double-holder demonstration makes per client.
const raceSeeds = 600

// TestHAMiLikeStealAllowsDoubleHolders is the demonstration: the same
// seeded schedules that never break plancore's CAS steal find two holders of
// one lock under HAMi's release-then-set steal.
func TestHAMiLikeStealAllowsDoubleHolders(t *testing.T) {
	count := func(newClient func(sim.LockRaceEnv, lock.Options) sim.LockClient) (int, error) {
		failures := 0
		var first error
		for seed := range uint64(raceSeeds) {
			race := sim.LockRace{Store: lock.NewMemoryStore(), NewClient: newClient, Processes: 4, Nodes: 1, Steps: 150,
				Options: lock.Options{TTL: time.Minute}}
			_, err := race.Run(sim.RandChooser{R: rand.New(rand.NewPCG(seed, 99))})
			if err != nil {
				if !errors.Is(err, sim.ErrLockRaceViolation) {
					return 0, fmt.Errorf("seed %d: %w", seed, err)
				}
				failures++
				if first == nil {
					first = err
				}
			}
		}
		return failures, first
	}
	hami, firstHAMi := count(newHAMiClient)
	plancore, firstPlancore := count(nil)
	t.Logf("double-holder/fencing violations in %d seeded runs: HAMi-like re-read-then-delete steal %d, plancore CAS steal %d", raceSeeds, hami, plancore)
	t.Logf("first HAMi-like failure:\n%v", firstHAMi)
	if plancore != 0 {
		t.Errorf("plancore's CAS steal broke an invariant:\n%v", firstPlancore)
	}
	if hami == 0 {
		t.Fatal("the HAMi-like steal never produced two holders: the harness cannot see the double-holder race")
	}
	if !strings.Contains(firstHAMi.Error(), "both believe they hold") && !strings.Contains(firstHAMi.Error(), "resource has seen") {
		t.Errorf("the HAMi-like failure is not a double holder:\n%v", firstHAMi)
	}
}

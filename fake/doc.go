// Package fake is plancore's in-memory world: a settable clock, a call recorder,
// seeded fault injection, and in-memory implementations of every core's executor,
// so controllers built on plancore can be tested deterministically without a
// cluster, a Redis server or real time.
//
// # Usage
//
// Build one World per test and hand its parts to the fakes you need:
//
//	w := fake.NewWorld(42, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
//	w.Faults.FailNext("pod.create", 2, errors.New("apiserver unavailable"))
//	w.Faults.LoseResponseNext("pod.delete", 1, errors.New("timeout"))
//	w.Faults.SetLatency("pod.create", 30*time.Millisecond)
//
// Every executor call in this package goes through [World.Do], which applies the
// injected faults for its kind, advances the simulated clock by the configured
// latency, performs the write, and records the call in [World.Calls].
//
// The main fakes are [Clock] (a k8s.io/utils/clock.Clock that moves only
// when told), [World] with its [Faults] and call log, [PodStore] with its
// lagging [Informer] and the executors over it ([ReconcileExecutor],
// [RayClusterLoop], [GPUBind]), a [Kubelet] that starts and finishes its
// pods, a [PodObserver] that feeds the informer's events to an
// expectations tracker and enqueues the owner, the capacity core's
// [NodeAgent], and
// [LockStore]; the examples show the clock, the world, the informer, the
// node agent and the lock store at work. The project's own race and
// simulation harnesses (LockRace, CapacitySim, RunCapacityRace, RunBurst)
// live in package github.com/plancore/plancore/fake/sim.
//
// # Determinism
//
// Nothing here reads the wall clock or a global random source. Time is the
// [Clock]'s; randomness (probabilistic faults, informer lag) comes from the seed
// given to [NewWorld]. The same seed and the same sequence of calls produce the
// same outcomes.
//
// # Conformance
//
// Each fake executor comes with a conformance check in the style of
// testing/fstest.TestFS: a function that takes a constructor for any
// implementation of the executor interface and returns every contract violation
// it finds, so the real adapters can be held to the same contract as the fakes.
package fake

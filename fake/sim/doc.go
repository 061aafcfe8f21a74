// Package sim holds plancore's own race and simulation harnesses, built on
// the fakes of package fake: they drive many processes against one store or
// world and check the invariants the project's property tests assert.
//
//   - LockRace interleaves Lockers over one lock.Store, step by step under a
//     Chooser (rapid or a seeded generator), and checks mutual exclusion and
//     fencing; the Redis and Kubernetes lock stores run it too.
//   - CapacitySim runs schedulers and fake.NodeAgents against any
//     capacity.SlotStore (StoreFactory), step by step under a Picker, and
//     checks that no node is oversold and that a drained system is exact;
//     Replay, RunDraws and KnownBadCounterExamples replay recorded runs, and
//     SeededPicker and SeedRuns derive a run from one seed.
//   - RunCapacityRace records a concurrent history of store calls for
//     capacity.CheckLinearizable; RaceReserves races reserves on one node.
//   - RunBurst simulates a burst of GPU pods binding on one node through
//     fake.GPUBind, for the gpu core's latency target and HAMi's modes.
//
// They are exported so that the adapters' tests (a real Redis, a real API
// server) run the same harnesses as the in-memory stores; a user testing a
// controller needs package fake, not this one.
package sim

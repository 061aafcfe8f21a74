// Package gpu is plancore's core for GPU scheduling in the style of HAMi's
// scheduler extender: a registry of device types, request detection from a pod,
// Filter-phase device fitting and node choice, and the Bind flow over per-node
// locks (package lock).
//
// # Usage
//
// Detect what a pod asks for and which node locks binding it needs:
//
//	reg := gpu.DefaultRegistry()               // HAMi's vendor table; extend with reg.With(...)
//	reqs, err := gpu.DetectRequests(pod, reg)  // init and app containers
//	locks, err := gpu.RequiredLocks(pod, reg)  // de-duplicated, ascending
//
// Fit the pod onto candidate nodes (Filter), one decision per snapshot of the
// nodes' usage:
//
//	fr, err := gpu.FitRequestFromPod(pod, reg) // requests plus policy and selector annotations
//	devs, err := gpu.AddUsage(node.Devices, allocs...) // usage from the pods already there
//	plan, err := gpu.Decide(gpu.Input{Nodes: nodes, Request: fr}, gpu.HAMi())
//	// plan.Node, plan.Containers, plan.Reason (NodeChosen or NoNodeFits), per-node reasons
//	anno := gpu.EncodeAllocations(plan.Containers, "NVIDIA") // hami.io/vgpu-devices-to-allocate
//
// Bind it (Bind). Bind is a step machine rather than a Plan applied by one
// Apply, because each step depends on what the cluster answered to the
// previous one: StartBind, then Next for the one action to perform (GetPod,
// GetNode, Lock, Release, Wait, PatchPod, Bind, Event, ForgetAssumed, each
// with a Reason) and StepBind with its Result, until Done. ApplyBind drives
// it against a BindExecutor and a Waiter:
//
//	out, err := gpu.ApplyBind(ctx, gpu.BindInput{Pod: ref, Node: node, Registry: reg, Options: gpu.HAMi()}, exec, gpu.StoreWaiter{Store: store})
//
// StoreWaiter's Clock (a k8s.io/utils/clock Clock) is nil for the real clock;
// tests pass a fake.Clock.
//
// Invalid input is refused with every problem at once: Decide, StartBind,
// Options.Validate, AddUsage, NewRegistry and Registry.With, DetectRequests,
// RequiredLocks, FitRequestFromPod, DecodeAllocations and ParseLockEpochs
// return a *plancore.InvalidError naming each field path and bad value
// (nodes[1].devices[0].id, request.requests[0].nums, now,
// options.retryDeadline, allocs[2].memoryMiB, types[2].type,
// spec.initContainers[0].resources.limits[nvidia.com/gpu],
// metadata.annotations[hami.io/node-scheduler-policy],
// containers[1].devices[0].cores) and wrapping ErrInvalidInput (through a
// finer sentinel such as ErrInvalidRequest) or ErrInvalidOptions. A nil
// executor is ErrNilExecutor, never a panic.
//
// A Binder adds a per-node NodeQueue so a burst for one node is served in
// order. The contract of the plan: locks are taken in ascending name order;
// only lock.ErrContention is retried, after releasing the partial locks in
// reverse, with a backoff of min(1 s, 100 ms·2ⁿ·(1+0.5u)) woken by the lock's
// change notification and cut at the 28 s deadline; any other failure after
// the pod is known writes hami.io/bind-phase=failed first, releases exactly the
// locks taken (and the one whose Lock failed ambiguously) in reverse order,
// records an event, drops the assumed allocation and returns the original
// error. A successful Bind keeps its locks for the device plugin and writes the
// fencing epochs to plancore.io/lock-epoch; VerifyFence lets the allocator
// check them.
//
// # Determinism
//
// Everything but ApplyBind's waiting (StoreWaiter, wait.go) and NodeQueue is pure: no
// clock, no randomness, no IO, no goroutines, and no input is modified. Ties
// are broken explicitly (device index, then ID; node name), reasons are sorted
// by their rendering, map keys are sorted before they reach any output. Time
// enters the Bind state machine as BindInput.Now and Result.Now; the retry
// jitter is derived from BindInput.Seed and the pod UID, so the same inputs give
// the same actions, byte for byte in their String().
//
// # Compatibility
//
// The anchor is HAMi v2.10; HAMi() is the preset of its Bind retry. Device
// names, resource names, annotations, device reason codes and scores follow
// it. Where plancore deliberately differs, the code says so next to the
// difference:
//
//   - init-container requests count (HAMi skips them, HAMi #2640);
//   - malformed quantities and policy annotations are errors naming each
//     by its path in the pod, all at once, not silently empty requests or
//     defaults;
//   - lock names are taken in ascending order, each once (HAMi #2255);
//   - every failed Bind writes bind-phase=failed and releases exactly what it
//     took, in reverse (HAMi #2645; HAMi's fail() releases every backend
//     forward);
//   - a Bind call whose outcome is unknown (a timeout) re-reads the pod
//     instead of releasing locks a bound pod may still need;
//   - every pod, not only gang members, retries contention with jittered
//     exponential backoff woken by lock releases (HAMi #1130, #1367, #1655,
//     #2589); Options.RetryPodGroupOnly and Options.FixedInterval, both set
//     by HAMi(), restore HAMi;
//   - the fencing epoch reaches the allocator (HAMi #3076, #3096);
//   - an allocation annotation claiming more memory or cores than its device
//     has is refused by AddUsage (naming it), and usage sums saturate, so one
//     crafted pod annotation cannot wrap a node's usage and block scheduling;
//   - every Options duration is range-checked (at most MaxTimeout).
//
// Not implemented: HAMi's MIG placement (per-model MIG geometries). Fit refuses
// a device whose Mode is "mig" with the reason MigPlacementUnsupported rather
// than sharing it as if it were a time-sliced card.
package gpu

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
// Fit the pod onto candidate nodes (Filter), then bind it (Bind):
//
//	fr, err := gpu.FitRequestFromPod(pod, reg)
//	res, err := gpu.Fit(nodes, fr)             // res.Node, res.Containers, per-node reasons
//
// The Bind flow is a pure state machine (StartBind, StepBind) that emits the
// actions GetPod, GetNode, Lock, Release, PatchPod, Bind, Event, ForgetAssumed
// and Wait; ApplyBind drives it against a BindExecutor and a Waiter and returns
// the outcome. Every failure after the pod is known writes
// hami.io/bind-phase=failed, releases exactly the locks it took in reverse
// order, and reports the original error.
//
// # Determinism
//
// Every function but ApplyBind is pure: no clock, no randomness, no IO, no
// goroutines, and no input is modified. Ties are broken explicitly (device
// index, then ID; node name), reasons are sorted by their rendering, map keys are
// sorted before they reach any output. Time enters the Bind state machine as
// event fields; the retry jitter is derived from a seed and the pod UID, so the
// same inputs give the same actions byte for byte.
//
// # Compatibility
//
// The anchor is HAMi v2.10. Device names, resource names, reason codes and
// scores follow it. Where plancore deliberately differs, the code says so next to
// the difference:
//
//   - init-container requests count (HAMi skips them, #2640);
//   - malformed quantities are errors, not silently empty requests;
//   - lock names are taken in ascending order, each once (#2255);
//   - every failed Bind writes bind-phase=failed and releases exactly what it
//     took, in reverse (#2645);
//   - every pod, not only gang members, retries contention with jittered
//     exponential backoff woken by lock releases (#1130, #1367, #1655, #2589).
package gpu

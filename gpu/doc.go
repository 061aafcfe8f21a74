// Package gpu is plancore's core for GPU scheduling in the style of HAMi's
// scheduler extender: a registry of device types, request detection from a pod,
// Filter-phase device fitting and node choice, and the Bind flow over per-node
// locks (package lock).
//
// # Usage
//
// Detect what a pod asks for and which node locks binding it needs:
//
//	reg := gpu.DefaultRegistry()               // HAMi's vendor table; add rows with reg.With(...),
//	                                           // rename a vendor's resources with reg.Rename(...)
//	reqs, err := gpu.DetectRequests(pod, reg)  // init and app containers
//	locks, err := gpu.RequiredLocks(pod, reg)  // de-duplicated, ascending
//
// Each vendor's rules are one row of the registry, written in its own
// vendor_<name>.go beside the HAMi source it follows: resource names, the
// memory unit (Cambricon and Iluvatar 256 MiB, Mthreads 512 MiB, Metax sGPU
// GiB unless the value has a unit), the cores of a whole-card request
// (100 for Cambricon, Hygon, AMD, Metax; 0 for Vastai, Biren, Kunlun),
// range checks (AMD's cores within 1..100), the annotations its plugin
// registers devices in, its selectors, the vendor-specific annotations
// Filter writes, and its fit rule where HAMi's Fit differs from NVIDIA's
// (see Vendors below).
//
// Read a HAMi cluster, fit the pod onto candidate nodes (Filter), one
// decision per snapshot of the nodes' usage, and write what HAMi's Filter
// writes:
//
//	n, err := gpu.DecodeNode(node, reg)        // every vendor's register, cordon, link scores, handshakes
//	n = gpu.DropStaleVendors(n, now)           // HAMi's 60 s handshake timeout
//	u, err := gpu.DecodePodUsage(pod, reg)     // devices a pod on the node holds
//	n.Devices, err = gpu.AddPodUsage(n.Devices, usages...)
//	fr, err := gpu.FitRequestFromPod(pod, reg) // requests plus policy and selector annotations
//	plan, err := gpu.Decide(gpu.Input{Nodes: nodes, Request: fr}, gpu.HAMi())
//	// plan.Node, plan.Containers, plan.Reason (NodeChosen or NoNodeFits), per-node reasons
//	plan, err = gpu.Fit(gpu.Input{Nodes: nodes, Request: fr}) // the same plan, for a caller that does not bind
//	df, err := gpu.FitDevices(node, fr.Requests[0], fr)          // one request on one node's devices of its type, HAMi's per-vendor Fit
//	annos, err := gpu.FilterAnnotations(gpu.FilterChoice{Pod: pod, Node: chosen, Containers: plan.Containers, Now: now, Registry: reg})
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
// Invalid input is refused with every problem at once: Decide, Fit,
// FitDevices, StartBind,
// Options.Validate, AddUsage, NewRegistry, Registry.With and Rename, DetectRequests,
// RequiredLocks, FitRequestFromPod, DecodeAllocations, DecodeNode,
// DecodePodUsage, AddPodUsage, FilterAnnotations and ParseLockEpochs
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
// # Obligations
//
//  1. Read every node's registers and every pod's usage on it from the
//     cache (DecodeNode, DecodePodUsage, AddPodUsage) and drop vendors whose
//     handshake went stale (DropStaleVendors) before fitting.
//  2. Fit one pod per snapshot (Decide), and write FilterAnnotations on the
//     pod BEFORE answering Filter: Bind reads them.
//  3. Count the devices just given as used until the cache shows the pod
//     (the extender's assumed usage), so a burst never over-assigns.
//  4. Bind with the node locks RequiredLocks names, in that order, through
//     ApplyBind (or StepBind): it releases exactly the locks it took, in
//     reverse, when anything fails.
//  5. A NoNodeFits plan is an answer, not an error: report its per-node
//     reasons to the scheduler.
//
// # Determinism
//
// Everything but ApplyBind's waiting (StoreWaiter, wait.go) and NodeQueue is pure: no
// clock, no randomness, no IO, no goroutines, and no input is modified. Ties
// are broken explicitly (device index, then position; node name), reasons are
// sorted by their rendering, map keys are sorted before they reach any output.
//
// Devices are ordered as HAMi orders them, so a user moving from HAMi gets the
// same devices in the same devices-to-allocate annotation: a single GPU
// policy sorts by score (binpack ascending, spread, the default, descending)
// with NUMA breaking ties, mutex by use (busy first), and under numa-bind by
// NUMA first (binpack descending, so NUMA 0 is tried first; otherwise
// ascending); a chain ("binpack,numa") applies its keys in order. Fit walks
// the sorted devices from the end, and equal devices keep their index order,
// so on a full tie the highest index is tried first, as in HAMi (whose
// single-policy sort keeps registration order only up to 12 devices a node;
// plancore keeps it always). Device scores are computed in float32 as HAMi
// computes them, and leave the request out for NVIDIA as HAMi's do. Time
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
//   - init-container requests take the node lock too: HAMi v2.10 fits
//     them (Resourcereqs, allocateInitContainers) as plancore does, but its
//     LockNode looks only at app containers, so a pod asking devices in an
//     init container alone binds without the lock (HAMi #2640);
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
//   - every Options duration is range-checked (at most MaxTimeout);
//   - a capacity-derived card's memory is computed without overflow and
//     saturated at the int32 maximum of MiB, and at most MaxCapacityDevices
//     cards are derived per type, so a card reporting 2^55 units is never
//     read as having no memory;
//   - FilterAnnotations refuses what its annotations could not carry back
//     (an empty device id or one holding ',', ':' or ';', a negative amount,
//     a core mask above core 30) rather than writing what no decoder reads;
//   - a pod's policy, weight and model lists hold at most MaxPolicyEntries
//     entries, its device id lists MaxUUIDEntries, each longer one refused
//     with one error;
//   - a vendor whose register DecodeNode cannot read is left out of the
//     node as HAMi skips it, and also named in Node.Unreadable with each
//     problem; a register device HAMi would take but Decide could not (an
//     empty, duplicated or separator-holding id, a negative value) makes
//     its vendor unreadable the same way;
//   - a pod's allocation annotation that does not decode is an error naming
//     it, where HAMi skips the pod and so counts its devices free; so is a
//     MIG reservation list HAMi's DecodeMigAllocations refuses, where HAMi
//     drops the list;
//   - the topology-aware search stops at 100,000 combinations and keeps the
//     first devices in walk order (HAMi enumerates them all);
//   - HAMi's AWS Neuron run search finds free positions of its sorted list
//     and takes the devices of those indices, which may be in use (or
//     missing); plancore takes a run only when the devices it names are
//     free, else tries the next;
//   - MIG, numa-bind, topology-aware and the device cordon apply to the
//     types whose row declares them (DeviceType.Capabilities,
//     Annotations.Cordon): NVIDIA's alone, as in HAMi; mutex applies to every vendor (HAMi's Enflame GCU and
//     whole Kunlun XPU ignore it), and to a whole card where a device is a
//     die of one (Device.Card, Vastai's die mode, as HAMi's Vastai Fit);
//   - HAMi's Vastai die mode holds when the first device its Fit sees
//     is a die; plancore's when any device of the type names its card, so
//     a die without an AIC is fitted as a whole card.
//
// MIG instances are placed as HAMi v2.10 places them: on a device in MIG
// mode, the smallest registered profile holding the request's memory that
// has a placement free of the instances in use and those the request took
// already (1g and 3g profiles packed from the highest start, the others from
// the lowest), the same device tried again for the next instance; no such
// placement is the reason CardMigTopologyInfeasible.
//
// Each vendor's own Fit is a row's FitRule where it changes which devices
// are chosen or refused: Enflame's DRS slice profiles (FitSliceProfiles),
// Ascend 910C's whole modules (FitModulePairs), Ascend 910's networks and
// Vastai's dies (Device.Network, Device.Card), Kunlun's link graph for
// whole XPUs and vXPUs (FitLinkGraph, FitLinkGraphShared), AWS Neuron's
// runs of devices by instance type (FitNeuronRuns), AMD's
// compute-unit share (CoresShareOfDevice), Ascend's hami-core soft split
// (Request.SoftSplit); AWS Neuron's cores are bit masks
// of the device's NeuronCores in its annotations (Annotations.CoreMask). The
// other vendors are fitted with NVIDIA's checks, which HAMi's Hygon,
// Cambricon, Iluvatar, Mthreads, Vastai and Biren Fits follow closely.
//
// A node's score is HAMi's: the default score of its usage before the pod,
// plus each vendor's score of the devices chosen where HAMi's ScoreNode
// computes one (a row's Score: Kunlun's groups of four, ScoreLinkGroups;
// Metax's topology tables, ScoreTopologyTables; Vastai's dies on one card,
// ScoreSameCard; Ascend 910's NPUs in one network, ScoreNetworks;
// DecodeNode puts them in Node.VendorScores), plus the caller's
// Node.BackendScore.
//
// Not modelled, each a known difference:
//
//   - Metax sGPU's QoS and MetaLink topology (sdevice.go Fit, checkAppClass,
//     checkDeviceQos, prioritizeExclusiveDevices, prioritizeOnlineDevices,
//     ScoreNode): they need, per device, the online/offline app class of
//     every pod on it, its QoS policy and link zone from the register, and
//     the scheduler's in-memory jittery-QoS cache, none of which a Device
//     carries; plancore fits Metax sGPU with NVIDIA's checks and ignores the
//     metax-tech.com/sgpu-* pod annotations;
//   - AWS Neuron: HAMi reads the cores per device off the first node it
//     sees, plancore off each node; HAMi's core masks cover two cores a
//     device, plancore's as many as the device has (the same for every
//     Neuron device HAMi supports);
//   - the 910C webhook's rounding of one NPU up to two; the vNPU template a
//     memory request is rounded up to is applied by HAMi's admission
//     webhook, which plancore does not run (pods read from a cluster already
//     carry it), and named in huawei.com/<chip>. The hami-core soft split
//     is modelled (Request.SoftSplit, Node.VNPUCore: ModeNotFit on a node
//     without it, 100 cores an NPU); HAMi's global vnpus.hamiVnpuCore is
//     taken as its chart's false for nodes without hami-vnpu-core;
//   - HAMi's Ascend Fit has no quota check; plancore applies the quota to
//     every type fitted with NVIDIA's checks;
//   - Kunlun: HAMi checks both UUID selector pairs (baidu.com/... and
//     hami.io/...-xpu-uuid) for both Kunlun types, plancore each type's own;
//   - HAMi's random choices (map order): equal Enflame profiles, which whole
//     910C modules; plancore takes the first by name and in walk order;
//   - Enflame's slices after a scheduler restart: HAMi re-reads a pod's
//     allocation without its profile and counts one slot, as
//     DecodePodUsage does; its in-memory cache counted the profile's slices.
//
// # Files
//
// Where to find what (tests sit beside, *_test.go; testdata/ holds the
// golden transcripts):
//
//	doc.go                this overview
//	registry.go           DeviceType (a vendor's row: resources, request rules, fit and
//	                      score rules, capabilities, annotations, lock), Registry, With, Rename
//	vendors.go            DefaultTypes: the rows of HAMi's table, in order
//	vendor_<name>.go      one vendor: its row(s) and everything only it does (its fit
//	                      rule, score, register decoding, own Filter annotations)
//	detect.go             Request, DetectRequests, RequiredLocks: what a pod asks
//	annotations.go        FitRequestFromPod: policy, selector and weight annotations
//	decode.go             DecodeNode, DropStaleVendors, EncodeNode: the node's registers
//	allocation.go         Allocation encoding (EncodeAllocations, DecodeAllocations), AddUsage
//	usage.go              DecodePodUsage, AddPodUsage, FilterAnnotations: pods' usage and
//	                      what Filter writes; annotations_vendor.go dispatches a row's Extra
//	fit.go                Device, Node, FitRequest, reasons, Input, Plan, Decide, Fit,
//	                      FitDevices, ChooseNode, the node score
//	pick.go               one request on one node: device order, HAMi's checks, reasons
//	groups.go             devices in groups (Vastai's dies on a card, Ascend 910's
//	                      networks): the choice by group and its score
//	score.go              ScoreRule and VendorScore: vendors' placement-dependent scores
//	mig.go                the MIG capability: geometry, instance choice, its annotation
//	topology.go           the TopologyAware capability: link scores, combination search
//	check.go              CheckPlan: the invariants of a plan
//	plan.go               String renderings of plans and Bind actions
//	bind.go               the Bind state machine (StartBind, Next, StepBind), Action, Result
//	apply.go              BindExecutor and ApplyBind; wait.go the Waiter; queue.go NodeQueue
//	options.go            Options (HAMi() preset); errors.go the sentinels
//
// # Vendors
//
// One row (or rows) per vendor, each in vendor_<name>.go citing the HAMi
// files it follows (pkg/device/<vendor>/), with the code only that vendor
// uses; no other file compares a vendor's name. The fit rule column adds
// the node score where the vendor has one (Metax's topology tables,
// Kunlun's groups of four, Vastai's dies on one card, Ascend 910's NPUs in
// one network):
//
//	type(s)                     register (DecodeNode)                   fit rule              Filter annotations beyond vgpu-node/-time
//	NVIDIA                      hami.io/node-nvidia-register (JSON)     NVIDIA's, MIG         vgpu-devices-to-allocate/-allocated, vgpu-mig-allocations
//	MLU                         capacity (cambricon.com/mlu.smlu.vcore) NVIDIA's              cambricon-mlu-devices-*, CAMBRICON_DSMLU_ASSIGNED/_PROFILE
//	DCU                         hami.io/node-dcu-register (legacy)      NVIDIA's              dcu-devices-*
//	Ascend310P … Ascend910C     hami.io/node-register-<chip> (JSON)     NVIDIA's; 910C pairs; <chip>-devices-*, huawei.com/<chip>, predicate-time
//	                                                                    910 networks
//	BI-V100, BI-V150, MR-V…     hami.io/node-<chip>-register (legacy)   NVIDIA's              <chip>-devices-*
//	Metax-GPU                   capacity (metax-tech.com/gpu)           NVIDIA's; tables      metax-gpu-devices-*
//	Metax-SGPU                  metax-tech.com/node-gpu-devices         NVIDIA's              metax-sgpu-devices-*, metax-tech.com/gpu-devices-allocated, predicate-time
//	kunlun                      capacity (kunlunxin.com/xpu)            link graph; groups    kunlun-allocated, BAIDU_COM_DEVICE_IDX
//	XPU                         hami.io/node-register-xpu (JSON)        link graph, shared    xpu-devices-*
//	Mthreads                    capacity (mthreads.com/sgpu-core)       NVIDIA's              mthreads-vgpu-devices-allocated, mthreads.com/gpu-index, predicate-time/-node
//	Enflame                     enflame.com/gcu-drs-capacity (JSON)     slice profiles        enflame-vgpu-devices-allocated, enflame.com/gcu-assigned*, gcu-request-size, assigned-containers
//	GCU                         capacity (enflame.com/gcu)              NVIDIA's              enflame-gcu-devices-*
//	AWSNeuron                   capacity (aws.amazon.com/neuron, -core) runs, core masks      aws-neuron-devices-allocated, AWS_NEURON_IDS, NEURON_*, aws.amazon.com/predicate-node
//	AMD                         hami.io/node-amd-register (JSON)        compute-unit share    amd-devices-* (entries typed by product)
//	Vastai                      hami.io/node-va-register (JSON)         NVIDIA's; dies, cards Vastai-devices-*
//	Biren                       hami.io/node-biren-register (JSON)      NVIDIA's              Biren-devices-*
package gpu

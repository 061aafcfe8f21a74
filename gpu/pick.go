package gpu

import (
	"cmp"
	"slices"
	"strings"
)

// fitRequest takes r.Nums devices of r.Type for one request from st, or
// returns nil and the reasons, counted over the node's devices of r.Type
// only, as HAMi's fitInDevices passes its Fit only those. On success st
// records the new usage. It follows HAMi's NVIDIA Fit (pkg/device/nvidia/
// device.go): the devices in policy order, walked from the end so the best
// candidate is tried first, each checked in HAMi's order. With countFirst
// a node with fewer devices of the type than asked is refused before any
// is looked at, as HAMi's fitInDevices does before calling the Fit.
func fitRequest(st *fitState, r Request, req FitRequest, pairs []PairScore, countFirst bool) ([]Allocation, []Rejection) {
	typeDevs, mig, dies, networks := devicesOfType(st.devs, r.Type)
	// HAMi refuses a node with fewer devices of the type than asked, before
	// looking at them, unless MIG instances could serve the request.
	migRequest := r.Capabilities.MIG && mig && (req.Mode == "" || strings.Contains(req.Mode, ModeMIG))
	if countFirst && int(r.Nums) > len(typeDevs) && !migRequest {
		return nil, []Rejection{{Code: ReasonNodeInsufficientDevice}}
	}
	p := &picker{st: st, r: r, req: req, sel: selectorFor(req.Selectors, r.Type), cores: min(r.Cores, 100),
		need: r.Nums, picked: make([]pick, 0, min(int(r.Nums), len(typeDevs))), quotaMem: st.quotaMem, quotaCores: st.quotaCores, prevNUMA: -1,
		mutex: req.Exclusive || slices.Contains(req.GPUPolicy, Mutex), topology: slices.Contains(req.GPUPolicy, TopologyAware) && r.Capabilities.TopologyAware,
		numaBind: req.NUMABind && r.Capabilities.NUMABind, dies: dies, networks: networks}
	if r.SoftSplit && !st.vnpuCore {
		// HAMi's Ascend Fit refuses a hami-core pod on a node without it.
		var counts reasonCounts
		counts[rModeNotFit] = 1
		return nil, renderReasons(counts, len(typeDevs))
	}
	if r.Rule == FitSliceProfiles {
		prof, ok := selectSliceProfile(st.profiles, r)
		if !ok {
			// HAMi's Enflame Fit refuses the request before any device.
			var counts reasonCounts
			counts[rModeNotFit] = 1
			return nil, renderReasons(counts, len(typeDevs))
		}
		p.slice = prof
	}
	p.pairs = r.Rule == FitModulePairs && r.Nums > 1
	order := deviceOrder(st.devs, typeDevs, r, req)
	if allocs, rejections, done := p.chooseWhole(order, len(typeDevs)); done {
		return allocs, rejections
	}
	for i := len(order) - 1; i >= 0 && (p.walksAll() || p.need > 0); i-- {
		if p.consider(order[i]) && st.devs[order[i]].Mode == ModeMIG {
			// HAMi tries a MIG device again after taking an instance of it.
			i++
		}
	}
	if p.pairs {
		if got := p.chooseModulePairs(); got != int(r.Nums) {
			return nil, modulePairsReasons(p.counts, got, r.Nums)
		}
	}
	switch {
	case p.dies:
		p.chooseByGroup(cardOf)
	case p.networks && !p.pairs:
		// Ascend 910C's whole modules take precedence, as in HAMi's Fit.
		p.chooseByGroup(networkOf)
	}
	if p.topology {
		sorted := slices.Clone(pairs)
		slices.SortFunc(sorted, func(a, b PairScore) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
		p.chooseByTopology(sorted)
	}
	if p.need > 0 {
		if len(p.picked) > 0 {
			p.counts[rAllocatedCardsInsufficientRequest] = len(p.picked)
		}
		return nil, renderReasons(p.counts, len(typeDevs))
	}
	return p.commit(), nil
}

// devicesOfType returns the positions of the devices of typ in devs,
// whether one of them is in MIG mode and one is a die of a card, and
// whether every one names its network (HAMi's Ascend Fit groups by network
// only then: hasNetworkID).
func devicesOfType(devs []Device, typ string) (idx []int, mig, dies, networks bool) {
	idx = make([]int, 0, len(devs))
	networks = true
	for i, d := range devs {
		if d.Vendor == typ {
			idx = append(idx, i)
			mig = mig || d.Mode == ModeMIG
			dies = dies || d.Card != ""
			networks = networks && d.Network != ""
		}
	}
	return idx, mig, dies, networks && len(idx) > 0
}

// chooseWhole serves the rules that choose a set of devices at once
// rather than walking them (Kunlun's link graph, AWS Neuron's runs of
// several devices); done is false for the others.
func (p *picker) chooseWhole(order []int, ofType int) (allocs []Allocation, rejections []Rejection, done bool) {
	var picks []pick
	var counts reasonCounts
	switch {
	case p.r.Rule == FitNeuronRuns && p.r.Nums > 1:
		if picks = p.chooseNeuronRun(order); picks == nil {
			counts[rNumaNotFit] = 1
		}
	case p.r.Rule == FitLinkGraph || p.r.Rule == FitLinkGraphShared:
		picks, counts = p.chooseKunlunGraph(order)
	default:
		return nil, nil, false
	}
	if picks == nil {
		return nil, renderReasons(counts, ofType), true
	}
	p.picked = picks
	return p.commit(), nil, true
}

// picker is one request's walk over a node's devices, best candidate first.
type picker struct {
	st                   *fitState
	r                    Request
	req                  FitRequest
	sel                  Selector
	cores                int32
	counts               reasonCounts
	picked               []pick
	need                 int32
	prevNUMA             int
	quotaMem, quotaCores int64
	mutex, topology      bool
	numaBind             bool
	pairs                bool
	// dies is true when the type's devices are dies of cards (Device.Card,
	// Vastai's die mode); networks when each names its network
	// (Device.Network, Ascend 910).
	dies, networks bool
	slice          sliceCandidate
}

// pick is one device slice a request takes.
type pick struct {
	idx       int
	mem       int32
	cores     int32
	profile   string
	placement MIGPlacement
	slots     int32
}

// consider picks device idx, or counts why it was rejected.
func (p *picker) consider(idx int) bool {
	d := &p.st.devs[idx]
	if reason := p.unsuitable(d); reason >= 0 {
		p.counts[reason]++
		return false
	}
	p.keepOneNUMA(d)
	pk, reason := p.room(idx)
	if reason >= 0 {
		p.counts[reason]++
		return false
	}
	p.picked = append(p.picked, pk)
	p.quotaMem += int64(pk.mem)
	p.quotaCores += int64(p.cores)
	if !p.walksAll() {
		p.need--
	}
	return true
}

// walksAll reports whether the request considers every device before
// choosing among those that fit (topology-aware, module pairs, dies,
// networks).
func (p *picker) walksAll() bool { return p.topology || p.pairs || p.dies || p.networks }

// unsuitable returns why the device cannot serve the request whatever its
// usage (health, cordon, model, mode), or -1.
func (p *picker) unsuitable(d *Device) int {
	switch {
	case !d.Healthy:
		return rCardNotHealth
	case d.Cordoned:
		return rCardCordoned
	case !p.sel.modelOK(d.Model) || (p.req.Mode != "" && !strings.Contains(p.req.Mode, d.Mode)):
		return rCardTypeMismatch
	}
	return -1
}

// keepOneNUMA drops the partial pick on the previous NUMA node when a
// numa-bind request moves to another one: it must sit on one NUMA node.
func (p *picker) keepOneNUMA(d *Device) {
	if !p.numaBind || d.NUMA == p.prevNUMA {
		return
	}
	if len(p.picked) > 0 {
		p.counts[rNumaNotFit] += len(p.picked)
	}
	p.picked, p.need = p.picked[:0], p.r.Nums
	p.quotaMem, p.quotaCores = p.st.quotaMem, p.st.quotaCores
	p.prevNUMA = d.NUMA
}

// room returns what the request takes on device idx, or why the device's
// selectors, usage, the quota or its MIG geometry leave no room (-1 when
// there is).
func (p *picker) room(idx int) (pick, int) {
	d := &p.st.devs[idx]
	if !p.sel.uuidOK(d.ID) {
		return pick{}, rCardUUIDMismatch
	}
	if d.Used >= d.Count {
		return pick{}, rCardTimeSlicingExhausted
	}
	if p.mutex && (d.Used > 0 || p.cardInUse(d.Card)) {
		return pick{}, rExclusiveDeviceAllocateConflict
	}
	mem := p.r.MemoryMiB
	if mem == 0 {
		mem = int32(int64(d.MemoryMiB) * int64(p.r.MemoryPercent) / 100)
	}
	if p.r.Rule == FitSliceProfiles {
		return p.roomSlices(idx)
	}
	if p.r.CoresShare {
		return p.roomShare(idx, mem)
	}
	total := d.Cores
	if p.r.SoftSplit {
		// HAMi's Ascend Fit counts 100 cores a device under hami-core.
		total = 100
	}
	q := p.req.Quota
	switch {
	case (q.LimitMemory && p.quotaMem+int64(mem) > q.MemoryMiB) || (q.LimitCores && p.quotaCores+int64(p.cores) > q.Cores):
		return pick{}, rResourceQuotaNotFit
	case int64(d.MemoryMiB)-int64(d.UsedMemoryMiB) < int64(mem):
		return pick{}, rCardInsufficientMemory
	case int64(total)-int64(d.UsedCores) < int64(p.cores):
		return pick{}, rCardInsufficientCore
	case total == 100 && p.cores == 100 && d.Used > 0:
		return pick{}, rExclusiveDeviceAllocateConflict
	case total != 0 && p.cores == 0 && d.UsedCores >= total:
		return pick{}, rCardComputeUnitsExhausted
	}
	pk := pick{idx: idx, mem: mem, cores: p.cores}
	if d.Mode == ModeMIG {
		prof, pl, ok := selectMIG(d.MIGProfiles, p.occupied(idx), mem)
		if !ok {
			return pick{}, rCardMigTopologyInfeasible
		}
		pk.mem, pk.cores, pk.profile, pk.placement = prof.MemoryMiB, prof.Cores, prof.Name, pl
	}
	return pk, -1
}

// roomShare is room for a request whose cores are a share of the device's
// compute units (HAMi's AMD Fit): memory, then that share of the cores (at
// least one, at most all; a whole-memory request without cores takes them
// all). HAMi's AMD Fit has no quota, exclusivity or exhausted-compute check.
func (p *picker) roomShare(idx int, mem int32) (pick, int) {
	d := &p.st.devs[idx]
	if int64(d.MemoryMiB)-int64(d.UsedMemoryMiB) < int64(mem) {
		return pick{}, rCardInsufficientMemory
	}
	var cores int32
	switch {
	case p.r.Cores > 0 && d.Cores <= 0:
		return pick{}, rCardInsufficientCore
	case p.r.Cores > 0:
		cores = min(max(int32(int64(d.Cores)*int64(min(p.r.Cores, 100))/100), 1), d.Cores)
	case d.MemoryMiB > 0 && mem >= d.MemoryMiB:
		cores = d.Cores
	}
	if int64(d.Cores)-int64(d.UsedCores) < int64(cores) {
		return pick{}, rCardInsufficientCore
	}
	return pick{idx: idx, mem: mem, cores: cores}, -1
}

// commit records the picked devices' new usage and returns the allocations.
func (p *picker) commit() []Allocation {
	allocs := make([]Allocation, len(p.picked))
	for k, pk := range p.picked {
		d := &p.st.devs[pk.idx]
		d.Used = addSat32(d.Used, max(pk.slots, 1))
		d.UsedMemoryMiB = addSat32(d.UsedMemoryMiB, pk.mem)
		d.UsedCores = addSat32(d.UsedCores, pk.cores)
		allocs[k] = Allocation{UUID: d.ID, Type: d.Vendor, MemoryMiB: pk.mem, Cores: pk.cores}
		if pk.slots > 0 {
			allocs[k].Slots, allocs[k].SliceProfile = pk.slots, pk.profile
		}
		if pk.placement.Size > 0 {
			d.MIGInUse = append(slices.Clip(d.MIGInUse), pk.placement)
			allocs[k].MIGProfile, allocs[k].MIGPlacement = pk.profile, pk.placement
		}
	}
	// The quota the pod's next container sees counts the devices kept: a
	// policy that walks every fitting device (topology-aware, pairs, dies)
	// accumulated the quota of every candidate while it walked.
	for _, pk := range p.picked {
		p.st.quotaMem += int64(pk.mem)
		p.st.quotaCores += int64(p.cores)
	}
	return allocs
}

// reasonCounts counts rejected devices per reason, indexed by the r* constants;
// an array keeps the per-device loop free of map allocations.
type reasonCounts [len(reasonCodes)]int

const (
	rCardTypeMismatch = iota
	rCardNotHealth
	rCardCordoned
	rNumaNotFit
	rCardUUIDMismatch
	rCardTimeSlicingExhausted
	rExclusiveDeviceAllocateConflict
	rResourceQuotaNotFit
	rCardInsufficientMemory
	rCardInsufficientCore
	rCardComputeUnitsExhausted
	rAllocatedCardsInsufficientRequest
	rCardMigTopologyInfeasible
	rModeNotFit
)

var reasonCodes = [...]ReasonCode{
	rCardTypeMismatch:                  ReasonCardTypeMismatch,
	rCardNotHealth:                     ReasonCardNotHealth,
	rCardCordoned:                      ReasonCardCordoned,
	rNumaNotFit:                        ReasonNumaNotFit,
	rCardUUIDMismatch:                  ReasonCardUUIDMismatch,
	rCardTimeSlicingExhausted:          ReasonCardTimeSlicingExhausted,
	rExclusiveDeviceAllocateConflict:   ReasonExclusiveDeviceAllocateConflict,
	rResourceQuotaNotFit:               ReasonResourceQuotaNotFit,
	rCardInsufficientMemory:            ReasonCardInsufficientMemory,
	rCardInsufficientCore:              ReasonCardInsufficientCore,
	rCardComputeUnitsExhausted:         ReasonCardComputeUnitsExhausted,
	rAllocatedCardsInsufficientRequest: ReasonAllocatedCardsInsufficientRequest,
	rCardMigTopologyInfeasible:         ReasonCardMigTopologyInfeasible,
	rModeNotFit:                        ReasonModeNotFit,
}

func renderReasons(counts reasonCounts, total int) []Rejection {
	var out []Rejection
	for code, n := range counts {
		if n > 0 {
			out = append(out, Rejection{Code: reasonCodes[code], Count: n, Total: total})
		}
	}
	sortRejections(out)
	return out
}

// sortRejections orders rejections by their text, as HAMi's GenReason does.
func sortRejections(out []Rejection) {
	slices.SortFunc(out, func(a, b Rejection) int { return cmp.Compare(a.String(), b.String()) })
}

// deviceScore is HAMi's device score (policy.ComputeScore), in float32 as
// HAMi computes it so that ties fall where HAMi's fall: 10 × (slot·(req+used)/count
// + core·(cores+usedCores)/totalCores + memory·(mem+usedMem)/totalMem). HAMi adds
// the request only when the device's registered type equals the request's
// type, which is not the case for NVIDIA ("NVIDIA-<model>" against
// "NVIDIA"): an NVIDIA device scores by its current usage alone.
func deviceScore(d Device, r Request, w Weights) float32 {
	if d.Count == 0 || d.Cores == 0 || d.MemoryMiB == 0 {
		return 0
	}
	var req, cores, mem int32
	switch {
	case d.Model == r.Type && r.Rule == FitSliceProfiles:
		// HAMi's Enflame request carries the slices as its memory in the
		// direct mode (percentage 0) and a percentage of -1 by spec, which
		// ComputeScore turns into minus a hundredth of the device's memory.
		req, cores, mem = 1, r.Cores, r.Slices
		if r.Slices == 0 {
			mem = int32(-int64(d.MemoryMiB) / 100)
		}
	case d.Model == r.Type:
		req, cores, mem = 1, r.Cores, r.MemoryMiB
		if r.MemoryMiB == 0 {
			mem = int32(int64(d.MemoryMiB) * int64(r.MemoryPercent) / 100)
		}
	}
	used := float32(req+d.Used) / float32(d.Count)
	core := float32(cores+d.UsedCores) / float32(d.Cores)
	memory := float32(mem+d.UsedMemoryMiB) / float32(d.MemoryMiB)
	return float32(10) * (float32(w.Slot)*used + float32(w.Core)*core + float32(w.Memory)*memory)
}

// deviceOrder returns the indices of the request type's devices sorted as
// HAMi's DeviceUsageList sorts them (pkg/scheduler/policy/gpu_policy.go);
// Fit walks the result from the end, so the last is tried first.
//
// A single policy (no comma): mutex puts busy devices first (used
// descending, then NUMA); under numa-bind binpack orders NUMA descending
// then score ascending, anything else NUMA ascending then score
// descending; otherwise binpack is score ascending and anything else
// (spread, topology-aware, unset) score descending, NUMA ascending breaking
// ties. A chain ("binpack,numa", or "numa" alone) applies binpack, spread and
// numa in the order written, spread when it names none, numa first under
// numa-bind. Equal devices keep their registration index order, so on a full
// tie the highest index is tried first: HAMi's chain ends on the index and
// its single-policy sort keeps registration order for up to 12 devices.
func deviceOrder(devs []Device, idx []int, r Request, req FitRequest) []int {
	w := req.Weights.orDefault()
	o := orderer{devs: devs, scores: make([]float32, len(devs))}
	for _, i := range idx {
		o.scores[i] = deviceScore(devs[i], r, w)
	}
	if len(req.GPUPolicy) > 1 || (len(req.GPUPolicy) == 1 && req.GPUPolicy[0] == NUMAOrder) {
		o.setChain(req)
	} else {
		o.setSingle(req)
	}
	order := slices.Clone(idx)
	slices.SortStableFunc(order, o.compare)
	return order
}

// sortKey is one key of a device order: score ascending (binpack) or
// descending (spread), NUMA ascending or descending, or use descending
// (mutex).
type sortKey uint8

const (
	keyScoreAsc sortKey = iota
	keyScoreDesc
	keyNUMAAsc
	keyNUMADesc
	keyUsedDesc
)

// orderer compares device indices by up to three keys, then by index and
// position. A struct rather than closures keeps a fit's allocations per node
// constant.
type orderer struct {
	devs   []Device
	scores []float32
	keys   [3]sortKey
	n      int
}

func (o *orderer) add(k sortKey) { o.keys[o.n] = k; o.n++ }

// setSingle sets the keys of a single (or no) GPU policy.
func (o *orderer) setSingle(req FitRequest) {
	policy := Spread
	if len(req.GPUPolicy) == 1 {
		policy = req.GPUPolicy[0]
	}
	switch {
	case policy == Mutex:
		o.add(keyUsedDesc)
		o.add(keyNUMAAsc)
	case req.NUMABind && policy == Binpack:
		o.add(keyNUMADesc)
		o.add(keyScoreAsc)
	case req.NUMABind:
		o.add(keyNUMAAsc)
		o.add(keyScoreDesc)
	case policy == Binpack:
		o.add(keyScoreAsc)
		o.add(keyNUMAAsc)
	default:
		o.add(keyScoreDesc)
		o.add(keyNUMAAsc)
	}
}

// setChain sets the keys of a chain: binpack, spread and numa in the order
// written, each once, spread when none, numa first under numa-bind.
func (o *orderer) setChain(req FitRequest) {
	if req.NUMABind {
		o.add(keyNUMAAsc)
	}
	seen := [3]bool{}
	for _, p := range req.GPUPolicy {
		switch {
		case p == Binpack && !seen[0]:
			seen[0] = true
			o.add(keyScoreAsc)
		case p == Spread && !seen[1]:
			seen[1] = true
			o.add(keyScoreDesc)
		case p == NUMAOrder && !seen[2]:
			seen[2] = true
			if !req.NUMABind {
				o.add(keyNUMAAsc)
			}
		}
	}
	if !seen[0] && !seen[1] && !seen[2] {
		o.add(keyScoreDesc)
	}
}

func (o *orderer) compare(a, b int) int {
	for _, k := range o.keys[:o.n] {
		var c int
		switch k {
		case keyScoreAsc:
			c = cmp.Compare(o.scores[a], o.scores[b])
		case keyScoreDesc:
			c = cmp.Compare(o.scores[b], o.scores[a])
		case keyNUMAAsc:
			c = cmp.Compare(o.devs[a].NUMA, o.devs[b].NUMA)
		case keyNUMADesc:
			c = cmp.Compare(o.devs[b].NUMA, o.devs[a].NUMA)
		case keyUsedDesc:
			c = cmp.Compare(o.devs[b].Used, o.devs[a].Used)
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Or(cmp.Compare(o.devs[a].Index, o.devs[b].Index), cmp.Compare(a, b))
}

func selectorFor(sels []Selector, typ string) Selector {
	for _, s := range sels {
		if s.Type == typ {
			return s
		}
	}
	return Selector{}
}

func (s Selector) modelOK(model string) bool {
	m := strings.ToUpper(model)
	if len(s.UseModels) > 0 && !slices.ContainsFunc(s.UseModels, func(u string) bool { return strings.Contains(m, strings.ToUpper(u)) }) {
		return false
	}
	return !slices.ContainsFunc(s.NoUseModels, func(u string) bool { return strings.Contains(m, strings.ToUpper(u)) })
}

func (s Selector) uuidOK(id string) bool {
	if len(s.UseUUIDs) > 0 && !slices.Contains(s.UseUUIDs, id) {
		return false
	}
	return !slices.Contains(s.NoUseUUIDs, id)
}

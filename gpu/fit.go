package gpu

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// Device is one device registered on a node together with the usage already
// recorded against it (assigned pods, see AddUsage).
type Device struct {
	// ID is the device UUID.
	ID string
	// Index is the device's registration index; it breaks the final tie when
	// devices are ordered.
	Index int
	// Vendor is the registry type the device belongs to ("NVIDIA", "MLU", ...).
	Vendor string
	// Model is the device model HAMi calls the device type, e.g.
	// "NVIDIA-Tesla V100"; use-gputype/nouse-gputype match substrings of it.
	Model string
	// Count is the number of slots (time-slicing shares) the device offers.
	Count int32
	// MemoryMiB is the device's total memory.
	MemoryMiB int32
	// Cores is the device's total compute; 100 for a percentage-scheduled card.
	Cores int32
	// NUMA is the NUMA node the device sits on.
	NUMA int
	// Healthy is false for a device its plugin reports unhealthy.
	Healthy bool
	// Cordoned is true for a device listed in the node's hami.io/device-cordon.
	Cordoned bool
	// Mode is the sharing mode ("hami-core", "mps", ...), matched against the
	// pod's vgpu-mode annotation when that is set.
	Mode string

	// Used is the number of container slices already on the device.
	Used int32
	// UsedMemoryMiB is the memory already assigned.
	UsedMemoryMiB int32
	// UsedCores is the compute already assigned.
	UsedCores int32

	// MIGProfiles are the MIG instance shapes a device in MIG mode offers
	// (from its register); a MIG-mode device without them takes no pod.
	MIGProfiles []MIGProfile
	// MIGInUse are the slice ranges of the MIG instances already placed.
	MIGInUse []MIGPlacement

	// Minor is the device's minor number where its plugin registers one
	// (Enflame DRS; empty means the index).
	Minor string
	// CoresInUse has bit i set when core i of the device is held, for a type
	// whose allocations name cores by bit (Annotations.CoreMask, AWS Neuron).
	CoresInUse uint64
	// Card is the physical card the device is a die of, for a type whose
	// plugin registers dies (Annotations.DieCards, Vastai's die mode: its
	// custominfo DeviceStrategy "die" and AIC); "" otherwise. Under mutex a
	// card is exclusive: an idle die on a card whose other die is in use is
	// refused (ExclusiveDeviceAllocateConflict), and a request of several
	// dies takes them from the cards with the most fitting dies first.
	Card string
	// Network is the network the device sits in, for a type whose plugin
	// registers one (Annotations.NetworkIDs, Ascend 910: its custominfo
	// NetworkID, as JSON: the integer part of a number, the text of
	// anything else); "" otherwise. When every device of the type on a node
	// names its network, a request of several devices takes them from the
	// networks with the most fitting devices first, and the node scores each
	// container's devices by their share in one network (ScoreNetworks).
	Network string
}

// Node is one candidate node of a fit.
type Node struct {
	// Name is the node name.
	Name string
	// Devices are the node's registered devices with their usage.
	Devices []Device
	// BackendScore is the caller's own addend to the node score. The
	// vendors' scores from the chosen devices (HAMi's ScoreNode) are
	// VendorScores, not this.
	BackendScore float64
	// VendorScores are the node's vendor score rules (DeviceType.Score) with
	// what they read from the node, filled by DecodeNode; Decide adds them
	// to the score of a node that fits.
	VendorScores []VendorScore
	// PairScores are the link scores between the node's NVIDIA devices,
	// read by the topology-aware policy.
	PairScores []PairScore
	// Handshakes are the vendors' handshake annotations (DecodeNode); see
	// DropStaleVendors.
	Handshakes []Handshake
	// Unreadable are the vendors DecodeNode could not read on the node,
	// each with the reason; their devices are not in Devices. Decide does
	// not read it: it is for the caller's logs and events.
	Unreadable []UnreadableVendor
	// SliceProfiles are the slice profiles the node's devices of a
	// FitSliceProfiles type offer (Enflame DRS: "<n>g.<m>gb" names with the
	// plugin's profile IDs), sorted by name.
	SliceProfiles []SliceProfile
	// InstanceType is the node's node.kubernetes.io/instance-type label, read
	// by the FitNeuronRuns rule.
	InstanceType string
	// VNPUCore is true when the node supports Ascend's hami-core soft split:
	// its hami-vnpu-core annotation is "true". Without the annotation HAMi
	// uses its global vnpus.hamiVnpuCore (false in its chart), as DecodeNode
	// does; set it after decoding when that setting is true.
	VNPUCore bool
}

// AnnoVNPUCore is the node annotation saying whether the node supports
// Ascend's hami-core soft split.
const AnnoVNPUCore = "hami-vnpu-core"

// LabelInstanceType is the node label naming its cloud instance type.
const LabelInstanceType = "node.kubernetes.io/instance-type"

// SliceProfile is one slice profile of a node (Enflame DRS): its name,
// "<slices>g.<memory GiB>gb", and the plugin's ID for it.
type SliceProfile struct {
	Name string
	ID   string
}

// Policy is a node or device ordering policy.
type Policy string

const (
	// Binpack prefers the fullest node or device.
	Binpack Policy = "binpack"
	// Spread prefers the emptiest node or device.
	Spread Policy = "spread"
	// NUMAOrder orders devices by NUMA node; it is valid only in a GPU policy chain.
	NUMAOrder Policy = "numa"
	// Mutex is a GPU policy that takes only devices nobody uses (and, alone,
	// tries the busy ones last); chained ("mutex,spread") it filters while
	// the other keys order.
	Mutex Policy = "mutex"
	// TopologyAware is a GPU policy that chooses among every fitting NVIDIA
	// device by the node's link scores (hami.io/node-nvidia-score).
	TopologyAware Policy = "topology-aware"
)

// Weights weigh the three terms of the device score. The zero value means
// 1/1/1, HAMi's default.
type Weights struct {
	Slot, Core, Memory float64
}

func (w Weights) orDefault() Weights {
	if w == (Weights{}) {
		return Weights{Slot: 1, Core: 1, Memory: 1}
	}
	return w
}

// Selector narrows the devices of one vendor a pod accepts (HAMi's
// nvidia.com/use-gputype, nouse-gputype, use-gpuuuid and nouse-gpuuuid).
type Selector struct {
	// Type is the registry type the selector applies to.
	Type string
	// UseModels, when non-empty, accepts only devices whose Model contains one of
	// them (case-insensitive).
	UseModels []string
	// NoUseModels rejects devices whose Model contains one of them (case-insensitive).
	NoUseModels []string
	// UseUUIDs, when non-empty, accepts only these device IDs.
	UseUUIDs []string
	// NoUseUUIDs rejects these device IDs.
	NoUseUUIDs []string
}

// Quota is what remains of the pod namespace's device quota (HAMi's
// ResourceQuota check). A resource with its Limit flag unset is unlimited.
type Quota struct {
	LimitMemory bool
	MemoryMiB   int64
	LimitCores  bool
	Cores       int64
}

// FitRequest is everything Fit needs to know about the pod.
type FitRequest struct {
	// Requests are the pod's device requests (DetectRequests).
	Requests []Request
	// NodePolicy orders nodes; "" means Binpack, HAMi's default.
	NodePolicy Policy
	// GPUPolicy is HAMi's hami.io/gpu-scheduler-policy split at its commas:
	// one token is a single policy (binpack, spread, mutex, topology-aware;
	// empty means spread, HAMi's default), several (or numa alone) a chain of
	// sort keys plus the mutex and topology-aware filters; see deviceOrder.
	GPUPolicy []Policy
	// Weights weigh the device score.
	Weights Weights
	// Selectors narrow devices per vendor.
	Selectors []Selector
	// NUMABind keeps all devices of one request on one NUMA node and makes NUMA
	// the primary ordering key (nvidia.com/numa-bind).
	NUMABind bool
	// Mode, when set, accepts only devices of that sharing mode (nvidia.com/vgpu-mode).
	Mode string
	// Exclusive is the "mutex" device policy: only devices nobody uses are taken.
	Exclusive bool
	// Quota is the namespace's remaining device quota.
	Quota Quota
}

// ReasonCode is the machine-readable cause of a fit outcome or a Bind
// action. The codes are part of the API: match on them, never on a message.
type ReasonCode string

// Reason codes of a device rejected by a fit; the strings are HAMi's.
const (
	ReasonCardNotHealth                     ReasonCode = "CardNotHealth"
	ReasonCardCordoned                      ReasonCode = "CardCordoned"
	ReasonCardTypeMismatch                  ReasonCode = "CardTypeMismatch"
	ReasonNumaNotFit                        ReasonCode = "NumaNotFit"
	ReasonCardUUIDMismatch                  ReasonCode = "CardUuidMismatch"
	ReasonCardTimeSlicingExhausted          ReasonCode = "CardTimeSlicingExhausted"
	ReasonExclusiveDeviceAllocateConflict   ReasonCode = "ExclusiveDeviceAllocateConflict"
	ReasonResourceQuotaNotFit               ReasonCode = "ResourceQuotaNotFit"
	ReasonCardInsufficientMemory            ReasonCode = "CardInsufficientMemory"
	ReasonCardInsufficientCore              ReasonCode = "CardInsufficientCore"
	ReasonCardComputeUnitsExhausted         ReasonCode = "CardComputeUnitsExhausted"
	ReasonAllocatedCardsInsufficientRequest ReasonCode = "AllocatedCardsInsufficientRequest"
	// ReasonNodeInsufficientDevice: the node has fewer devices of the requested
	// type than the request asks (HAMi's message is the bare code).
	ReasonNodeInsufficientDevice ReasonCode = "NodeInsufficientDevice"
	// ReasonCardMigTopologyInfeasible: no MIG profile of the device large enough
	// for the request has a free placement.
	ReasonCardMigTopologyInfeasible ReasonCode = "CardMigTopologyInfeasible"
	// ReasonModeNotFit: no slice profile of the node matches the request
	// (FitSliceProfiles, HAMi's Enflame DRS), or the node does not support
	// the hami-core soft split an Ascend request asks (Request.SoftSplit).
	ReasonModeNotFit ReasonCode = "ModeNotFit"
)

// Reason codes of a node's and a plan's outcome.
const (
	// ReasonNodeFits: every request of the pod found devices on the node.
	ReasonNodeFits ReasonCode = "NodeFits"
	// ReasonNodeUnfit: some request found no devices; NodeFit.Rejections
	// count why, and the message is HAMi's ("1/2 CardInsufficientMemory, ...").
	ReasonNodeUnfit ReasonCode = "NodeUnfit"
	// ReasonNodeChosen: the plan chose Plan.Node by the node policy.
	ReasonNodeChosen ReasonCode = "NodeChosen"
	// ReasonNoNodeFits: no node fits; the plan chooses none.
	ReasonNoNodeFits ReasonCode = "NoNodeFits"
)

// Reason says why: a code to match on and a message for people.
type Reason = plancore.Reason[ReasonCode, plancore.NoFacts]

// Rejection counts the devices of a node rejected for one cause.
type Rejection struct {
	Code  ReasonCode
	Count int
	Total int
}

// String renders the rejection as HAMi does: "<count>/<total> <Code>".
func (r Rejection) String() string {
	if r.Total == 0 {
		return string(r.Code)
	}
	return fmt.Sprintf("%d/%d %s", r.Count, r.Total, r.Code)
}

// Allocation is one device slice given to one container: one item of HAMi's
// hami.io/<x>-devices-to-allocate encoding.
type Allocation struct {
	// UUID is the device ID.
	UUID string
	// Type is the device's vendor (registry type).
	Type string
	// MemoryMiB is the memory assigned on the device.
	MemoryMiB int32
	// Cores is the compute assigned on the device.
	Cores int32
	// Slots is the number of device slots the allocation takes; 0 means 1.
	// A pod's usage collapsed over its containers (DecodePodUsage) takes one
	// per app container on the device.
	Slots int32
	// MIGProfile and MIGPlacement name the MIG instance given on a MIG-mode
	// device; a zero placement Size means none.
	MIGProfile   string
	MIGPlacement MIGPlacement
	// SliceProfile names the slice profile given (FitSliceProfiles); Slots
	// then holds its slices.
	SliceProfile string
	// CoreMask is the device's cores held, bit i for core i, for a type
	// whose allocations name cores by bit (AWS Neuron); Cores is their count.
	CoreMask uint64
}

// ContainerAllocation is what one container was given.
type ContainerAllocation struct {
	Container string
	Init      bool
	Devices   []Allocation
}

// NodeFit is the outcome of fitting a pod on one node.
type NodeFit struct {
	// Node is the node name.
	Node string
	// Fits reports whether every request found devices.
	Fits bool
	// Score is HAMi's node score: the default score taken before the pod is
	// added, plus, when the node fits, its vendor scores of the chosen
	// devices (Node.VendorScores), plus BackendScore.
	Score float64
	// Containers is the assignment, one entry per container with a request,
	// init containers first; set only when Fits.
	Containers []ContainerAllocation
	// FailedContainer and FailedType name the first request that did not fit.
	FailedContainer string
	FailedType      string
	// Rejections count why, sorted by their rendering; set only when !Fits.
	Rejections []Rejection
	// Reason is NodeFits, or NodeUnfit with HAMi's message.
	Reason Reason
}

// Message renders the rejections as HAMi does, e.g.
// "1/2 CardInsufficientMemory, 1/2 CardTypeMismatch".
func (f NodeFit) Message() string { return rejectionsMessage(f.Rejections) }

// rejectionsMessage renders rejections as HAMi's reasons, comma-separated.
func rejectionsMessage(rs []Rejection) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}

// DeviceFit is the outcome of fitting one request on a node's devices of
// its type.
type DeviceFit struct {
	// Fits reports whether the request found its devices.
	Fits bool
	// Devices are the devices given, in the order chosen; set only when Fits.
	Devices []Allocation
	// Rejections count why not, over the node's devices of the request's
	// type, sorted by their rendering; set only when !Fits.
	Rejections []Rejection
}

// Message renders the rejections as HAMi's per-vendor Fit returns its
// reason, e.g. "2/2 ExclusiveDeviceAllocateConflict".
func (f DeviceFit) Message() string { return rejectionsMessage(f.Rejections) }

// FitDevices fits one request onto n's devices of r.Type, as HAMi's
// per-vendor Fit does when its device tests call it with one node's
// devices of one vendor: req gives the pod's policies, selectors, mode and
// quota (its Requests are not read), n its devices and what the type's
// fit rule reads of the node (link scores, slice profiles, instance type,
// hami-core support). Devices of other types are not looked at, and n is
// not modified. It refuses what Fit refuses of n and r, r named as
// request.requests[0] and n as node. Like HAMi's Fit, and unlike Fit, it does not
// refuse a node with fewer devices of the type than asked before looking
// at them (NodeInsufficientDevice): it answers why each device was not
// taken (AllocatedCardsInsufficientRequest for those that were).
func FitDevices(n Node, r Request, req FitRequest) (DeviceFit, error) {
	req.Requests = []Request{r}
	if err := plancore.Join(req.Validate(), invalid(ErrInvalidDevice, validateNode(n, nodePath))); err != nil {
		return DeviceFit{}, err
	}
	st := fitState{devs: n.Devices, profiles: n.SliceProfiles, instanceType: n.InstanceType, vnpuCore: n.VNPUCore}.clone()
	allocs, rejections := fitRequest(&st, r, req, n.PairScores, false)
	if allocs == nil {
		return DeviceFit{Rejections: rejections}, nil
	}
	return DeviceFit{Fits: true, Devices: allocs}, nil
}

// Input is everything Decide needs: the candidate nodes and the pod's
// request. A fit reads no clock, so it has no Now.
type Input struct {
	// Nodes are the candidates, each with its devices' recorded usage (AddUsage).
	Nodes []Node
	// Request is what the pod asks for (FitRequestFromPod).
	Request FitRequest
}

// Plan is the outcome of Decide over a set of nodes: the chosen node and its
// assignment, or none with the reason.
type Plan struct {
	// Node is the chosen node, "" when none fits.
	Node string
	// Containers is the chosen node's assignment.
	Containers []ContainerAllocation
	// Nodes holds every node's outcome, sorted by node name.
	Nodes []NodeFit
	// Reason is NodeChosen, or NoNodeFits.
	Reason Reason
}

// Validate checks the request's policies and quantities, reporting every
// problem with its field path, wrapping ErrInvalidRequest (and so
// ErrInvalidInput).
func (r FitRequest) Validate() error {
	return invalid(ErrInvalidRequest, r.validate(requestPath))
}

// pathFn builds a field path when a check fails, and only then: Decide
// validates every node and device on every call, so valid input builds no
// path.
type pathFn func() *field.Path

func requestPath() *field.Path { return field.NewPath("request") }
func nodePath() *field.Path    { return field.NewPath("node") }

func (r FitRequest) validate(p pathFn) field.ErrorList {
	var errs field.ErrorList
	if !nodePolicyKnown(r.NodePolicy) {
		errs = append(errs, field.NotSupported(p().Child("nodePolicy"), r.NodePolicy, []Policy{Binpack, Spread}))
	}
	for i, gp := range r.GPUPolicy {
		if !gpuPolicyKnown(gp) {
			errs = append(errs, field.NotSupported(p().Child("gpuPolicy").Index(i), gp, gpuPolicies))
		}
	}
	for _, w := range []struct {
		name string
		v    float64
	}{{"slot", r.Weights.Slot}, {"core", r.Weights.Core}, {"memory", r.Weights.Memory}} {
		if w.v < 0 || math.IsNaN(w.v) || math.IsInf(w.v, 0) {
			errs = append(errs, field.Invalid(p().Child("weights", w.name), w.v, "must be a finite non-negative number"))
		}
	}
	for i, q := range r.Requests {
		qp := func() *field.Path { return p().Child("requests").Index(i) }
		if q.Nums <= 0 {
			errs = append(errs, field.Invalid(qp().Child("nums"), q.Nums, "must be positive"))
		}
		if q.MemoryMiB < 0 {
			errs = append(errs, field.Invalid(qp().Child("memoryMiB"), q.MemoryMiB, "must not be negative"))
		}
		switch {
		case !slices.Contains(fitRules(), q.Rule):
			errs = append(errs, field.NotSupported(qp().Child("rule"), q.Rule, fitRules()))
		case q.Slices < 0 || (q.Slices > 0 && q.Rule != FitSliceProfiles):
			errs = append(errs, field.Invalid(qp().Child("slices"), q.Slices, "must be 0, or positive under the SliceProfiles rule"))
		}
		if q.MemoryPercent < 0 || q.MemoryPercent > 100 {
			errs = append(errs, field.Invalid(qp().Child("memoryPercent"), q.MemoryPercent, "must be within 0..100"))
		}
		if q.Cores < 0 {
			errs = append(errs, field.Invalid(qp().Child("cores"), q.Cores, "must not be negative"))
		}
	}
	return errs
}

// gpuPolicies are the tokens of a GPU policy chain.
var gpuPolicies = []Policy{Binpack, Spread, NUMAOrder, Mutex, TopologyAware}

// nodePolicyKnown reports whether p is a node policy ("" is binpack).
func nodePolicyKnown(p Policy) bool {
	return p == "" || p == Binpack || p == Spread
}

// gpuPolicyKnown reports whether p may appear in a device ordering chain.
func gpuPolicyKnown(p Policy) bool {
	return p == Binpack || p == Spread || p == NUMAOrder || p == Mutex || p == TopologyAware
}

// validateNode checks a node's devices.
func validateNode(n Node, p pathFn) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for j, d := range n.Devices {
		// The device's path is built only for a problem: a fit validates
		// every device of every node.
		dp := func() *field.Path { return p().Child("devices").Index(j) }
		switch {
		case d.ID == "" || strings.ContainsAny(d.ID, ",:;"):
			errs = append(errs, field.Invalid(dp().Child("id"), d.ID, "must be non-empty and free of ',', ':' and ';'"))
		case seen[d.ID]:
			errs = append(errs, field.Duplicate(dp().Child("id"), d.ID))
		}
		seen[d.ID] = true
		for _, q := range []struct {
			name string
			v    int32
		}{{"count", d.Count}, {"memoryMiB", d.MemoryMiB}, {"cores", d.Cores}, {"used", d.Used}, {"usedMemoryMiB", d.UsedMemoryMiB}, {"usedCores", d.UsedCores}} {
			if q.v < 0 {
				errs = append(errs, field.Invalid(dp().Child(q.name), q.v, "must not be negative"))
			}
		}
		if len(d.MIGProfiles)+len(d.MIGInUse) > 0 {
			errs = append(errs, validateMIG(d, dp)...)
		}
		if d.Network != "" && !json.Valid([]byte(d.Network)) {
			// EncodeNode writes it back as the NetworkID's JSON value.
			errs = append(errs, field.Invalid(dp().Child("network"), d.Network, "must be the JSON text of a register's NetworkID"))
		}
	}
	for j, vs := range n.VendorScores {
		if !slices.Contains(scoreRules(), vs.Rule) {
			errs = append(errs, field.NotSupported(p().Child("vendorScores").Index(j).Child("rule"), vs.Rule, scoreRules()))
		}
	}
	return errs
}

// Validate reports every invalid field of the input: the request's (wrapping
// ErrInvalidRequest) and the nodes' (a duplicated or empty name, a bad device,
// wrapping ErrInvalidDevice); both wrap ErrInvalidInput.
func (in Input) Validate() error {
	var nodeErrs field.ErrorList
	seen := make(map[string]bool, len(in.Nodes))
	for i, n := range in.Nodes {
		np := func() *field.Path { return field.NewPath("nodes").Index(i) }
		switch {
		case n.Name == "":
			nodeErrs = append(nodeErrs, field.Required(np().Child("name"), "the node's name"))
		case seen[n.Name]:
			nodeErrs = append(nodeErrs, field.Duplicate(np().Child("name"), n.Name))
		}
		seen[n.Name] = true
		nodeErrs = append(nodeErrs, validateNode(n, np)...)
	}
	return plancore.Join(in.Request.Validate(), invalid(ErrInvalidDevice, nodeErrs))
}

// Decide fits the pod's request onto each node, scores the nodes that fit and
// chooses one by Request.NodePolicy: one decision per snapshot of the
// nodes' usage. o is validated (it tunes Bind, which follows), so Decide
// refuses exactly what Input.Validate and Options.Validate refuse, as one
// *plancore.InvalidError listing every field; Fit is the same decision
// without Options. It is pure: the input is not modified, and equal inputs
// give equal plans. An error means invalid input; a pod that fits nowhere
// is a plan with an empty Node, the reason NoNodeFits and per-node reasons.
func Decide(in Input, o Options) (Plan, error) {
	if err := plancore.Join(in.Validate(), o.Validate()); err != nil {
		return Plan{}, err
	}
	return decide(in), nil
}

// Fit is Decide for a caller that does not bind (a simulator, a tool, a
// test): the same plan, refusing exactly what Input.Validate refuses.
func Fit(in Input) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	return decide(in), nil
}

// decide is Decide on valid input.
func decide(in Input) Plan {
	p := Plan{Nodes: make([]NodeFit, 0, len(in.Nodes))}
	var sc fitScratch
	for _, n := range in.Nodes {
		p.Nodes = append(p.Nodes, fitNode(n, in.Request, &sc))
	}
	slices.SortFunc(p.Nodes, func(a, b NodeFit) int { return cmp.Compare(a.Node, b.Node) })
	policy := in.Request.NodePolicy
	if policy == "" {
		policy = Binpack
	}
	if best, ok := ChooseNode(p.Nodes, in.Request.NodePolicy); ok {
		p.Node = best.Node
		p.Containers = best.Containers
		p.Reason = Reason{Code: ReasonNodeChosen, Message: fmt.Sprintf("%s chose %s (score %.2f)", policy, best.Node, best.Score)}
	} else {
		p.Reason = Reason{Code: ReasonNoNodeFits, Message: fmt.Sprintf("0/%d nodes fit", len(in.Nodes))}
	}
	return p
}

// ChooseNode picks among the fitting nodes: HAMi sorts ascending by score for
// binpack and descending for spread and takes the last, so binpack picks the
// fullest node and spread the emptiest. Equal scores go to the smallest name.
func ChooseNode(fits []NodeFit, policy Policy) (NodeFit, bool) {
	var best NodeFit
	found := false
	for _, f := range fits {
		if !f.Fits {
			continue
		}
		if !found {
			best, found = f, true
			continue
		}
		better := f.Score > best.Score
		if policy == Spread {
			better = f.Score < best.Score
		}
		if better || (f.Score == best.Score && f.Node < best.Node) {
			best = f
		}
	}
	return best, found
}

// nodeScore is HAMi's default node score (policy.ComputeDefaultScore), in
// float32 as HAMi computes it: 10 × (used/count + usedCores/cores +
// usedMem/mem) summed over every device of the node, whatever its vendor,
// taken before the pod is added (0 when a total is 0).
func nodeScore(n Node) float32 {
	var used, count, usedCores, cores, usedMem, mem int64
	for _, d := range n.Devices {
		used += int64(d.Used)
		count += int64(d.Count)
		usedCores += int64(d.UsedCores)
		cores += int64(d.Cores)
		usedMem += int64(d.UsedMemoryMiB)
		mem += int64(d.MemoryMiB)
	}
	if count == 0 || cores == 0 || mem == 0 {
		return 0
	}
	return float32(10) * (float32(used)/float32(count) + float32(usedCores)/float32(cores) + float32(usedMem)/float32(mem))
}

// fitState is the mutable working copy of one node during a fit.
type fitState struct {
	devs         []Device
	profiles     []SliceProfile
	instanceType string
	vnpuCore     bool
	quotaMem     int64
	quotaCores   int64
}

func (s fitState) clone() fitState {
	s.devs = slices.Clone(s.devs)
	return s
}

// fitScratch holds the working copies of a node's devices, reused from
// node to node: a fit keeps nothing of them once its NodeFit is built
// (allocations copy what they name), and a fresh copy of every node's
// devices was most of what Decide allocated.
type fitScratch struct{ app, init []Device }

// cloneInto is clone into *buf's memory.
func (s fitState) cloneInto(buf *[]Device) fitState {
	*buf = append((*buf)[:0], s.devs...)
	s.devs = *buf
	return s
}

// fitNode fits every request: each init container against the node's usage
// without the other init containers (they run one after another), app
// containers accumulating on their own copy, so the pod's footprint is its peak.
func fitNode(n Node, req FitRequest, sc *fitScratch) NodeFit {
	defaultScore := nodeScore(n)
	out := NodeFit{Node: n.Name, Score: float64(defaultScore) + n.BackendScore, Reason: Reason{Code: ReasonNodeFits, Message: "every request fits"}}
	if len(req.Requests) == 0 {
		out.Fits = true
		return out
	}
	base := fitState{devs: n.Devices, profiles: n.SliceProfiles, instanceType: n.InstanceType, vnpuCore: n.VNPUCore}
	app := base.cloneInto(&sc.app)
	var containers []ContainerAllocation
	for start := 0; start < len(req.Requests); {
		end := start + 1
		for end < len(req.Requests) && req.Requests[end].Container == req.Requests[start].Container &&
			req.Requests[end].Init == req.Requests[start].Init {
			end++
		}
		group := req.Requests[start:end]
		st := &app
		if group[0].Init {
			initState := base.cloneInto(&sc.init)
			st = &initState
		}
		ca := ContainerAllocation{Container: group[0].Container, Init: group[0].Init}
		for _, r := range group {
			allocs, rejections := fitRequest(st, r, req, n.PairScores, true)
			if allocs == nil {
				out.FailedContainer, out.FailedType, out.Rejections = r.Container, r.Type, rejections
				out.Reason = Reason{Code: ReasonNodeUnfit, Message: fmt.Sprintf("%s %s: %s", r.Container, r.Type, out.Message())}
				return out
			}
			ca.Devices = append(ca.Devices, allocs...)
		}
		containers = append(containers, ca)
		start = end
	}
	out.Fits, out.Containers = true, containers
	if len(n.VendorScores) > 0 {
		// HAMi adds the vendors' scores to the default one in float32.
		out.Score = float64(defaultScore+placementScore(n, containers, req.NodePolicy)) + n.BackendScore
	}
	return out
}

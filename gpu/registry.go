package gpu

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

// Lock names used by the default registry. HAMi passes LockNvidia for every
// locking vendor except Cambricon, so one node lock is shared by all of them.
const (
	// LockNvidia is HAMi's node lock annotation, shared by every locking vendor
	// but Cambricon.
	LockNvidia = "hami.io/mutex.lock"
	// LockCambricon is Cambricon's own node lock annotation. HAMi writes it with a
	// weaker protocol (timestamp only, no resourceVersion, no owner check, 2 min);
	// plancore gives it the full lock semantics.
	LockCambricon = "cambricon.com/dsmlu.lock"
)

// DeviceType is one row of the device registry: a vendor (or chip) with the
// resource names a container uses to ask for it, the rules HAMi derives a
// request from them with, the annotations its device plugin and scheduler
// exchange, and the node lock Bind must hold for it. A zero resource name
// means the type has no such resource; the zero value of every rule field is
// HAMi's commonest behaviour (limits then requests, plain integer memory in
// MemoryUnitMiB units, cores DefaultCores when unset, no range check).
type DeviceType struct {
	// Type is the registry key, HAMi's CommonWord ("NVIDIA", "MLU",
	// "Ascend910B3", ...). Devices registered on a node carry it as their Vendor.
	Type string
	// Count is the resource whose value is the number of devices; a container
	// requests the type when it is > 0.
	Count corev1.ResourceName
	// Memory is the per-device memory resource, in units of MemoryUnitMiB.
	Memory corev1.ResourceName
	// MemoryPercentage is the per-device memory resource as a percentage of the
	// card's total memory.
	MemoryPercentage corev1.ResourceName
	// Cores is the per-device compute resource, a percentage of one card for
	// every type but AWS Neuron, whose cores are a NeuronCore count compared with
	// the device's registered core total.
	Cores corev1.ResourceName
	// Priority is the task priority resource (NVIDIA's nvidia.com/priority).
	Priority corev1.ResourceName
	// MemoryUnitMiB is the size of one unit of Memory in MiB; 0 means 1.
	// Cambricon and Iluvatar count memory in 256 MiB units, Mthreads in 512 MiB.
	MemoryUnitMiB int32
	// MemoryRule says how the Memory value becomes MiB; "" multiplies the
	// integer by MemoryUnitMiB.
	MemoryRule MemoryRule
	// MemoryTiersMiB are the sizes a MemoryTiers value is rounded up to,
	// ascending; the last is the whole card.
	MemoryTiersMiB []int32
	// DefaultMemoryMiB is the memory requested when a container sets neither
	// Memory nor MemoryPercentage (HAMi's defaultMemory). 0 means 100 % of the card.
	DefaultMemoryMiB int32
	// DefaultCores is the core percentage requested when a container does not set
	// Cores (HAMi's defaultCores, or the constant its GenerateResourceRequests
	// uses). 100 makes the card exclusive.
	DefaultCores int32
	// CoresMin and CoresMax, when CoresMax > 0, bound a Cores value a container
	// sets: HAMi refuses AMD's 0 and 101.
	CoresMin, CoresMax int32
	// CoresShareOfDevice fits the Cores percentage as a share of each device's
	// own compute units (at least one, at most all; a whole-memory request
	// without cores takes them all) and skips the 100-core exclusivity and
	// exhausted-compute checks, as HAMi's AMD Fit does.
	CoresShareOfDevice bool
	// LimitsOnly reads the type's resources from limits alone, ignoring
	// requests (HAMi's AMD and Metax sGPU).
	LimitsOnly bool
	// SplitAcrossDevices divides the Memory and Cores values by the count:
	// they are the container's total, not per device (HAMi's Mthreads).
	SplitAcrossDevices bool
	// CountRule says how the number of devices is found; "" reads Count.
	CountRule CountRule
	// CoresPerDevice is the number of cores one device has, for
	// CountFromCores (AWS Neuron: 2 NeuronCores per device).
	CoresPerDevice int32
	// FitRule is the type's own fit rule where HAMi's Fit for it differs
	// from NVIDIA's checks; "" is NVIDIA's.
	FitRule FitRule
	// VNPU is an Ascend chip's vNPU configuration (HAMi's vnpus config).
	VNPU VNPUConfig
	// Score is the type's node score from the devices a fit chose (HAMi's
	// ScoreNode); "" adds nothing.
	Score ScoreRule
	// Capabilities are the pod policies the type's fit honours beyond the
	// common checks; HAMi gives them to NVIDIA alone.
	Capabilities Capabilities
	// Annotations are the node and pod annotations of the type.
	Annotations Annotations
	// LockName is the node lock Bind must hold for this type; "" means none.
	LockName string
}

// Capabilities are the pod policies a type's fit honours beyond the
// common checks. DetectRequests copies them into each Request, so Decide
// reads them without the registry.
type Capabilities struct {
	// MIG: a device of the type in MIG mode serves MIG instances
	// (Device.MIGProfiles), recorded in hami.io/vgpu-mig-allocations.
	MIG bool
	// NUMABind: nvidia.com/numa-bind keeps a request's devices on one NUMA
	// node.
	NUMABind bool
	// TopologyAware: the topology-aware GPU policy chooses the type's
	// devices by the node's link scores, read from Annotations.LinkScores.
	TopologyAware bool
}

// MemoryRule is how a type's Memory value is turned into MiB.
type MemoryRule string

const (
	// MemoryScaled multiplies the integer value by MemoryUnitMiB (the zero value).
	MemoryScaled MemoryRule = ""
	// MemoryGiBOrQuantity reads a bare number as GiB and a value with a unit
	// suffix ("1024Mi", "16Gi") as bytes (HAMi's Metax sGPU).
	MemoryGiBOrQuantity MemoryRule = "GiBOrQuantity"
	// MemoryTiers rounds the MiB value up to the next of MemoryTiersMiB and
	// derives the cores from the share of the largest tier; an unset value
	// asks for the whole card (HAMi's Kunlun vXPU).
	MemoryTiers MemoryRule = "Tiers"
)

// CountRule is how a type's device count is found.
type CountRule string

const (
	// CountResource reads Count (the zero value).
	CountResource CountRule = ""
	// CountFromCores also accepts a Cores-only request and derives the
	// devices from CoresPerDevice: up to one device's cores fit on one device,
	// more must be a whole number of devices (HAMi's AWS Neuron).
	CountFromCores CountRule = "FromCores"
	// CountOneDevice asks for one device whose memory is the Count value
	// (Enflame's drs-gcu slices), or, without Count, for one device of the
	// Memory and Cores values (HAMi's Enflame).
	CountOneDevice CountRule = "OneDevice"
)

// RegisterFormat is how a type's device plugin publishes its devices on the
// node.
type RegisterFormat string

const (
	// RegisterNone: the type's devices are not decoded from the node.
	RegisterNone RegisterFormat = ""
	// RegisterJSON is HAMi's JSON list of devices (MarshalNodeDevices):
	// NVIDIA, AMD, Ascend, Kunlun vXPU, Vastai, Biren.
	RegisterJSON RegisterFormat = "JSON"
	// RegisterLegacy is HAMi's older "id,count,mem,cores,type,numa,health[,index,mode]:"
	// list (EncodeNodeDevices): Hygon DCU, Iluvatar.
	RegisterLegacy RegisterFormat = "Legacy"
	// RegisterMetaxSGPU is Metax's own JSON list (uuid, totalDevCount,
	// totalCompute, totalVRam, numa, healthy).
	RegisterMetaxSGPU RegisterFormat = "MetaxSGPU"
	// RegisterCapacity derives the devices from the node's capacity of the
	// Count resource, as HAMi does for whole-card types without a register
	// annotation: one device per unit, CapacitySlots slots each.
	RegisterCapacity RegisterFormat = "Capacity"
	// RegisterEnflameDRS is Enflame's JSON DRS capacity ({"devices":
	// [{"index","minor","capacity"}],"profiles":{name:id}}): one device per
	// entry with capacity slices, the memory of the largest profile, and
	// the node's slice profiles (HAMi pkg/device/enflame/device.go,
	// GetNodeDevices).
	RegisterEnflameDRS RegisterFormat = "EnflameDRS"
	// RegisterNeuron derives the devices from the node's capacity of the
	// Count resource, each with the node's Cores capacity divided evenly
	// (HAMi pkg/device/awsneuron/device.go, GetNodeDevices).
	RegisterNeuron RegisterFormat = "Neuron"
)

// FitRule names a type's own fit rule.
type FitRule string

const (
	// FitNVIDIA is NVIDIA's checks (the zero value), with CoresShareOfDevice
	// for AMD.
	FitNVIDIA FitRule = ""
	// FitSliceProfiles fits one device of a slice profile of the node
	// (Node.SliceProfiles): the request picks the profile, the device must
	// hold the profile's memory and cores, and the allocation takes the
	// profile's slices as slots (HAMi's Enflame DRS, pkg/device/enflame/
	// device.go, Fit and selectProfileByRequest).
	FitSliceProfiles FitRule = "SliceProfiles"
	// FitModulePairs gives a request of more than one device whole modules
	// of two devices (index/2), every fitting device considered first
	// (HAMi's Ascend 910C, pkg/device/ascend/device.go, Fit and
	// computeBestCombination910C).
	FitModulePairs FitRule = "ModulePairs"
	// FitLinkGraph gives whole, unused devices by HAMi's Kunlun link graph:
	// 1, 2, 4 or 8 XPUs from one group of four, a linked pair or a joined
	// set of four (HAMi's whole Kunlun XPU, pkg/device/kunlun/device.go Fit
	// and topo.go graghSelect).
	FitLinkGraph FitRule = "LinkGraph"
	// FitLinkGraphShared is FitLinkGraph for shared devices: a device fits
	// when it is healthy, holds the request's memory, and every request it
	// already serves asked the same memory (their average equals it); under
	// mutex it must be unused (HAMi's Kunlun vXPU, vdevice.go Fit and
	// FitVXPU).
	FitLinkGraphShared FitRule = "LinkGraphShared"
	// FitNeuronRuns gives a request of more than one device a run of
	// consecutive unused, healthy devices: any run on an Inferentia node
	// (Node.InstanceType containing "inf" or "Inf"), elsewhere only runs of
	// 1, 4, 8 or 16 starting at a multiple of their length (HAMi's AWS
	// Neuron, pkg/device/awsneuron/device.go Fit and graphSelect).
	FitNeuronRuns FitRule = "NeuronRuns"
)

// fitRules lists the fit rules.
func fitRules() []FitRule {
	return []FitRule{FitNVIDIA, FitSliceProfiles, FitModulePairs, FitLinkGraph, FitLinkGraphShared, FitNeuronRuns}
}

// VNPUConfig is the part of an Ascend chip's vNPU configuration the
// scheduler reads (HAMi pkg/device/ascend/vnpu.go, VNPUConfig): the
// templates a memory request is rounded up to, ascending by memory, and the
// memory a request above them but within MemoryCapacityMiB gets.
type VNPUConfig struct {
	Templates            []VNPUTemplate
	MemoryAllocatableMiB int32
	MemoryCapacityMiB    int32
}

// VNPUTemplate is one vNPU template: its name and memory.
type VNPUTemplate struct {
	Name      string
	MemoryMiB int32
}

// Template returns the template HAMi's trimMemory rounds mem up to: the
// first with at least mem, "" with MemoryAllocatableMiB when mem is above
// them but within MemoryCapacityMiB, "" and 0 when it is above that.
func (c VNPUConfig) Template(mem int32) (string, int32) {
	for _, t := range c.Templates {
		if mem <= t.MemoryMiB {
			return t.Name, t.MemoryMiB
		}
	}
	if mem <= c.MemoryCapacityMiB {
		return "", c.MemoryAllocatableMiB
	}
	return "", 0
}

// ExtraAnnotations names the vendor-specific pod annotations HAMi's
// PatchAnnotations writes for a type beyond its devices-to-allocate and
// devices-allocated pair.
type ExtraAnnotations string

const (
	// ExtraNone: none (the zero value).
	ExtraNone ExtraAnnotations = ""
	// ExtraCambricon: CAMBRICON_DSMLU_ASSIGNED and CAMBRICON_DSMLU_PROFILE.
	ExtraCambricon ExtraAnnotations = "Cambricon"
	// ExtraMthreads: mthreads.com/gpu-index, predicate-time and predicate-node.
	ExtraMthreads ExtraAnnotations = "Mthreads"
	// ExtraKunlun: BAIDU_COM_DEVICE_IDX.
	ExtraKunlun ExtraAnnotations = "Kunlun"
	// ExtraMetaxSGPU: metax-tech.com/gpu-devices-allocated (Metax's JSON) and
	// metax-tech.com/predicate-time.
	ExtraMetaxSGPU ExtraAnnotations = "MetaxSGPU"
	// ExtraAWSNeuron: AWS_NEURON_IDS, NEURON_RESOURCE_TYPE, NEURON_ALLOC_TIME,
	// NEURON_ALLOCATED and aws.amazon.com/predicate-node.
	ExtraAWSNeuron ExtraAnnotations = "AWSNeuron"
	// ExtraAscend: huawei.com/<type> (the devices with their vNPU template)
	// and predicate-time.
	ExtraAscend ExtraAnnotations = "Ascend"
	// ExtraEnflameDRS: enflame.com/gcu-assigned, -assigned-time,
	// -assigned-index, -assigned-id, -assigned-minor, -request-size and
	// assigned-containers.
	ExtraEnflameDRS ExtraAnnotations = "EnflameDRS"
)

// Annotations are the names a type's device plugin and HAMi's scheduler
// exchange. An empty name means HAMi has none for the type.
type Annotations struct {
	// Register is the node annotation the device plugin registers the devices in.
	Register string
	// RegisterFormat is the encoding of Register.
	RegisterFormat RegisterFormat
	// Handshake is the node annotation of the scheduler/plugin handshake.
	Handshake string
	// ToAllocate is the pod annotation Filter writes the chosen devices to.
	ToAllocate string
	// Allocated is the pod annotation a pod's held devices are read from.
	Allocated string
	// UseType and NoUseType accept or reject device models by substring.
	UseType, NoUseType string
	// UseUUID and NoUseUUID accept or reject devices by UUID.
	UseUUID, NoUseUUID string
	// Cordon, when true, applies the node's hami.io/device-cordon to the type.
	Cordon bool
	// EntryModel writes each device's model, not the type, as the type of
	// its devices-to-allocate entries (HAMi's AMD keeps the product name).
	EntryModel bool
	// RegisterCores, when positive, replaces the cores of every registered
	// device (HAMi's Vastai and Biren set 100, for the score only).
	RegisterCores int32
	// Capacity describes the devices a RegisterCapacity type derives from
	// the node's capacity.
	Capacity CapacityRule
	// DieCards: the type's JSON register names, in each device's
	// custominfo, the card a die sits on (DeviceStrategy "die" and AIC),
	// read into Device.Card (HAMi's Vastai die mode).
	DieCards bool
	// NetworkIDs: the type's JSON register names, in each device's
	// custominfo, the network the device sits in (NetworkID), read into
	// Device.Network (HAMi's Ascend 910 chips).
	NetworkIDs bool
	// CoreMask: the cores of the type's allocation entries are a bit mask of
	// the device's cores (bit i for core i), not a count (HAMi's AWS Neuron).
	CoreMask bool
	// Extra names the vendor-specific annotations Filter writes.
	Extra ExtraAnnotations
	// LinkScores is the node annotation the type's device-pair link scores
	// are read from (Node.PairScores; NVIDIA's hami.io/node-nvidia-score),
	// for Capabilities.TopologyAware; a type whose link scores cannot be
	// read is unreadable, as HAMi's NVIDIA GetNodeDevices fails on them.
	LinkScores string
	// TopologyLosses and TopologyScores are the node annotations a
	// ScoreTopologyTables type's tables are read from (Metax's
	// metax-tech.com/gpu.topology.losses and .scores).
	TopologyLosses, TopologyScores string
}

// CapacityRule is how HAMi derives a whole-card type's devices from the
// node's status.capacity (GetNodeDevices of Cambricon, Metax GPU, Enflame
// GCU, Kunlun and Mthreads): Resource's capacity divided by PerDevice,
// rounded up, devices named "<node>-<IDInfix>-<i>".
type CapacityRule struct {
	// Resource is the capacity read; PerDevice of it make one device.
	Resource  corev1.ResourceName
	PerDevice int64
	// IDInfix names the devices.
	IDInfix string
	// MemoryMiB is each device's memory; 0 derives it from the capacity of
	// the type's Memory resource: memory × MemoryUnitMiB × PerDevice / Resource.
	MemoryMiB int32
	// Cores and Slots are each device's cores and slots.
	Cores, Slots int32
	// HalfNUMA puts the second half of the devices on NUMA node 1 (Kunlun).
	HalfNUMA bool
}

// Resources returns the type's resource names in table order, skipping unset ones.
func (t DeviceType) Resources() []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, r := range []corev1.ResourceName{t.Count, t.Memory, t.MemoryPercentage, t.Cores, t.Priority} {
		if r != "" {
			out = append(out, r)
		}
	}
	return out
}

func (t DeviceType) memoryUnit() int64 {
	if t.MemoryUnitMiB == 0 {
		return 1
	}
	return int64(t.MemoryUnitMiB)
}

// validate reports every problem of one row on its own, under p (types[2]).
func (t DeviceType) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case t.Type == "":
		errs = append(errs, field.Required(p.Child("type"), "a device type needs a name"))
	case strings.ContainsAny(t.Type, " \t\n,:;"):
		errs = append(errs, field.Invalid(p.Child("type"), t.Type, "must be free of spaces, ',', ':' and ';'"))
	}
	if t.Count == "" {
		errs = append(errs, field.Required(p.Child("count"), "the device count resource is required"))
	}
	for _, r := range t.resourceFields() {
		if r.name == "" {
			continue
		}
		for _, msg := range validation.IsQualifiedName(string(r.name)) {
			errs = append(errs, field.Invalid(p.Child(r.field), string(r.name), msg))
		}
	}
	if t.LockName != "" {
		for _, msg := range validation.IsQualifiedName(t.LockName) {
			errs = append(errs, field.Invalid(p.Child("lockName"), t.LockName, msg))
		}
	}
	if t.MemoryUnitMiB < 0 {
		errs = append(errs, field.Invalid(p.Child("memoryUnitMiB"), t.MemoryUnitMiB, "must not be negative"))
	}
	if t.DefaultMemoryMiB < 0 {
		errs = append(errs, field.Invalid(p.Child("defaultMemoryMiB"), t.DefaultMemoryMiB, "must not be negative"))
	}
	if t.DefaultCores < 0 || t.DefaultCores > 100 {
		errs = append(errs, field.Invalid(p.Child("defaultCores"), t.DefaultCores, "must be within 0..100"))
	}
	return append(errs, t.validateRules(p)...)
}

// validateRules reports the problems of the request rules and annotations.
func (t DeviceType) validateRules(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch t.MemoryRule {
	case MemoryScaled, MemoryGiBOrQuantity:
	case MemoryTiers:
		if len(t.MemoryTiersMiB) == 0 || !slices.IsSorted(t.MemoryTiersMiB) || t.MemoryTiersMiB[0] <= 0 {
			errs = append(errs, field.Invalid(p.Child("memoryTiersMiB"), t.MemoryTiersMiB, "the Tiers rule needs positive ascending tiers"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("memoryRule"), t.MemoryRule, []MemoryRule{MemoryScaled, MemoryGiBOrQuantity, MemoryTiers}))
	}
	switch t.CountRule {
	case CountResource, CountOneDevice:
	case CountFromCores:
		if t.CoresPerDevice <= 0 || t.Cores == "" {
			errs = append(errs, field.Invalid(p.Child("coresPerDevice"), t.CoresPerDevice, "the FromCores rule needs a Cores resource and a positive CoresPerDevice"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("countRule"), t.CountRule, []CountRule{CountResource, CountFromCores, CountOneDevice}))
	}
	if t.CoresMax < 0 || t.CoresMin < 0 || (t.CoresMax > 0 && t.CoresMin > t.CoresMax) {
		errs = append(errs, field.Invalid(p.Child("coresMax"), t.CoresMax, fmt.Sprintf("want 0 <= coresMin (%d) <= coresMax", t.CoresMin)))
	}
	switch t.FitRule {
	case FitNVIDIA:
	case FitSliceProfiles:
		if t.CountRule != CountOneDevice {
			errs = append(errs, field.Invalid(p.Child("fitRule"), t.FitRule, "the SliceProfiles rule needs the OneDevice count rule"))
		}
	case FitModulePairs, FitLinkGraph, FitLinkGraphShared, FitNeuronRuns:
	default:
		errs = append(errs, field.NotSupported(p.Child("fitRule"), t.FitRule, fitRules()))
	}
	for i, tp := range t.VNPU.Templates {
		if tp.Name == "" || tp.MemoryMiB <= 0 || (i > 0 && tp.MemoryMiB < t.VNPU.Templates[i-1].MemoryMiB) {
			errs = append(errs, field.Invalid(p.Child("vnpu", "templates").Index(i), tp, "a template needs a name and a positive memory, ascending"))
		}
	}
	errs = append(errs, t.validateScoring(p)...)
	if t.VNPU.MemoryAllocatableMiB < 0 || t.VNPU.MemoryCapacityMiB < 0 {
		errs = append(errs, field.Invalid(p.Child("vnpu"), t.VNPU, "memory must not be negative"))
	}
	return append(errs, t.validateAnnotations(p)...)
}

// validateScoring reports the problems of the row's score rule and
// capabilities: each needs the node annotations it reads.
func (t DeviceType) validateScoring(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Capabilities.TopologyAware && t.Annotations.LinkScores == "" {
		errs = append(errs, field.Required(p.Child("annotations", "linkScores"), "the TopologyAware capability reads the node's link scores"))
	}
	switch t.Score {
	case ScoreNone, ScoreLinkGroups:
	case ScoreSameCard:
		if !t.Annotations.DieCards {
			errs = append(errs, field.Required(p.Child("annotations", "dieCards"), "the SameCard score reads the card of each die from the register"))
		}
	case ScoreNetworks:
		if !t.Annotations.NetworkIDs {
			errs = append(errs, field.Required(p.Child("annotations", "networkIDs"), "the Networks score reads the network of each device from the register"))
		}
	case ScoreTopologyTables:
		if t.Annotations.TopologyLosses == "" && t.Annotations.TopologyScores == "" {
			errs = append(errs, field.Required(p.Child("annotations", "topologyLosses"), "the TopologyTables score reads a node annotation"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("score"), t.Score, scoreRules()))
	}
	return errs
}

// validateAnnotations reports the problems of the row's annotations.
func (t DeviceType) validateAnnotations(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	a := p.Child("annotations")
	switch t.Annotations.Extra {
	case ExtraNone, ExtraCambricon, ExtraMthreads, ExtraKunlun, ExtraMetaxSGPU, ExtraAWSNeuron, ExtraEnflameDRS, ExtraAscend:
	default:
		errs = append(errs, field.NotSupported(a.Child("extra"), t.Annotations.Extra,
			[]ExtraAnnotations{ExtraNone, ExtraCambricon, ExtraMthreads, ExtraKunlun, ExtraMetaxSGPU, ExtraAWSNeuron, ExtraEnflameDRS, ExtraAscend}))
	}
	switch t.Annotations.RegisterFormat {
	case RegisterNone:
	case RegisterNeuron:
		if t.Cores == "" {
			errs = append(errs, field.Required(p.Child("cores"), "the Neuron format reads the node's capacity of the Cores resource"))
		}
	case RegisterJSON, RegisterLegacy, RegisterMetaxSGPU, RegisterEnflameDRS:
		if t.Annotations.Register == "" {
			errs = append(errs, field.Required(a.Child("register"), "a register format needs the annotation it is read from"))
		}
	case RegisterCapacity:
		if c := t.Annotations.Capacity; c.Resource == "" || c.PerDevice <= 0 || c.IDInfix == "" || c.Slots <= 0 {
			errs = append(errs, field.Invalid(a.Child("capacity"), c, "the Capacity format needs a resource, a positive perDevice and slots, and an ID infix"))
		}
	default:
		errs = append(errs, field.NotSupported(a.Child("registerFormat"), t.Annotations.RegisterFormat, []RegisterFormat{RegisterNone, RegisterJSON, RegisterLegacy, RegisterMetaxSGPU, RegisterCapacity, RegisterEnflameDRS, RegisterNeuron}))
	}
	for _, n := range []struct{ name, v string }{{"register", t.Annotations.Register}, {"handshake", t.Annotations.Handshake},
		{"toAllocate", t.Annotations.ToAllocate}, {"allocated", t.Annotations.Allocated}, {"useType", t.Annotations.UseType},
		{"noUseType", t.Annotations.NoUseType}, {"useUUID", t.Annotations.UseUUID}, {"noUseUUID", t.Annotations.NoUseUUID},
		{"topologyLosses", t.Annotations.TopologyLosses}, {"topologyScores", t.Annotations.TopologyScores}, {"linkScores", t.Annotations.LinkScores}} {
		if n.v == "" {
			continue
		}
		for _, msg := range validation.IsQualifiedName(n.v) {
			errs = append(errs, field.Invalid(a.Child(n.name), n.v, msg))
		}
	}
	return errs
}

// resourceField is one resource name of a row with its field name.
type resourceField struct {
	field string
	name  corev1.ResourceName
}

// resourceFields returns the row's five resource names in table order, set
// or not, each with its field name.
func (t DeviceType) resourceFields() []resourceField {
	return []resourceField{{"count", t.Count}, {"memory", t.Memory}, {"memoryPercentage", t.MemoryPercentage}, {"cores", t.Cores}, {"priority", t.Priority}}
}

// Registry is an immutable, validated set of device types, kept sorted by Type.
// The zero Registry knows no types; DefaultRegistry holds HAMi's table.
type Registry struct {
	types []DeviceType
}

// NewRegistry validates types and returns them as a registry. Type names and
// resource names must be unique across the whole registry, so every resource
// a container sets belongs to exactly one type.
//
// Every problem is reported at once: the error is a *plancore.InvalidError
// wrapping ErrInvalidRegistry (and so ErrInvalidInput) that names each bad
// field by its index in types and the bad value (types[2].type,
// types[0].memory, types[3].count for a resource another row already claims).
// A duplicated type name or resource name is reported on its later row.
func NewRegistry(types ...DeviceType) (Registry, error) {
	paths := make([]*field.Path, len(types))
	for i := range types {
		paths[i] = field.NewPath("types").Index(i)
	}
	return newRegistry(types, paths)
}

// newRegistry validates rows, naming row i by paths[i], and sorts them.
func newRegistry(rows []DeviceType, paths []*field.Path) (Registry, error) {
	var errs field.ErrorList
	typeAt := map[string]*field.Path{}
	owner := map[corev1.ResourceName]string{}
	for i, t := range rows {
		p := paths[i]
		errs = append(errs, t.validate(p)...)
		if _, dup := typeAt[t.Type]; dup && t.Type != "" {
			// Its resources are most likely the first row's again: one
			// problem, reported once.
			errs = append(errs, field.Duplicate(p.Child("type"), t.Type))
			continue
		}
		typeAt[t.Type] = p
		for _, r := range t.resourceFields() {
			if r.name == "" {
				continue
			}
			if prev, ok := owner[r.name]; ok {
				errs = append(errs, field.Invalid(p.Child(r.field), string(r.name), fmt.Sprintf("resource already claimed by type %q (%s)", prev, typeAt[prev])))
				continue
			}
			owner[r.name] = t.Type
		}
	}
	if err := invalid(ErrInvalidRegistry, errs); err != nil {
		return Registry{}, err
	}
	sorted := make([]DeviceType, len(rows))
	for i, t := range rows {
		sorted[i] = t.clone()
	}
	slices.SortFunc(sorted, func(a, b DeviceType) int { return cmp.Compare(a.Type, b.Type) })
	return Registry{types: sorted}, nil
}

// With returns a registry holding r's types plus types, where a type in types
// replaces the whole row of the same name in r. This is how a deployment
// adds a vendor or changes a row it read with Lookup; Rename renames a
// type's resources (HAMi's per-vendor resource-name flags) keeping the
// rest of its row. A replacing row that would lose an annotation of the
// row it replaces (its register and its format, handshake, allocation,
// selector or cordon annotations) is refused, naming each one lost
// (types[0].annotations.register): a fresh DeviceType given to rename
// resources would otherwise silently stop reading the vendor's devices
// and selectors. Problems are named by the index in types
// (types[1].cores); a clash with a row kept from r is reported on the new
// row, naming the kept row by its index in r.Types() (registry[20]).
func (r Registry) With(types ...DeviceType) (Registry, error) {
	var lost field.ErrorList
	for i, t := range types {
		if old, ok := r.Lookup(t.Type); ok {
			lost = append(lost, lostAnnotations(old.Annotations, t.Annotations, field.NewPath("types").Index(i).Child("annotations"))...)
		}
	}
	reg, err := r.merge(types, func(i int) *field.Path { return field.NewPath("types").Index(i) })
	if len(lost) > 0 {
		return Registry{}, plancore.Join(invalid(ErrInvalidRegistry, lost), err)
	}
	return reg, err
}

// merge is With without the annotation check, naming types[i] by path(i).
func (r Registry) merge(types []DeviceType, path func(int) *field.Path) (Registry, error) {
	replaced := map[string]bool{}
	for _, t := range types {
		replaced[t.Type] = true
	}
	merged := make([]DeviceType, 0, len(r.types)+len(types))
	paths := make([]*field.Path, 0, len(r.types)+len(types))
	for i, t := range r.types {
		if !replaced[t.Type] {
			merged = append(merged, t)
			paths = append(paths, field.NewPath("registry").Index(i))
		}
	}
	for i, t := range types {
		merged = append(merged, t)
		paths = append(paths, path(i))
	}
	return newRegistry(merged, paths)
}

// lostAnnotations names each annotation old has and repl does not.
func lostAnnotations(old, repl Annotations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	const msg = "the row replaced has %q: With replaces a whole row, so start from Lookup's row, or use Rename to rename resources"
	for _, n := range []struct{ name, old, repl string }{
		{"register", old.Register, repl.Register}, {"registerFormat", string(old.RegisterFormat), string(repl.RegisterFormat)},
		{"handshake", old.Handshake, repl.Handshake}, {"toAllocate", old.ToAllocate, repl.ToAllocate},
		{"allocated", old.Allocated, repl.Allocated}, {"useType", old.UseType, repl.UseType},
		{"noUseType", old.NoUseType, repl.NoUseType}, {"useUUID", old.UseUUID, repl.UseUUID},
		{"noUseUUID", old.NoUseUUID, repl.NoUseUUID}} {
		if n.old != "" && n.repl == "" {
			errs = append(errs, field.Required(p.Child(n.name), fmt.Sprintf(msg, n.old)))
		}
	}
	if old.Cordon && !repl.Cordon {
		errs = append(errs, field.Invalid(p.Child("cordon"), false, fmt.Sprintf(msg, "cordon")))
	}
	return errs
}

// ResourceNames are a type's resource names: what HAMi's per-vendor
// resource-name flags (resourceCountName, resourceMemoryName,
// resourceMemoryPercentageName, resourceCoreName, resourcePriorityName)
// set.
type ResourceNames struct {
	Count, Memory, MemoryPercentage, Cores, Priority corev1.ResourceName
}

// Rename returns a registry where type typ's resources are renamed: each
// non-empty name in names replaces the row's, and a node capacity the
// row derives its devices from (Annotations.Capacity.Resource) follows the
// resource it names; everything else of the row is kept. An unknown typ
// (named by type) or a name another type claims (named under rename[typ])
// is refused as NewRegistry refuses it.
func (r Registry) Rename(typ string, names ResourceNames) (Registry, error) {
	t, ok := r.Lookup(typ)
	if !ok {
		return Registry{}, invalid(ErrInvalidRegistry, field.ErrorList{field.NotFound(field.NewPath("type"), typ)})
	}
	for _, f := range []struct {
		to  *corev1.ResourceName
		new corev1.ResourceName
	}{{&t.Count, names.Count}, {&t.Memory, names.Memory}, {&t.MemoryPercentage, names.MemoryPercentage}, {&t.Cores, names.Cores}, {&t.Priority, names.Priority}} {
		if f.new == "" {
			continue
		}
		if t.Annotations.Capacity.Resource == *f.to && *f.to != "" {
			t.Annotations.Capacity.Resource = f.new
		}
		*f.to = f.new
	}
	return r.merge([]DeviceType{t}, func(int) *field.Path { return field.NewPath("rename").Key(typ) })
}

// migType is the first type with the MIG capability, "" when none: the
// type hami.io/vgpu-mig-allocations' instances are of.
func (r Registry) migType() string {
	for _, t := range r.types {
		if t.Capabilities.MIG {
			return t.Type
		}
	}
	return ""
}

// linkScoresAnnotation is the first type's link-score annotation, "" when
// no type has one.
func (r Registry) linkScoresAnnotation() string {
	for _, t := range r.types {
		if t.Annotations.LinkScores != "" {
			return t.Annotations.LinkScores
		}
	}
	return ""
}

// Types returns a copy of the registry's rows, sorted by Type.
func (r Registry) Types() []DeviceType {
	out := make([]DeviceType, len(r.types))
	for i, t := range r.types {
		out[i] = t.clone()
	}
	return out
}

// clone copies the row's slices, so a registry never shares them with a caller.
func (t DeviceType) clone() DeviceType {
	t.MemoryTiersMiB = slices.Clone(t.MemoryTiersMiB)
	t.VNPU.Templates = slices.Clone(t.VNPU.Templates)
	return t
}

// Lookup returns the row named typ.
func (r Registry) Lookup(typ string) (DeviceType, bool) {
	i, ok := slices.BinarySearchFunc(r.types, typ, func(t DeviceType, s string) int { return cmp.Compare(t.Type, s) })
	if !ok {
		return DeviceType{}, false
	}
	return r.types[i].clone(), true
}

// DefaultRegistry returns the registry of DefaultTypes. It is built once:
// a Registry never changes after construction (With returns a new one).
func DefaultRegistry() Registry { return defaultRegistry }

var defaultRegistry = func() Registry {
	r, err := NewRegistry(DefaultTypes()...)
	if err != nil {
		// DefaultTypes is a constant table checked by TestDefaultRegistry; an
		// error here is a programming error in this file, not a runtime condition.
		panic(err)
	}
	return r
}()

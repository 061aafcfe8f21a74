package gpu

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
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
// resource names a container uses to ask for it and the node lock Bind must hold
// for it. A zero resource name means the type has no such resource.
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
	// Cambricon counts memory in 256 MiB units.
	MemoryUnitMiB int32
	// DefaultMemoryMiB is the memory requested when a container sets neither
	// Memory nor MemoryPercentage (HAMi's defaultMemory). 0 means 100 % of the card.
	DefaultMemoryMiB int32
	// DefaultCores is the core percentage requested when a container does not set
	// Cores (HAMi's defaultCores). Whole-card types use 100, which makes the card
	// exclusive.
	DefaultCores int32
	// LockName is the node lock Bind must hold for this type; "" means none.
	LockName string
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

// validate checks one row on its own.
func (t DeviceType) validate() error {
	if t.Type == "" || strings.ContainsAny(t.Type, " \t\n,:;") {
		return fmt.Errorf("%w: device type name %q must be non-empty and free of spaces, ',', ':' and ';'", ErrInvalidRegistry, t.Type)
	}
	if t.Count == "" {
		return fmt.Errorf("%w: device type %s: Count resource is required", ErrInvalidRegistry, t.Type)
	}
	for _, r := range t.Resources() {
		if errs := validation.IsQualifiedName(string(r)); len(errs) > 0 {
			return fmt.Errorf("%w: device type %s: resource %q: %s", ErrInvalidRegistry, t.Type, r, strings.Join(errs, "; "))
		}
	}
	if t.LockName != "" {
		if errs := validation.IsQualifiedName(t.LockName); len(errs) > 0 {
			return fmt.Errorf("%w: device type %s: LockName %q: %s", ErrInvalidRegistry, t.Type, t.LockName, strings.Join(errs, "; "))
		}
	}
	switch {
	case t.MemoryUnitMiB < 0:
		return fmt.Errorf("%w: device type %s: MemoryUnitMiB %d is negative", ErrInvalidRegistry, t.Type, t.MemoryUnitMiB)
	case t.DefaultMemoryMiB < 0:
		return fmt.Errorf("%w: device type %s: DefaultMemoryMiB %d is negative", ErrInvalidRegistry, t.Type, t.DefaultMemoryMiB)
	case t.DefaultCores < 0 || t.DefaultCores > 100:
		return fmt.Errorf("%w: device type %s: DefaultCores %d is outside 0..100", ErrInvalidRegistry, t.Type, t.DefaultCores)
	}
	return nil
}

// Registry is an immutable, validated set of device types, kept sorted by Type.
// The zero Registry knows no types; DefaultRegistry holds HAMi's table.
type Registry struct {
	types []DeviceType
}

// NewRegistry validates types and returns them as a registry. Type names and
// resource names must be unique across the whole registry, so every resource
// a container sets belongs to exactly one type.
func NewRegistry(types ...DeviceType) (Registry, error) {
	sorted := slices.Clone(types)
	slices.SortFunc(sorted, func(a, b DeviceType) int { return cmp.Compare(a.Type, b.Type) })
	owner := map[corev1.ResourceName]string{}
	for i, t := range sorted {
		if err := t.validate(); err != nil {
			return Registry{}, err
		}
		if i > 0 && sorted[i-1].Type == t.Type {
			return Registry{}, fmt.Errorf("%w: device type %s is registered twice", ErrInvalidRegistry, t.Type)
		}
		for _, r := range t.Resources() {
			if prev, ok := owner[r]; ok {
				return Registry{}, fmt.Errorf("%w: resource %q is claimed by both %s and %s", ErrInvalidRegistry, r, prev, t.Type)
			}
			owner[r] = t.Type
		}
	}
	return Registry{types: sorted}, nil
}

// With returns a registry holding r's types plus types, where a type in types
// replaces the one of the same name in r. This is how a deployment renames
// resources (HAMi's per-vendor resource-name flags) or adds a vendor.
func (r Registry) With(types ...DeviceType) (Registry, error) {
	replaced := map[string]bool{}
	for _, t := range types {
		replaced[t.Type] = true
	}
	merged := make([]DeviceType, 0, len(r.types)+len(types))
	for _, t := range r.types {
		if !replaced[t.Type] {
			merged = append(merged, t)
		}
	}
	return NewRegistry(append(merged, types...)...)
}

// Types returns a copy of the registry's rows, sorted by Type.
func (r Registry) Types() []DeviceType {
	return slices.Clone(r.types)
}

// Lookup returns the row named typ.
func (r Registry) Lookup(typ string) (DeviceType, bool) {
	i, ok := slices.BinarySearchFunc(r.types, typ, func(t DeviceType, s string) int { return cmp.Compare(t.Type, s) })
	if !ok {
		return DeviceType{}, false
	}
	return r.types[i], true
}

// AscendChips are the Ascend chips of the default registry, one device type each.
var AscendChips = []string{"Ascend310P", "Ascend910A", "Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend910B4-1"}

// IluvatarChips are the Iluvatar chips of the default registry, one device type each.
var IluvatarChips = []string{"BI-V100", "BI-V150", "MR-V100", "MR-V50"}

// AscendType returns the registry row for one Ascend chip: huawei.com/<chip>,
// huawei.com/<chip>-memory and huawei.com/<chip>-core under the shared lock.
func AscendType(chip string) DeviceType {
	return DeviceType{
		Type:     chip,
		Count:    corev1.ResourceName("huawei.com/" + chip),
		Memory:   corev1.ResourceName("huawei.com/" + chip + "-memory"),
		Cores:    corev1.ResourceName("huawei.com/" + chip + "-core"),
		LockName: LockNvidia,
	}
}

// IluvatarType returns the registry row for one Iluvatar chip, typed
// "Iluvatar-<chip>": iluvatar.ai/<chip>-vgpu, iluvatar.ai/<chip>.vMem and
// iluvatar.ai/<chip>.vCore under the shared lock.
func IluvatarType(chip string) DeviceType {
	return DeviceType{
		Type:     "Iluvatar-" + chip,
		Count:    corev1.ResourceName("iluvatar.ai/" + chip + "-vgpu"),
		Memory:   corev1.ResourceName("iluvatar.ai/" + chip + ".vMem"),
		Cores:    corev1.ResourceName("iluvatar.ai/" + chip + ".vCore"),
		LockName: LockNvidia,
	}
}

// DefaultTypes returns HAMi v2.10's device table with its default resource
// names.
func DefaultTypes() []DeviceType {
	types := []DeviceType{
		{Type: "NVIDIA", Count: "nvidia.com/gpu", Memory: "nvidia.com/gpumem", MemoryPercentage: "nvidia.com/gpumem-percentage",
			Cores: "nvidia.com/gpucores", Priority: "nvidia.com/priority", LockName: LockNvidia},
		{Type: "MLU", Count: "cambricon.com/vmlu", Memory: "cambricon.com/mlu.smlu.vmemory", Cores: "cambricon.com/mlu.smlu.vcore",
			MemoryUnitMiB: 256, LockName: LockCambricon},
		{Type: "DCU", Count: "hygon.com/dcunum", Memory: "hygon.com/dcumem", Cores: "hygon.com/dcucores", LockName: LockNvidia},
		{Type: "Metax-SGPU", Count: "metax-tech.com/sgpu", Memory: "metax-tech.com/vmemory", Cores: "metax-tech.com/vcore", LockName: LockNvidia},
		{Type: "Metax-GPU", Count: "metax-tech.com/gpu", DefaultCores: 100},
		{Type: "XPU", Count: "kunlunxin.com/vxpu", Memory: "kunlunxin.com/vxpu-memory", LockName: LockNvidia},
		{Type: "kunlun", Count: "kunlunxin.com/xpu", DefaultCores: 100},
		{Type: "Mthreads", Count: "mthreads.com/vgpu", Memory: "mthreads.com/sgpu-memory", Cores: "mthreads.com/sgpu-core"},
		{Type: "Enflame", Count: "enflame.com/drs-gcu", Memory: "enflame.com/gcu-memory", Cores: "enflame.com/gcu-core"},
		{Type: "GCU", Count: "enflame.com/gcu", DefaultCores: 100},
		{Type: "AWSNeuron", Count: "aws.amazon.com/neuron", Cores: "aws.amazon.com/neuroncore"},
		{Type: "AMD", Count: "amd.com/gpu", Memory: "amd.com/gpumem", Cores: "amd.com/gpucores", LockName: LockNvidia},
		{Type: "Vastai", Count: "vastaitech.com/va", DefaultCores: 100, LockName: LockNvidia},
		{Type: "Biren", Count: "birentech.com/gpu", DefaultCores: 100, LockName: LockNvidia},
	}
	for _, chip := range AscendChips {
		types = append(types, AscendType(chip))
	}
	for _, chip := range IluvatarChips {
		types = append(types, IluvatarType(chip))
	}
	return types
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

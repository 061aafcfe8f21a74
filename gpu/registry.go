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
	if err := plancore.Invalid(ErrInvalidRegistry, errs); err != nil {
		return Registry{}, err
	}
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, func(a, b DeviceType) int { return cmp.Compare(a.Type, b.Type) })
	return Registry{types: sorted}, nil
}

// With returns a registry holding r's types plus types, where a type in types
// replaces the one of the same name in r. This is how a deployment renames
// resources (HAMi's per-vendor resource-name flags) or adds a vendor.
// Problems are named by the index in types (types[1].cores); a clash with a
// row kept from r is reported on the new row, naming the kept row by its
// index in r.Types() (registry[20]).
func (r Registry) With(types ...DeviceType) (Registry, error) {
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
		paths = append(paths, field.NewPath("types").Index(i))
	}
	return newRegistry(merged, paths)
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

package gpu_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore/gpu"
)

// rl builds a resource list from name/value pairs.
func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func ctr(name string, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: limits}}
}

func podWith(init, app []corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "uid-p"},
		Spec:       corev1.PodSpec{InitContainers: init, Containers: app},
	}
}

func TestDefaultRegistry(t *testing.T) {
	reg := gpu.DefaultRegistry()
	var names []string
	for _, typ := range reg.Types() {
		names = append(names, typ.Type)
	}
	want := []string{"AMD", "AWSNeuron", "Ascend310P", "Ascend910A", "Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend910B4-1", "Ascend910C",
		"BI-V100", "BI-V150", "Biren", "DCU", "Enflame", "GCU",
		"MLU", "MR-V100", "MR-V50", "Metax-GPU", "Metax-SGPU", "Mthreads", "NVIDIA", "Vastai", "XPU", "kunlun"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("types (-want +got):\n%s", diff)
	}
	locks := map[string]string{}
	for _, typ := range reg.Types() {
		locks[typ.Type] = typ.LockName
	}
	for typ, lock := range map[string]string{
		"NVIDIA": gpu.LockNvidia, "MLU": gpu.LockCambricon, "DCU": gpu.LockNvidia, "Ascend910B3": gpu.LockNvidia,
		"BI-V150": gpu.LockNvidia, "Metax-SGPU": gpu.LockNvidia, "Metax-GPU": "", "XPU": gpu.LockNvidia,
		"kunlun": "", "Mthreads": "", "Enflame": "", "GCU": "", "AWSNeuron": "", "AMD": gpu.LockNvidia,
		"Vastai": gpu.LockNvidia, "Biren": gpu.LockNvidia,
	} {
		if locks[typ] != lock {
			t.Errorf("%s lock = %q, want %q", typ, locks[typ], lock)
		}
	}
	nv, ok := reg.Lookup("NVIDIA")
	if !ok {
		t.Fatal("NVIDIA missing")
	}
	if diff := cmp.Diff([]corev1.ResourceName{"nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores", "nvidia.com/priority"}, nv.Resources()); diff != "" {
		t.Errorf("NVIDIA resources (-want +got):\n%s", diff)
	}
	if _, ok := reg.Lookup("Nope"); ok {
		t.Error("Lookup found an unknown type")
	}
}

func TestRegistryValidation(t *testing.T) {
	nv := gpu.DeviceType{Type: "X", Count: "x.io/gpu"}
	cases := []struct {
		name  string
		types []gpu.DeviceType
		field string
		value any
	}{
		{"empty type", []gpu.DeviceType{{Count: "x.io/gpu"}}, "types[0].type", ""},
		{"comma in type", []gpu.DeviceType{{Type: "a,b", Count: "x.io/gpu"}}, "types[0].type", "a,b"},
		{"no count", []gpu.DeviceType{{Type: "X"}}, "types[0].count", ""},
		{"bad resource", []gpu.DeviceType{{Type: "X", Count: "x.io/gpu", Memory: "bad name!"}}, "types[0].memory", "bad name!"},
		{"bad lock", []gpu.DeviceType{{Type: "X", Count: "x.io/gpu", LockName: "a/b/c"}}, "types[0].lockName", "a/b/c"},
		{"duplicate type", []gpu.DeviceType{nv, {Type: "X", Count: "y.io/gpu"}}, "types[1].type", "X"},
		{"shared resource", []gpu.DeviceType{nv, {Type: "Y", Count: "x.io/gpu"}}, "types[1].count", "x.io/gpu"},
		{"negative unit", []gpu.DeviceType{{Type: "X", Count: "x.io/gpu", MemoryUnitMiB: -1}}, "types[0].memoryUnitMiB", int32(-1)},
		{"negative default mem", []gpu.DeviceType{{Type: "X", Count: "x.io/gpu", DefaultMemoryMiB: -1}}, "types[0].defaultMemoryMiB", int32(-1)},
		{"cores above 100", []gpu.DeviceType{{Type: "X", Count: "x.io/gpu", DefaultCores: 101}}, "types[0].defaultCores", int32(101)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gpu.NewRegistry(tc.types...)
			if !errors.Is(err, gpu.ErrInvalidRegistry) || !errors.Is(err, gpu.ErrInvalidInput) {
				t.Fatalf("err = %v, want ErrInvalidRegistry", err)
			}
			errs := invalidErrors(err)
			if len(errs) != 1 || errs[0].Field != tc.field || (errs[0].Type != field.ErrorTypeRequired && !cmp.Equal(errs[0].BadValue, tc.value)) {
				t.Fatalf("err = %v, want one problem at %s with value %v", err, tc.field, tc.value)
			}
		})
	}
}

func TestRegistryRenameAndWith(t *testing.T) {
	reg := gpu.DefaultRegistry()
	nv, err := reg.Rename("NVIDIA", gpu.ResourceNames{Count: "example.com/vgpu", Memory: "example.com/vgpu-mem"})
	if err != nil {
		t.Fatal(err)
	}
	renamed, err := nv.With(gpu.DeviceType{Type: "Acme", Count: "acme.io/npu", LockName: "acme.io/npu.lock"})
	if err != nil {
		t.Fatal(err)
	}
	row, _ := renamed.Lookup("NVIDIA")
	old, _ := reg.Lookup("NVIDIA")
	want := old
	want.Count, want.Memory = "example.com/vgpu", "example.com/vgpu-mem"
	if diff := cmp.Diff(want, row); diff != "" {
		t.Errorf("the renamed row keeps all but its names (-want +got):\n%s", diff)
	}
	if len(renamed.Types()) != len(reg.Types())+1 {
		t.Fatalf("got %d types, want %d", len(renamed.Types()), len(reg.Types())+1)
	}
	pod := podWith(nil, []corev1.Container{ctr("a", rl("example.com/vgpu", "1", "acme.io/npu", "2", "nvidia.com/gpu", "1"))})
	got, err := gpu.DetectRequests(pod, renamed)
	if err != nil {
		t.Fatal(err)
	}
	wantReqs := []gpu.Request{
		{Container: "a", Type: "Acme", Nums: 2, MemoryPercent: 100},
		{Container: "a", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryPercent: 100},
	}
	if diff := cmp.Diff(wantReqs, got); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
	locks, err := gpu.RequiredLocks(pod, renamed)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"acme.io/npu.lock", gpu.LockNvidia}, locks); diff != "" {
		t.Fatalf("locks (-want +got):\n%s", diff)
	}
	if _, err := reg.With(gpu.DeviceType{Type: "Dup", Count: "nvidia.com/gpu"}); !errors.Is(err, gpu.ErrInvalidRegistry) {
		t.Fatalf("a second owner of nvidia.com/gpu was accepted: %v", err)
	}
	// The trap Rename replaces: a fresh row given to With would drop the
	// vendor's register, selectors and cordon; it is refused, each named.
	_, err = reg.With(gpu.DeviceType{Type: "NVIDIA", Count: "example.com/vgpu", LockName: gpu.LockNvidia})
	var fields []string
	for _, e := range invalidErrors(err) {
		fields = append(fields, e.Field)
	}
	wantFields := []string{"register", "registerFormat", "handshake", "toAllocate", "allocated", "useType", "noUseType", "useUUID", "noUseUUID", "cordon"}
	for i := range wantFields {
		wantFields[i] = "types[0].annotations." + wantFields[i]
	}
	if !errors.Is(err, gpu.ErrInvalidRegistry) || !cmp.Equal(wantFields, fields) {
		t.Errorf("a fresh NVIDIA row: %v, fields %v", err, fields)
	}
	for name, bad := range map[string]func() error{
		"an unknown type": func() error { _, err := reg.Rename("Nope", gpu.ResourceNames{Count: "x.io/y"}); return err },
		"a claimed name": func() error {
			_, err := reg.Rename("NVIDIA", gpu.ResourceNames{Count: "cambricon.com/vmlu"})
			return err
		},
		"an invalid name ": func() error { _, err := reg.Rename("NVIDIA", gpu.ResourceNames{Cores: "not a name"}); return err },
	} {
		if err := bad(); !errors.Is(err, gpu.ErrInvalidRegistry) {
			t.Errorf("Rename with %s: %v", name, err)
		}
	}
}

// TestRenameMovesTheCapacity: a whole-card type whose devices come from the
// node's capacity of its count resource reads the renamed one.
func TestRenameMovesTheCapacity(t *testing.T) {
	reg, err := gpu.DefaultRegistry().Rename("kunlun", gpu.ResourceNames{Count: "example.com/xpu"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"example.com/xpu": resource.MustParse("8")}}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Devices) != 8 || n.Devices[0].Vendor != "kunlun" {
		t.Fatalf("devices %+v", n.Devices)
	}
}

func TestDetectRequests(t *testing.T) {
	reg := gpu.DefaultRegistry()
	nvidia, _ := reg.Lookup("NVIDIA")
	nvidia.DefaultMemoryMiB, nvidia.DefaultCores = 2048, 10
	withDefaults, err := reg.With(nvidia)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		reg   gpu.Registry
		pod   *corev1.Pod
		want  []gpu.Request
		locks []string
	}{
		{
			name: "no device request",
			pod:  podWith(nil, []corev1.Container{ctr("a", rl("cpu", "1"))}),
		},
		{
			name: "zero count is no request",
			pod:  podWith(nil, []corev1.Container{ctr("a", rl("nvidia.com/gpu", "0", "nvidia.com/gpumem", "100"))}),
		},
		{
			name:  "init-only request is detected (HAMi #2640 skips it)",
			pod:   podWith([]corev1.Container{ctr("warm", rl("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"))}, []corev1.Container{ctr("a", rl("cpu", "1"))}),
			want:  []gpu.Request{{Container: "warm", Init: true, Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryMiB: 1000}},
			locks: []string{gpu.LockNvidia},
		},
		{
			name: "init containers first, then app, pod order",
			pod: podWith(
				[]corev1.Container{ctr("i1", rl("cambricon.com/vmlu", "1")), ctr("i2", rl("nvidia.com/gpu", "1"))},
				[]corev1.Container{ctr("b", rl("nvidia.com/gpu", "2", "nvidia.com/gpucores", "50")), ctr("a", rl("amd.com/gpu", "1", "nvidia.com/gpu", "1"))}),
			want: []gpu.Request{
				{Container: "i1", Init: true, Type: "MLU", Nums: 1, MemoryPercent: 100, Cores: 100},
				{Container: "i2", Init: true, Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryPercent: 100},
				{Container: "b", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 2, MemoryPercent: 100, Cores: 50},
				{Container: "a", Type: "AMD", Nums: 1, MemoryPercent: 100, Cores: 100, CoresShare: true},
				{Container: "a", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryPercent: 100},
			},
			locks: []string{gpu.LockCambricon, gpu.LockNvidia},
		},
		{
			name: "limits win over requests",
			pod: podWith(nil, []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{
				Limits:   rl("nvidia.com/gpu", "2"),
				Requests: rl("nvidia.com/gpu", "1", "nvidia.com/gpumem", "300"),
			}}}),
			want:  []gpu.Request{{Container: "a", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 2, MemoryMiB: 300}},
			locks: []string{gpu.LockNvidia},
		},
		{
			name:  "percentage above 100 is clamped",
			pod:   podWith(nil, []corev1.Container{ctr("a", rl("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "150"))}),
			want:  []gpu.Request{{Container: "a", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryPercent: 100}},
			locks: []string{gpu.LockNvidia},
		},
		{
			name:  "percentage 40",
			pod:   podWith(nil, []corev1.Container{ctr("a", rl("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "40"))}),
			want:  []gpu.Request{{Container: "a", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryPercent: 40}},
			locks: []string{gpu.LockNvidia},
		},
		{
			name:  "MiB wins over a percentage",
			pod:   podWith(nil, []corev1.Container{ctr("a", rl("nvidia.com/gpu", "1", "nvidia.com/gpumem", "512", "nvidia.com/gpumem-percentage", "40"))}),
			want:  []gpu.Request{{Container: "a", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryMiB: 512}},
			locks: []string{gpu.LockNvidia},
		},
		{
			name:  "zero percentage counts as unset",
			pod:   podWith(nil, []corev1.Container{ctr("a", rl("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "0"))}),
			want:  []gpu.Request{{Container: "a", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryPercent: 100}},
			locks: []string{gpu.LockNvidia},
		},
		{
			name:  "type defaults apply when unset",
			reg:   withDefaults,
			pod:   podWith(nil, []corev1.Container{ctr("a", rl("nvidia.com/gpu", "1"))}),
			want:  []gpu.Request{{Container: "a", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryMiB: 2048, Cores: 10}},
			locks: []string{gpu.LockNvidia},
		},
		{
			name:  "explicit zero cores beats the default",
			reg:   withDefaults,
			pod:   podWith(nil, []corev1.Container{ctr("a", rl("nvidia.com/gpu", "1", "nvidia.com/gpucores", "0", "nvidia.com/gpumem-percentage", "10"))}),
			want:  []gpu.Request{{Container: "a", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryPercent: 10}},
			locks: []string{gpu.LockNvidia},
		},
		{
			name:  "MLU memory in 256 MiB units",
			pod:   podWith(nil, []corev1.Container{ctr("a", rl("cambricon.com/vmlu", "1", "cambricon.com/mlu.smlu.vmemory", "3"))}),
			want:  []gpu.Request{{Container: "a", Type: "MLU", Nums: 1, MemoryMiB: 768, Cores: 100}},
			locks: []string{gpu.LockCambricon},
		},
		{
			name:  "milli-quantity that is a whole number",
			pod:   podWith(nil, []corev1.Container{ctr("a", rl("nvidia.com/gpu", "2000m"))}),
			want:  []gpu.Request{{Container: "a", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 2, MemoryPercent: 100}},
			locks: []string{gpu.LockNvidia},
		},
		{
			name: "non-locking vendor needs no lock",
			pod:  podWith(nil, []corev1.Container{ctr("a", rl("mthreads.com/vgpu", "1"))}),
			want: []gpu.Request{{Container: "a", Type: "Mthreads", Nums: 1, MemoryPercent: 100}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.reg
			if len(r.Types()) == 0 {
				r = reg
			}
			before := tc.pod.DeepCopy()
			got, err := gpu.DetectRequests(tc.pod, r)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			locks, err := gpu.RequiredLocks(tc.pod, r)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.locks, locks); diff != "" {
				t.Errorf("locks (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.pod); diff != "" {
				t.Errorf("pod was modified:\n%s", diff)
			}
		})
	}
}

func TestDetectRejectsBadQuantities(t *testing.T) {
	reg := gpu.DefaultRegistry()
	cases := []struct {
		name  string
		pod   *corev1.Pod
		field string
		value any
		why   string
	}{
		{"non-integer count", podWith(nil, []corev1.Container{ctr("main", rl("nvidia.com/gpu", "1.5"))}),
			"spec.containers[0].resources.limits[nvidia.com/gpu]", "1500m", "integer"},
		{"negative count", podWith(nil, []corev1.Container{ctr("main", rl("nvidia.com/gpu", "-1"))}),
			"spec.containers[0].resources.limits[nvidia.com/gpu]", "-1", "negative"},
		{"negative fraction", podWith(nil, []corev1.Container{ctr("main", rl("nvidia.com/gpumem", "-0.5"))}),
			"spec.containers[0].resources.limits[nvidia.com/gpumem]", "-500m", "negative"},
		{"overflowing memory", podWith(nil, []corev1.Container{ctr("main", rl("nvidia.com/gpu", "1", "nvidia.com/gpumem", "3000000000"))}),
			"spec.containers[0].resources.limits[nvidia.com/gpumem]", "3G", "overflows int32"},
		{"huge count", podWith(nil, []corev1.Container{ctr("main", rl("nvidia.com/gpu", "1e30"))}),
			"spec.containers[0].resources.limits[nvidia.com/gpu]", "1e30", "integer"},
		{"negative cores in an init container", podWith([]corev1.Container{ctr("setup", rl("nvidia.com/gpu", "1", "nvidia.com/gpucores", "-5"))}, nil),
			"spec.initContainers[0].resources.limits[nvidia.com/gpucores]", "-5", "negative"},
		{"MLU units overflow int32 MiB", podWith(nil, []corev1.Container{ctr("main", rl("cambricon.com/vmlu", "1", "cambricon.com/mlu.smlu.vmemory", "10000000"))}),
			"spec.containers[0].resources.limits[cambricon.com/mlu.smlu.vmemory]", "10M", "overflows int32 MiB"},
		{"a bad request when the limit is absent", func() *corev1.Pod {
			p := podWith(nil, []corev1.Container{ctr("main", nil)})
			p.Spec.Containers[0].Resources.Requests = rl("nvidia.com/gpu", "0.5")
			return p
		}(), "spec.containers[0].resources.requests[nvidia.com/gpu]", "500m", "integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gpu.DetectRequests(tc.pod, reg)
			if !errors.Is(err, gpu.ErrInvalidRequest) || !errors.Is(err, gpu.ErrInvalidInput) {
				t.Fatalf("err = %v, want ErrInvalidRequest", err)
			}
			errs := invalidErrors(err)
			if len(errs) != 1 || errs[0].Field != tc.field || !cmp.Equal(errs[0].BadValue, tc.value) || !strings.Contains(errs[0].Detail, tc.why) {
				t.Fatalf("err = %v, want one problem at %s, value %v, saying %q", err, tc.field, tc.value, tc.why)
			}
			if _, err := gpu.RequiredLocks(tc.pod, reg); !errors.Is(err, gpu.ErrInvalidRequest) || !cmp.Equal(invalidFields(err), []string{tc.field}) {
				t.Errorf("RequiredLocks err = %v, want ErrInvalidRequest at %s", err, tc.field)
			}
		})
	}
	if _, err := gpu.DetectRequests(nil, reg); !errors.Is(err, gpu.ErrInvalidRequest) || !cmp.Equal(invalidFields(err), []string{"pod"}) {
		t.Errorf("nil pod: err = %v", err)
	}
}

func TestRegistryRequestsOfOneContainer(t *testing.T) {
	got, err := gpu.DefaultRegistry().Requests(ctr("c", rl("hygon.com/dcunum", "1", "hygon.com/dcumem", "100", "hygon.com/dcucores", "20")))
	if err != nil {
		t.Fatal(err)
	}
	want := []gpu.Request{{Container: "c", Type: "DCU", Nums: 1, MemoryMiB: 100, Cores: 20}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if !slices.IsSortedFunc(gpu.DefaultRegistry().Types(), func(a, b gpu.DeviceType) int { return strings.Compare(a.Type, b.Type) }) {
		t.Fatal("Types is not sorted")
	}
}

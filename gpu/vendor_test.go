package gpu_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/plancore/plancore/gpu"
)

// vendorCase is one container of a per-vendor request table: its limits and
// requests, and the request HAMi's GenerateResourceRequests derives (nil:
// the container asks nothing of the type) or the field plancore refuses
// (HAMi returns an empty request there, so the pod is not scheduled).
type vendorCase struct {
	name     string
	limits   []string
	requests []string
	want     *gpu.Request
	badField string
}

// runVendorCases detects the requests of one container per case and keeps
// those of typ.
func runVendorCases(t *testing.T, typ string, cases []vendorCase) {
	t.Helper()
	reg := gpu.DefaultRegistry()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ctr("main", rl(tc.limits...))
			if tc.requests != nil {
				c.Resources.Requests = rl(tc.requests...)
			}
			got, err := gpu.DetectRequests(podWith(nil, []corev1.Container{c}), reg)
			if tc.badField != "" {
				if !errors.Is(err, gpu.ErrInvalidRequest) || !cmp.Equal(invalidFields(err), []string{"spec.containers[0]." + tc.badField}) {
					t.Fatalf("err = %v, want one problem at %s", err, tc.badField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var mine []gpu.Request
			for _, r := range got {
				if r.Type == typ {
					mine = append(mine, r)
				}
			}
			var want []gpu.Request
			if tc.want != nil {
				w := *tc.want
				w.Container, w.Type = "main", typ
				row, _ := gpu.DefaultRegistry().Lookup(typ)
				w.Capabilities = row.Capabilities
				want = []gpu.Request{w}
			}
			if diff := cmp.Diff(want, mine); diff != "" {
				t.Fatalf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// The cases below restate the scenarios of each vendor's
// Test_GenerateResourceRequests in HAMi (pkg/device/<vendor>/device_test.go)
// and the rules of the GenerateResourceRequests each vendor_<name>.go cites.

func TestVendorNVIDIA(t *testing.T) {
	runVendorCases(t, "NVIDIA", []vendorCase{
		{name: "count, memory and cores", limits: []string{"nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "30"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 1000, Cores: 30}},
		{name: "count only asks 100 % and cores 0", limits: []string{"nvidia.com/gpu", "1"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100}},
		{name: "from requests when limits lack it", requests: []string{"nvidia.com/gpu", "2", "nvidia.com/gpumem-percentage", "20"},
			want: &gpu.Request{Nums: 2, MemoryPercent: 20}},
		{name: "percentage above 100 clamped", limits: []string{"nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "150"},
			want: &gpu.Request{Nums: 1, MemoryPercent: 100}},
		{name: "percentage 0 ignored", limits: []string{"nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "0"},
			want: &gpu.Request{Nums: 1, MemoryPercent: 100}},
		{name: "memory wins over percentage", limits: []string{"nvidia.com/gpu", "1", "nvidia.com/gpumem", "3000", "nvidia.com/gpumem-percentage", "50"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 3000}},
		{name: "priority", limits: []string{"nvidia.com/gpu", "1", "nvidia.com/priority", "1"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Priority: 1}},
		{name: "memory overflowing int32", limits: []string{"nvidia.com/gpu", "1", "nvidia.com/gpumem", "3000000000"},
			badField: "resources.limits[nvidia.com/gpumem]"},
		{name: "no count, no request", limits: []string{"nvidia.com/gpumem", "1000"}},
	})
}

func TestVendorCambricon(t *testing.T) {
	runVendorCases(t, "MLU", []vendorCase{
		{name: "whole card defaults to cores 100", limits: []string{"cambricon.com/vmlu", "1"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Cores: 100}},
		{name: "memory in 256 MiB units", limits: []string{"cambricon.com/vmlu", "1", "cambricon.com/mlu.smlu.vmemory", "20", "cambricon.com/mlu.smlu.vcore", "10"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 5120, Cores: 10}},
		{name: "units overflowing int32 MiB", limits: []string{"cambricon.com/vmlu", "1", "cambricon.com/mlu.smlu.vmemory", "10000000"},
			badField: "resources.limits[cambricon.com/mlu.smlu.vmemory]"},
		{name: "decimal memory refused, not read as zero", limits: []string{"cambricon.com/vmlu", "1", "cambricon.com/mlu.smlu.vmemory", "1.5"},
			badField: "resources.limits[cambricon.com/mlu.smlu.vmemory]"},
		{name: "cores only", requests: []string{"cambricon.com/vmlu", "1", "cambricon.com/mlu.smlu.vcore", "20"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Cores: 20}},
	})
}

func TestVendorHygon(t *testing.T) {
	runVendorCases(t, "DCU", []vendorCase{
		{name: "whole card defaults to cores 100", limits: []string{"hygon.com/dcunum", "1"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Cores: 100}},
		{name: "memory in MiB and cores", requests: []string{"hygon.com/dcunum", "2", "hygon.com/dcumem", "4096", "hygon.com/dcucores", "40"},
			want: &gpu.Request{Nums: 2, MemoryMiB: 4096, Cores: 40}},
		{name: "negative memory", limits: []string{"hygon.com/dcunum", "1", "hygon.com/dcumem", "-1"}, badField: "resources.limits[hygon.com/dcumem]"},
		{name: "negative cores", limits: []string{"hygon.com/dcunum", "1", "hygon.com/dcucores", "-1"}, badField: "resources.limits[hygon.com/dcucores]"},
		{name: "oversized memory", limits: []string{"hygon.com/dcunum", "1", "hygon.com/dcumem", "3000000000"}, badField: "resources.limits[hygon.com/dcumem]"},
		{name: "memory without cores", limits: []string{"hygon.com/dcunum", "1", "hygon.com/dcumem", "1024"}, want: &gpu.Request{Nums: 1, MemoryMiB: 1024, Cores: 100}},
	})
}

func TestVendorAscend(t *testing.T) {
	runVendorCases(t, "Ascend910B3", []vendorCase{
		{name: "count only, cores 0", limits: []string{"huawei.com/Ascend910B3", "1"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100}},
		{name: "memory in MiB", limits: []string{"huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "16384", "huawei.com/Ascend910B3-core", "5"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 16384, Cores: 5}},
		{name: "a byte quantity is out of range", limits: []string{"huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "16Gi"},
			badField: "resources.limits[huawei.com/Ascend910B3-memory]"},
	})
}

func TestVendorIluvatar(t *testing.T) {
	runVendorCases(t, "BI-V150", []vendorCase{
		{name: "vMem 1000 is 256,000 MiB", limits: []string{"iluvatar.ai/BI-V150-vgpu", "1", "iluvatar.ai/BI-V150.vMem", "1000"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 256000}},
		{name: "count only, cores 0", limits: []string{"iluvatar.ai/BI-V150-vgpu", "2"}, want: &gpu.Request{Nums: 2, MemoryPercent: 100}},
		{name: "cores", limits: []string{"iluvatar.ai/BI-V150-vgpu", "1", "iluvatar.ai/BI-V150.vMem", "64", "iluvatar.ai/BI-V150.vCore", "50"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 16384, Cores: 50}},
		{name: "memory overflowing int32 MiB", limits: []string{"iluvatar.ai/BI-V150-vgpu", "1", "iluvatar.ai/BI-V150.vMem", "10000000"},
			badField: "resources.limits[iluvatar.ai/BI-V150.vMem]"},
		{name: "decimal memory refused", limits: []string{"iluvatar.ai/BI-V150-vgpu", "1", "iluvatar.ai/BI-V150.vMem", "0.5"},
			badField: "resources.limits[iluvatar.ai/BI-V150.vMem]"},
	})
}

func TestVendorMetax(t *testing.T) {
	runVendorCases(t, "Metax-GPU", []vendorCase{
		{name: "whole card", limits: []string{"metax-tech.com/gpu", "2"}, want: &gpu.Request{Nums: 2, MemoryPercent: 100, Cores: 100}},
	})
	runVendorCases(t, "Metax-SGPU", []vendorCase{
		{name: "bare memory is GiB", limits: []string{"metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "16", "metax-tech.com/vcore", "60"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 16384, Cores: 60}},
		{name: "Gi suffix", limits: []string{"metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "16Gi"}, want: &gpu.Request{Nums: 1, MemoryMiB: 16384, Cores: 100}},
		{name: "Mi suffix", limits: []string{"metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "1024Mi"}, want: &gpu.Request{Nums: 1, MemoryMiB: 1024, Cores: 100}},
		{name: "whole card defaults to cores 100", limits: []string{"metax-tech.com/sgpu", "1"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Cores: 100}},
		{name: "two whole cards", limits: []string{"metax-tech.com/sgpu", "2"}, want: &gpu.Request{Nums: 2, MemoryPercent: 100, Cores: 100}},
		{name: "cores only", limits: []string{"metax-tech.com/sgpu", "1", "metax-tech.com/vcore", "30"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Cores: 30}},
		{name: "requests are ignored", requests: []string{"metax-tech.com/sgpu", "1"}},
		{name: "GiB overflowing int32 MiB", limits: []string{"metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "2097153"},
			badField: "resources.limits[metax-tech.com/vmemory]"},
		// HAMi looks for a unit in the quantity's canonical text, where
		// 3000000 is "3M": bytes, so 2 MiB.
		{name: "a round number has a unit", limits: []string{"metax-tech.com/sgpu", "1", "metax-tech.com/vmemory", "3000000"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 2, Cores: 100}},
	})
}

func TestVendorKunlun(t *testing.T) {
	runVendorCases(t, "kunlun", []vendorCase{
		{name: "whole XPU, cores 0", limits: []string{"kunlunxin.com/xpu", "4"}, want: &gpu.Request{Nums: 4, MemoryPercent: 100, Rule: gpu.FitLinkGraph}},
	})
	runVendorCases(t, "XPU", []vendorCase{
		{name: "memory rounded up to the first tier", limits: []string{"kunlunxin.com/vxpu", "1", "kunlunxin.com/vxpu-memory", "20000"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 24576, Cores: 25, Rule: gpu.FitLinkGraphShared}},
		{name: "second tier", limits: []string{"kunlunxin.com/vxpu", "1", "kunlunxin.com/vxpu-memory", "24577"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 49152, Cores: 50, Rule: gpu.FitLinkGraphShared}},
		{name: "above the last tier is the whole card", limits: []string{"kunlunxin.com/vxpu", "1", "kunlunxin.com/vxpu-memory", "200000"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 98304, Cores: 100, Rule: gpu.FitLinkGraphShared}},
		{name: "unset memory is the whole card", limits: []string{"kunlunxin.com/vxpu", "2"}, want: &gpu.Request{Nums: 2, MemoryMiB: 98304, Cores: 100, Rule: gpu.FitLinkGraphShared}},
		{name: "memory from requests", requests: []string{"kunlunxin.com/vxpu", "1", "kunlunxin.com/vxpu-memory", "49152"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 49152, Cores: 50, Rule: gpu.FitLinkGraphShared}},
	})
}

func TestVendorMthreads(t *testing.T) {
	runVendorCases(t, "Mthreads", []vendorCase{
		{name: "memory in 512 MiB units split over devices", limits: []string{"mthreads.com/vgpu", "2", "mthreads.com/sgpu-memory", "8", "mthreads.com/sgpu-core", "16"},
			want: &gpu.Request{Nums: 2, MemoryMiB: 2048, Cores: 8}},
		{name: "count only, cores 0", limits: []string{"mthreads.com/vgpu", "1"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100}},
		{name: "from requests", requests: []string{"mthreads.com/vgpu", "1", "mthreads.com/sgpu-memory", "4"}, want: &gpu.Request{Nums: 1, MemoryMiB: 2048}},
		{name: "count zero asks nothing", limits: []string{"mthreads.com/vgpu", "0", "mthreads.com/sgpu-memory", "4"}},
		{name: "negative count", limits: []string{"mthreads.com/vgpu", "-1"}, badField: "resources.limits[mthreads.com/vgpu]"},
		{name: "memory overflowing int32 MiB", limits: []string{"mthreads.com/vgpu", "1", "mthreads.com/sgpu-memory", "5000000"},
			badField: "resources.limits[mthreads.com/sgpu-memory]"},
		{name: "decimal memory refused", limits: []string{"mthreads.com/vgpu", "1", "mthreads.com/sgpu-memory", "1.5"},
			badField: "resources.limits[mthreads.com/sgpu-memory]"},
	})
}

func TestVendorEnflame(t *testing.T) {
	runVendorCases(t, "Enflame", []vendorCase{
		{name: "drs-gcu is one device of that many slices", limits: []string{"enflame.com/drs-gcu", "3"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Slices: 3, Rule: gpu.FitSliceProfiles}},
		{name: "memory and cores without drs-gcu", limits: []string{"enflame.com/gcu-memory", "8192", "enflame.com/gcu-core", "25"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 8192, Cores: 25, Rule: gpu.FitSliceProfiles}},
		{name: "a zero core value still asks one device", limits: []string{"enflame.com/gcu-core", "0"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Rule: gpu.FitSliceProfiles}},
	})
	runVendorCases(t, "GCU", []vendorCase{
		{name: "whole card", limits: []string{"enflame.com/gcu", "1"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Cores: 100}},
	})
}

func TestVendorAWSNeuron(t *testing.T) {
	runVendorCases(t, "AWSNeuron", []vendorCase{
		{name: "devices take every core of each", limits: []string{"aws.amazon.com/neuron", "2"}, want: &gpu.Request{Nums: 2, MemoryPercent: 100, Cores: 2, Rule: gpu.FitNeuronRuns}},
		{name: "devices win over cores", limits: []string{"aws.amazon.com/neuron", "1", "aws.amazon.com/neuroncore", "1"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Cores: 2, Rule: gpu.FitNeuronRuns}},
		{name: "one core on one device", limits: []string{"aws.amazon.com/neuroncore", "1"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Cores: 1, Rule: gpu.FitNeuronRuns}},
		{name: "four cores on two devices", limits: []string{"aws.amazon.com/neuroncore", "4"}, want: &gpu.Request{Nums: 2, MemoryPercent: 100, Cores: 2, Rule: gpu.FitNeuronRuns}},
		{name: "three cores fill no devices", limits: []string{"aws.amazon.com/neuroncore", "3"}, badField: "resources.limits[aws.amazon.com/neuroncore]"},
		{name: "two cores are one full device", requests: []string{"aws.amazon.com/neuroncore", "2"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Cores: 2, Rule: gpu.FitNeuronRuns}},
		{name: "zero cores ask nothing", limits: []string{"aws.amazon.com/neuroncore", "0"}},
		{name: "negative cores", limits: []string{"aws.amazon.com/neuroncore", "-2"}, badField: "resources.limits[aws.amazon.com/neuroncore]"},
	})
}

func TestVendorAMD(t *testing.T) {
	runVendorCases(t, "AMD", []vendorCase{
		{name: "whole card defaults to cores 100", limits: []string{"amd.com/gpu", "1"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Cores: 100, CoresShare: true}},
		{name: "memory and cores", limits: []string{"amd.com/gpu", "1", "amd.com/gpumem", "8192", "amd.com/gpucores", "50"},
			want: &gpu.Request{Nums: 1, MemoryMiB: 8192, Cores: 50, CoresShare: true}},
		{name: "cores 0 refused", limits: []string{"amd.com/gpu", "1", "amd.com/gpucores", "0"}, badField: "resources.limits[amd.com/gpucores]"},
		{name: "cores 101 refused", limits: []string{"amd.com/gpu", "1", "amd.com/gpucores", "101"}, badField: "resources.limits[amd.com/gpucores]"},
		{name: "cores 100 accepted", limits: []string{"amd.com/gpu", "1", "amd.com/gpucores", "100"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100, Cores: 100, CoresShare: true}},
		{name: "requests are ignored", requests: []string{"amd.com/gpu", "1"}},
		{name: "zero count asks nothing", limits: []string{"amd.com/gpu", "0"}},
		{name: "negative memory", limits: []string{"amd.com/gpu", "1", "amd.com/gpumem", "-1"}, badField: "resources.limits[amd.com/gpumem]"},
		{name: "memory overflowing int32", limits: []string{"amd.com/gpu", "1", "amd.com/gpumem", "3000000000"}, badField: "resources.limits[amd.com/gpumem]"},
	})
}

func TestVendorVastaiBiren(t *testing.T) {
	runVendorCases(t, "Vastai", []vendorCase{
		{name: "whole card, cores 0", limits: []string{"vastaitech.com/va", "1"}, want: &gpu.Request{Nums: 1, MemoryPercent: 100}},
	})
	runVendorCases(t, "Biren", []vendorCase{
		{name: "whole card, cores 0", requests: []string{"birentech.com/gpu", "2"}, want: &gpu.Request{Nums: 2, MemoryPercent: 100}},
	})
}

// TestEveryDefaultTypeHasAVendorTest keeps the tables above complete: each
// default type is derived by one of them.
func TestEveryDefaultTypeHasAVendorTest(t *testing.T) {
	tested := map[string]bool{"NVIDIA": true, "MLU": true, "DCU": true, "Ascend910B3": true, "BI-V150": true, "Metax-GPU": true,
		"Metax-SGPU": true, "kunlun": true, "XPU": true, "Mthreads": true, "Enflame": true, "GCU": true, "AWSNeuron": true, "AMD": true,
		"Vastai": true, "Biren": true}
	chipRows := map[string]bool{}
	for _, c := range gpu.AscendChips() {
		chipRows[c] = true
	}
	for _, c := range gpu.IluvatarChips() {
		chipRows[c] = true
	}
	for _, typ := range gpu.DefaultRegistry().Types() {
		if !tested[typ.Type] && !chipRows[typ.Type] {
			t.Errorf("type %s has no vendor table test", typ.Type)
		}
	}
}

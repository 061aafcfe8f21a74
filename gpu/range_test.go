package gpu_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/gpu"
)

// TestRegisterValuesInRange feeds every register format a device reporting
// more than a Device can hold (2^55 of memory, cores or count, and the int64
// maximum where the value is a capacity) and negative values. Each decoder
// either refuses the node naming the value, or saturates it at
// math.MaxInt32 (memory) or MaxCapacityDevices (devices): never a silent
// wrap to zero or below, which would read a huge card as having nothing.
// Fails when capacity-derived memory is multiplied in int64 (Cambricon read
// as 0 MiB) or the card count is rounded up by adding first (a panic).
func TestRegisterValuesInRange(t *testing.T) {
	huge := strconv.FormatInt(1<<55, 10)
	maxInt64 := strconv.FormatInt(math.MaxInt64, 10)
	capacity := func(kv ...string) *corev1.Node {
		rl := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			v, err := strconv.ParseInt(kv[i+1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			rl[corev1.ResourceName(kv[i])] = *resource.NewQuantity(v, resource.DecimalSI)
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Capacity: rl}}
	}
	annotated := func(k, v string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{k: v}}}
	}
	for _, tc := range []struct {
		name    string
		node    *corev1.Node
		refused string // the field named, or "" when the node decodes
		memory  int32  // each device's memory when it decodes
		devices int
	}{
		{name: "Cambricon memory of 2^55 units saturates", node: capacity("cambricon.com/mlu.smlu.vcore", "100", "cambricon.com/mlu.smlu.vmemory", huge),
			memory: math.MaxInt32, devices: 1},
		{name: "Cambricon memory of 2^47 units (2^55 MiB) saturates", node: capacity("cambricon.com/mlu.smlu.vcore", "100", "cambricon.com/mlu.smlu.vmemory", strconv.FormatInt(1<<47, 10)),
			memory: math.MaxInt32, devices: 1},
		{name: "Cambricon memory over huge cores shares exactly", node: capacity("cambricon.com/mlu.smlu.vcore", maxInt64, "cambricon.com/mlu.smlu.vmemory", maxInt64),
			memory: 25600, devices: gpu.MaxCapacityDevices},
		{name: "Cambricon cores at the int64 maximum", node: capacity("cambricon.com/mlu.smlu.vcore", maxInt64),
			devices: gpu.MaxCapacityDevices},
		{name: "Kunlun count at the int64 maximum", node: capacity("kunlunxin.com/xpu", maxInt64), memory: 98304, devices: gpu.MaxCapacityDevices},
		{name: "Neuron count at the int64 maximum", node: capacity("aws.amazon.com/neuron", maxInt64, "aws.amazon.com/neuroncore", maxInt64),
			devices: gpu.MaxCapacityDevices},
		{name: "JSON register memory of 2^55", node: annotated("hami.io/node-nvidia-register", `[{"id":"a","count":1,"devmem":`+huge+`,"devcore":100,"health":true}]`),
			refused: "metadata.annotations[hami.io/node-nvidia-register]"},
		{name: "JSON register negative cores", node: annotated("hami.io/node-nvidia-register", `[{"id":"a","count":1,"devmem":1,"devcore":-1,"health":true}]`),
			refused: "node.devices[0].cores"},
		{name: "legacy register count of 2^55", node: annotated("hami.io/node-dcu-register", "DCU-0,"+huge+",16384,100,DCU-Z100,0,true:"),
			refused: "metadata.annotations[hami.io/node-dcu-register][0].count"},
		{name: "legacy register negative memory", node: annotated("hami.io/node-dcu-register", "DCU-0,4,-1,100,DCU-Z100,0,true:"),
			refused: "node.devices[0].memoryMiB"},
		{name: "Metax register memory of 2^55", node: annotated("metax-tech.com/node-gpu-devices", `[{"uuid":"m","totalVRam":`+huge+`}]`),
			refused: "metadata.annotations[metax-tech.com/node-gpu-devices]"},
		{name: "Metax register negative count", node: annotated("metax-tech.com/node-gpu-devices", `[{"uuid":"m","totalDevCount":-1}]`),
			refused: "node.devices[0].count"},
		{name: "Enflame capacity of 2^55 as a string saturates", node: annotated("enflame.com/gcu-drs-capacity", `{"devices":[{"index":"0","capacity":"`+huge+`"}],"profiles":{"1g.8gb":"1"}}`),
			memory: 8192, devices: 1},
		{name: "Enflame capacity of 2^55 as a number", node: annotated("enflame.com/gcu-drs-capacity", `{"devices":[{"index":"0","capacity":`+huge+`}],"profiles":{"1g.8gb":"1"}}`),
			refused: "metadata.annotations[enflame.com/gcu-drs-capacity].devices[0].capacity"},
		{name: "Enflame profile memory of 2^55 GiB", node: annotated("enflame.com/gcu-drs-capacity", `{"devices":[{"index":"0","capacity":1}],"profiles":{"1g.`+huge+`gb":"1"}}`),
			refused: "metadata.annotations[enflame.com/gcu-drs-capacity].profiles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := gpu.DecodeNode(tc.node, gpu.DefaultRegistry())
			if err != nil {
				t.Fatal(err)
			}
			if tc.refused != "" {
				if len(n.Devices) != 0 || !contains(unreadableFields(n), tc.refused) {
					t.Fatalf("DecodeNode = %d devices, unreadable %v; want the vendor unreadable naming %s", len(n.Devices), unreadableFields(n), tc.refused)
				}
				return
			}
			if len(n.Devices) != tc.devices {
				t.Fatalf("%d devices, want %d", len(n.Devices), tc.devices)
			}
			for _, d := range n.Devices {
				if d.MemoryMiB != tc.memory || d.Count < 0 || d.Cores < 0 {
					t.Fatalf("device %s: memory %d MiB, count %d, cores %d; want memory %d and nothing negative", d.ID, d.MemoryMiB, d.Count, d.Cores, tc.memory)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzDecodeCapacity reads capacity-derived devices (Cambricon's cores and
// memory, Kunlun's XPUs, AWS Neuron's devices and cores) from any int64
// capacities: never a panic, never more than MaxCapacityDevices a type,
// never a negative amount, and a positive memory capacity never read as a
// card without memory. Finds the card count rounded up by adding first (a
// panic near the int64 maximum) and memory multiplied in int64 (0 MiB).
func FuzzDecodeCapacity(f *testing.F) {
	f.Add(int64(200), int64(128), int64(8), int64(4), int64(8))
	f.Add(int64(100), int64(1)<<55, int64(0), int64(0), int64(0))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(-1))
	reg := gpu.DefaultRegistry()
	f.Fuzz(func(t *testing.T, vcore, vmem, xpu, neuron, neuronCores int64) {
		q := func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.DecimalSI) }
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			"cambricon.com/mlu.smlu.vcore": q(vcore), "cambricon.com/mlu.smlu.vmemory": q(vmem),
			"kunlunxin.com/xpu": q(xpu), "aws.amazon.com/neuron": q(neuron), "aws.amazon.com/neuroncore": q(neuronCores),
		}}}
		n, err := gpu.DecodeNode(node, reg)
		if err != nil {
			t.Fatalf("capacities refused: %v", err)
		}
		per := map[string]int{}
		for _, d := range n.Devices {
			per[d.Vendor]++
			if d.MemoryMiB < 0 || d.Cores < 0 || d.Count < 0 {
				t.Fatalf("device %+v has a negative amount", d)
			}
			// Each card's share is at least 25,600 MiB when the memory
			// units are no fewer than the cores (256 MiB a unit, 100 cores
			// a card).
			if d.Vendor == "MLU" && vmem > 0 && vmem >= vcore && d.MemoryMiB == 0 {
				t.Fatalf("device %+v: %d units of memory over %d cores read as none", d, vmem, vcore)
			}
		}
		for v, k := range per {
			if k > gpu.MaxCapacityDevices {
				t.Fatalf("%d devices of %s", k, v)
			}
		}
	})
}

// TestUsageValuesInRange: what a pod holds is read without wrapping. An
// amount beyond int32 or negative is refused, naming it (the pod's usage is
// unknown, so its node must not be fitted as if the pod held nothing), and
// the app containers' amounts on one device add up saturating at
// math.MaxInt32, never wrapping to a small or negative usage.
func TestUsageValuesInRange(t *testing.T) {
	reg := gpu.DefaultRegistry()
	pod := func(v string) *corev1.Pod {
		p := twoApps(nil, nil)
		p.Annotations = map[string]string{"hami.io/vgpu-node": "n", "hami.io/vgpu-devices-allocated": v}
		return p
	}
	huge := strconv.FormatInt(1<<55, 10)
	for v, field := range map[string]string{
		"GPU-0,NVIDIA," + huge + ",0:;": "metadata.annotations[hami.io/vgpu-devices-allocated].containers[0].devices[0].memoryMiB",
		"GPU-0,NVIDIA,0," + huge + ":;": "metadata.annotations[hami.io/vgpu-devices-allocated].containers[0].devices[0].cores",
		"GPU-0,NVIDIA,-1,0:;":           "metadata.annotations[hami.io/vgpu-devices-allocated].containers[0].devices[0].memoryMiB",
	} {
		if u, err := gpu.DecodePodUsage(pod(v), reg); !contains(invalidFields(err), field) {
			t.Errorf("%q: %+v, %v; want refused naming %s", v, u, err, field)
		}
	}
	u, err := gpu.DecodePodUsage(pod("GPU-0,NVIDIA,2147483647,2147483647:;GPU-0,NVIDIA,2147483647,2147483647:;"), reg)
	if err != nil {
		t.Fatal(err)
	}
	if a := u.Allocations[0]; a.MemoryMiB != math.MaxInt32 || a.Cores != math.MaxInt32 || a.Slots != 2 {
		t.Fatalf("two app containers at the int32 maximum add up to %+v", a)
	}
}

// TestPolicyListsBounded: a policy chain, weight list or model list longer
// than MaxPolicyEntries, or a device id list longer than MaxUUIDEntries, is
// refused with one error naming the annotation, not one per entry (a
// 256 KiB annotation of "x," would cost an error per two bytes) nor a
// comparison of every entry with every candidate device. Fails when the
// lists are split without their bounds.
func TestPolicyListsBounded(t *testing.T) {
	for key, n := range map[string]int{gpu.AnnoGPUPolicy: gpu.MaxPolicyEntries, gpu.AnnoScoringWeights: gpu.MaxPolicyEntries,
		gpu.AnnoUseGPUType: gpu.MaxPolicyEntries, gpu.AnnoNoUseGPUType: gpu.MaxPolicyEntries, gpu.AnnoUseGPUUUID: gpu.MaxUUIDEntries, gpu.AnnoNoUseGPUUUID: gpu.MaxUUIDEntries} {
		p := twoApps(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}, nil)
		p.Annotations = map[string]string{key: strings.Repeat("x,", n)}
		_, err := gpu.FitRequestFromPod(p, gpu.DefaultRegistry())
		if got := invalidFields(err); len(got) != 1 || got[0] != "metadata.annotations["+key+"]" {
			t.Errorf("%s of %d entries: fields %v, want the annotation once", key, n+1, got)
		}
		p.Annotations = map[string]string{key: strings.Repeat("x,", n-1) + "x"}
		if _, err := gpu.FitRequestFromPod(p, gpu.DefaultRegistry()); contains(invalidFields(err), "metadata.annotations["+key+"]") {
			t.Errorf("%s of %d entries refused as too long: %v", key, n, err)
		}
	}
}

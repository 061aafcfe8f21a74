package gpu_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/gpu"
)

// genRulesNode is a node of Enflame DRS cards, whole Kunlun XPUs, Kunlun
// vXPUs and Ascend 910C NPUs with random health and usage.
func genRulesNode(t *rapid.T) gpu.Node {
	n := gpu.Node{Name: "n", SliceProfiles: []gpu.SliceProfile{{Name: "1g.6gb", ID: "0"}, {Name: "3g.20gb", ID: "1"}, {Name: "6g.40gb", ID: "2"}}}
	add := func(vendor string, k int, count, mem, cores int32) {
		for i := range k {
			d := gpu.Device{ID: fmt.Sprintf("%s-%d", vendor, i), Index: i, Vendor: vendor, Model: vendor, Count: count, MemoryMiB: mem, Cores: cores,
				Healthy: rapid.Float64Range(0, 1).Draw(t, "health") < 0.9}
			if rapid.Bool().Draw(t, "busy") {
				d.Used = rapid.Int32Range(1, count).Draw(t, "used")
				d.UsedMemoryMiB = rapid.Int32Range(0, mem).Draw(t, "usedMem")
				d.UsedCores = rapid.Int32Range(0, cores).Draw(t, "usedCores")
			}
			n.Devices = append(n.Devices, d)
		}
	}
	add("Enflame", rapid.IntRange(0, 3).Draw(t, "enflame"), 6, 40960, 100)
	add("kunlun", rapid.SampledFrom([]int{0, 4, 8}).Draw(t, "kunlun"), 100, 98304, 100)
	add("XPU", rapid.SampledFrom([]int{0, 4, 8}).Draw(t, "xpu"), 4, 98304, 100)
	add("Ascend910C", rapid.IntRange(0, 8).Draw(t, "npu"), 4, 65536, 100)
	add("AWSNeuron", rapid.IntRange(0, 8).Draw(t, "neuron"), 2, 0, 2)
	n.InstanceType = rapid.SampledFrom([]string{"", "trn1.32xlarge", "inf2.48xlarge"}).Draw(t, "instance")
	return n
}

// genRulesContainer is one container asking one of those types.
func genRulesContainer(t *rapid.T, name string) corev1.Container {
	switch rapid.IntRange(0, 5).Draw(t, "kind") {
	case 5:
		if rapid.Bool().Draw(t, "byDevice") {
			return ctr(name, rl("aws.amazon.com/neuron", fmt.Sprint(rapid.IntRange(1, 4).Draw(t, "neurons"))))
		}
		return ctr(name, rl("aws.amazon.com/neuroncore", fmt.Sprint(rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "neuroncores"))))
	case 0:
		return ctr(name, rl("enflame.com/drs-gcu", fmt.Sprint(rapid.SampledFrom([]int{1, 2, 3, 6}).Draw(t, "slices"))))
	case 1:
		return ctr(name, rl("enflame.com/gcu-memory", fmt.Sprint(rapid.IntRange(1, 50).Draw(t, "gib")), "enflame.com/gcu-core", fmt.Sprint(rapid.IntRange(1, 100).Draw(t, "core"))))
	case 2:
		return ctr(name, rl("kunlunxin.com/xpu", fmt.Sprint(rapid.SampledFrom([]int{1, 2, 3, 4, 8}).Draw(t, "xpus"))))
	case 3:
		return ctr(name, rl("kunlunxin.com/vxpu", fmt.Sprint(rapid.IntRange(1, 4).Draw(t, "vxpus")), "kunlunxin.com/vxpu-memory", fmt.Sprint(rapid.SampledFrom([]int{20000, 49152, 98304}).Draw(t, "vmem"))))
	default:
		return ctr(name, rl("huawei.com/Ascend910C", fmt.Sprint(rapid.IntRange(1, 4).Draw(t, "npus")), "huawei.com/Ascend910C-memory", fmt.Sprint(rapid.SampledFrom([]int{16384, 32768, 65536}).Draw(t, "npuMem"))))
	}
}

// TestPropVendorRulesNeverOverassign: whatever the node's usage, a fit
// under the vendor rules never gives a device more memory than it has left
// (nor more cores, where the rule checks them), never gives a whole Kunlun
// XPU that is in use, shares a vXPU only within one memory tier, and gives
// a 910C request of several NPUs whole modules only; a run of Neuron
// devices takes unused ones only (by the core check).
// Seen failing with roomSlices' memory check removed (the 6g profile given
// beside 1 MiB in use), with chooseModulePairs taking half modules (one NPU
// of a module in a three-NPU request), with the whole-XPU rule ignoring
// use, and with HAMi's Neuron runs taken as indices unchecked (a used
// device whose index a free run of positions names).
func TestPropVendorRulesNeverOverassign(t *testing.T) {
	reg := gpu.DefaultRegistry()
	rapid.Check(t, func(t *rapid.T) {
		node := genRulesNode(t)
		var cs []corev1.Container
		for i := range rapid.IntRange(1, 2).Draw(t, "containers") {
			cs = append(cs, genRulesContainer(t, fmt.Sprintf("c%d", i)))
		}
		pod := podWith(nil, cs)
		if rapid.Bool().Draw(t, "mutex") {
			pod.Annotations = map[string]string{"hami.io/gpu-scheduler-policy": "mutex"}
		}
		fr, err := gpu.FitRequestFromPod(pod, reg)
		if err != nil {
			t.Fatal(err)
		}
		nf, err := fitOne(node, fr)
		if err != nil {
			t.Fatal(err)
		}
		if !nf.Fits {
			return
		}
		byID := map[string]gpu.Device{}
		for _, d := range node.Devices {
			byID[d.ID] = d
		}
		mem, cores := map[string]int64{}, map[string]int64{}
		for _, ca := range nf.Containers {
			modules := map[int]int{}
			for _, a := range ca.Devices {
				d := byID[a.UUID]
				mem[a.UUID] += int64(a.MemoryMiB)
				cores[a.UUID] += int64(a.Cores)
				if int64(d.UsedMemoryMiB)+mem[a.UUID] > int64(d.MemoryMiB) {
					t.Fatalf("%s: %d MiB given, %d of %d used", a.UUID, mem[a.UUID], d.UsedMemoryMiB, d.MemoryMiB)
				}
				switch d.Vendor {
				case "Enflame", "Ascend910C", "AWSNeuron":
					if int64(d.UsedCores)+cores[a.UUID] > int64(d.Cores) {
						t.Fatalf("%s: %d cores given, %d of %d used", a.UUID, cores[a.UUID], d.UsedCores, d.Cores)
					}
				case "kunlun":
					if d.Used > 0 {
						t.Fatalf("%s: a used whole XPU given", a.UUID)
					}
				case "XPU":
					if d.Used > 0 && d.UsedMemoryMiB/d.Used != a.MemoryMiB {
						t.Fatalf("%s: %d MiB shared with requests of %d", a.UUID, a.MemoryMiB, d.UsedMemoryMiB/d.Used)
					}
				}
				if d.Vendor == "Ascend910C" {
					modules[d.Index/2]++
				}
			}
			if len(ca.Devices) > 1 && len(modules) > 0 {
				for m, k := range modules {
					if k != 2 {
						t.Fatalf("910C module %d given %d NPUs of %d", m, k, len(ca.Devices))
					}
				}
			}
		}
	})
}

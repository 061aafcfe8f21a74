package gpu_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/gpu"
)

// npuNode decodes a node of Ascend910C NPUs of 65,536 MiB, indices 0..n-1,
// then marks the listed indices unhealthy and gives used slots to others.
func npuNode(t *testing.T, n int, unhealthy []int, used map[int]int32) gpu.Node {
	t.Helper()
	var devs []string
	for i := range n {
		devs = append(devs, fmt.Sprintf(`{"id":"npu-%d","index":%d,"count":4,"devmem":65536,"devcore":100,"type":"Ascend910C","health":true}`, i, i))
	}
	node, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a3", Annotations: map[string]string{
		"hami.io/node-register-Ascend910C": "[" + strings.Join(devs, ",") + "]"}}}, gpu.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range unhealthy {
		node.Devices[i].Healthy = false
	}
	for i, u := range used {
		node.Devices[i].Used, node.Devices[i].UsedMemoryMiB, node.Devices[i].UsedCores = u, 65536, 100
	}
	return node
}

// TestModulePairsFit restates HAMi's TestDevices_Fit_910C and the rest of
// computeBestCombination910C: a request of more than one 910C NPU gets
// whole modules (indices 2k and 2k+1), the best candidate's module first.
func TestModulePairsFit(t *testing.T) {
	cases := []struct {
		name      string
		nums      string
		node      func(t *testing.T) gpu.Node
		want      string
		wantNodes string
	}{
		{name: "HAMi's case: three free NPUs, one whole module", nums: "2", node: func(t *testing.T) gpu.Node { return npuNode(t, 3, nil, nil) },
			want: "npu-1,npu-0"},
		{name: "one NPU is any NPU, the highest index first on a tie", nums: "1", node: func(t *testing.T) gpu.Node { return npuNode(t, 3, nil, nil) },
			want: "npu-2"},
		{name: "a half-used module is skipped", nums: "2", node: func(t *testing.T) gpu.Node { return npuNode(t, 4, nil, map[int]int32{3: 4}) },
			want: "npu-1,npu-0"},
		{name: "two whole modules for four", nums: "4", node: func(t *testing.T) gpu.Node { return npuNode(t, 6, []int{0}, nil) },
			want: "npu-5,npu-4,npu-3,npu-2"},
		{name: "no whole module: HAMi's 0/2", nums: "2", node: func(t *testing.T) gpu.Node { return npuNode(t, 4, []int{1, 2}, nil) },
			want: "0/2 AllocatedCardsInsufficientRequest, 2/2 CardNotHealth"},
		{name: "one whole module for four", nums: "4", node: func(t *testing.T) gpu.Node { return npuNode(t, 4, nil, map[int]int32{0: 4}) },
			want: "1/4 CardTimeSlicingExhausted, 2/4 AllocatedCardsInsufficientRequest"},
		{name: "three NPUs take two modules, which is not three", nums: "3", node: func(t *testing.T) gpu.Node { return npuNode(t, 4, nil, nil) },
			want: "4/3 AllocatedCardsInsufficientRequest"},
		{name: "more NPUs than the node has", nums: "6", node: func(t *testing.T) gpu.Node { return npuNode(t, 4, nil, nil) },
			want: "NodeInsufficientDevice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(nil, []corev1.Container{ctr("c", rl("huawei.com/Ascend910C", tc.nums))})
			nf := fitPod(t, tc.node(t), pod)
			got := nf.Message()
			if nf.Fits {
				var ids []string
				for _, a := range nf.Containers[0].Devices {
					ids = append(ids, a.UUID)
				}
				got = strings.Join(ids, ",")
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestVNPUTemplate restates HAMi's Ascend trimMemory over the chart's
// templates.
func TestVNPUTemplate(t *testing.T) {
	reg := gpu.DefaultRegistry()
	cases := []struct {
		chip     string
		mem      int32
		wantName string
		wantMem  int32
	}{
		{"Ascend910B3", 1, "vir05_1c_16g", 16384},
		{"Ascend910B3", 16384, "vir05_1c_16g", 16384},
		{"Ascend910B3", 16385, "vir10_3c_32g", 32768},
		{"Ascend910B3", 40000, "", 65536},
		{"Ascend910B3", 65537, "", 0},
		{"Ascend310P", 3000, "vir01", 3072},
		{"Ascend310P", 22000, "", 21527},
		{"Ascend910A", 17476, "vir16", 17476},
		{"Ascend910B4", 9000, "vir10_3c_16g", 16384},
		{"Ascend910C", 20000, "vir10_3c_32g", 32768},
	}
	for _, c := range cases {
		row, _ := reg.Lookup(c.chip)
		name, mem := row.VNPU.Template(c.mem)
		if name != c.wantName || mem != c.wantMem {
			t.Errorf("%s %d MiB: %q %d, want %q %d", c.chip, c.mem, name, mem, c.wantName, c.wantMem)
		}
	}
}

// TestFilterAnnotationsAscend restates HAMi's Ascend PatchAnnotations:
// the to-allocate and allocated pair, predicate-time, and huawei.com/<chip>
// naming each device's template (none under the hami-core soft split).
func TestFilterAnnotationsAscend(t *testing.T) {
	node := npuNode(t, 2, nil, nil)
	soft := twoApps(nil, nil)
	soft.Annotations = map[string]string{"huawei.com/vnpu-mode": "hami-core"}
	runFilterCases(t, []filterCase{
		{name: "a template and a whole NPU", node: node, pod: twoApps(nil, nil), containers: []gpu.ContainerAllocation{
			{Container: "a", Devices: []gpu.Allocation{{UUID: "npu-1", Type: "Ascend910C", MemoryMiB: 16384, Cores: 0}}},
			{Container: "b", Devices: []gpu.Allocation{{UUID: "npu-0", Type: "Ascend910C", MemoryMiB: 65536, Cores: 100}}},
		}, want: map[string]string{
			"hami.io/Ascend910C-devices-to-allocate": "npu-1,Ascend910C,16384,0:;npu-0,Ascend910C,65536,100:;",
			"hami.io/Ascend910C-devices-allocated":   "npu-1,Ascend910C,16384,0:;npu-0,Ascend910C,65536,100:;",
			"predicate-time":                         "1781431200",
			"huawei.com/Ascend910C":                  `[{"UUID":"npu-1","temp":"vir05_1c_16g","memory":16384},{"UUID":"npu-0","memory":65536,"core":100}]`,
		}},
		{name: "hami-core names no template", node: node, pod: soft, containers: []gpu.ContainerAllocation{
			{Container: "a", Devices: []gpu.Allocation{{UUID: "npu-1", Type: "Ascend910C", MemoryMiB: 16384, Cores: 30}}},
		}, want: map[string]string{
			"hami.io/Ascend910C-devices-to-allocate": "npu-1,Ascend910C,16384,30:;;",
			"hami.io/Ascend910C-devices-allocated":   "npu-1,Ascend910C,16384,30:;;",
			"predicate-time":                         "1781431200",
			"huawei.com/Ascend910C":                  `[{"UUID":"npu-1","memory":16384,"core":30}]`,
		}},
		{name: "a pod asking none on an Ascend node", node: node, pod: twoApps(nil, nil), want: map[string]string{
			"hami.io/Ascend910C-devices-to-allocate": ";;",
			"hami.io/Ascend910C-devices-allocated":   ";;",
			"predicate-time":                         "1781431200",
			"huawei.com/Ascend910C":                  "null",
		}},
	})
}

// TestAscendSoftSplit restates HAMi's Ascend Fit under huawei.com/vnpu-mode
// hami-core (device_test.go's hami-core cases): the node must say
// hami-vnpu-core "true" (HAMi's chart default for nodes without it is
// false), and every NPU then counts 100 cores instead of its AI cores.
func TestAscendSoftSplit(t *testing.T) {
	node := func(anno string, usedCores int32) gpu.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b3", Annotations: map[string]string{
			"hami.io/node-register-Ascend910B3": `[{"id":"npu-0","count":4,"devmem":65536,"devcore":20,"type":"Ascend910B3","health":true},` +
				`{"id":"npu-1","index":1,"count":4,"devmem":65536,"devcore":20,"type":"Ascend910B3","health":true}]`}}}
		if anno != "" {
			n.Annotations["hami-vnpu-core"] = anno
		}
		out, err := gpu.DecodeNode(n, gpu.DefaultRegistry())
		if err != nil {
			t.Fatal(err)
		}
		for i := range out.Devices {
			out.Devices[i].Used, out.Devices[i].UsedCores = min(usedCores, 1), usedCores
		}
		return out
	}
	cases := []struct {
		name, mode, nodeAnno, cores string
		usedCores                   int32
		want                        string
	}{
		{name: "hard split: 50 is more than 20 AI cores", cores: "50", want: "2/2 CardInsufficientCore"},
		{name: "hami-core on a node without the annotation", mode: "hami-core", cores: "50", want: "1/2 ModeNotFit"},
		{name: "hami-core on a node saying false", mode: "hami-core", nodeAnno: "false", cores: "50", want: "1/2 ModeNotFit"},
		{name: "hami-core on a node saying true: 50 of 100", mode: "hami-core", nodeAnno: "true", cores: "50", want: "npu-1 50"},
		{name: "hard split: 20 AI cores used exhaust the NPU", cores: "0", usedCores: 20, want: "2/2 CardComputeUnitsExhausted"},
		{name: "hami-core: 20 of 100 used leaves room", mode: "hami-core", nodeAnno: "true", cores: "0", usedCores: 20, want: "npu-1 0"},
		{name: "another mode is the hard split", mode: "vnpu", nodeAnno: "true", cores: "50", want: "2/2 CardInsufficientCore"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(nil, []corev1.Container{ctr("c", rl("huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "16384", "huawei.com/Ascend910B3-core", tc.cores))})
			if tc.mode != "" {
				pod.Annotations = map[string]string{"huawei.com/vnpu-mode": tc.mode}
			}
			nf := fitPod(t, node(tc.nodeAnno, tc.usedCores), pod)
			got := nf.Message()
			if nf.Fits {
				a := nf.Containers[0].Devices[0]
				got = fmt.Sprintf("%s %d", a.UUID, a.Cores)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

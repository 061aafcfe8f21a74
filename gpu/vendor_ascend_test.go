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

// npuRegisterNode decodes a node whose chip register lists one NPU per
// network given ("" for none), as HAMi's Ascend device tests write them:
// 100 slots, memMiB, 100 cores, healthy, index 0 (omitted).
func npuRegisterNode(t *testing.T, chip string, networks []string, memMiB int) gpu.Node {
	t.Helper()
	var entries []string
	for i, nw := range networks {
		custom := ""
		if nw != "" {
			custom = `,"custominfo":{"NetworkID":` + nw + `}`
		}
		entries = append(entries, fmt.Sprintf(`{"id":"dev-%d","count":100,"devmem":%d,"devcore":100,"type":%q,"health":true%s}`, i, memMiB, chip, custom))
	}
	node, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n",
		Annotations: map[string]string{"hami.io/node-register-" + chip: "[" + strings.Join(entries, ",") + "]"}}}, gpu.DefaultRegistry())
	if err != nil || len(node.Devices) != len(networks) {
		t.Fatalf("decoding %s's register: %v %+v", chip, err, node.Unreadable)
	}
	return node
}

// share is most/total in float32, as HAMi's ScoreNode divides.
func share(most, total int) float32 { return float32(most) / float32(total) }

// TestFitDevicesAsAscendNetworkFit restates HAMi's Ascend Fit test "fit
// success. schedule by NetworkID" (pkg/device/ascend/device_test.go, v2.10,
// TestDevices_Fit, which runs every case for every chip) and the rest of its
// needTopology and computeBestCombination: on an Ascend 910 chip whose
// devices all name their network, several NPUs come from the network with
// the most fitting NPUs first; one NPU, or a chip without networks, or a
// node where one device names none, is the walk's order (from the last
// device). The answers are in the order FitDevices gives them.
func TestFitDevicesAsAscendNetworkFit(t *testing.T) {
	cases := []struct {
		name     string
		networks []string
		nums     int32
		want910  string // an Ascend 910 chip's answer
		wantElse string // Ascend310P's, which HAMi never groups
	}{
		{name: "HAMi's case: schedule by NetworkID", networks: []string{"0", "1", "1"}, nums: 2, want910: "dev-2 dev-1", wantElse: "dev-2 dev-1"},
		{name: "the larger network before the walk's order", networks: []string{"1", "1", "0"}, nums: 2, want910: "dev-1 dev-0", wantElse: "dev-2 dev-1"},
		{name: "one NPU is the walk's first", networks: []string{"1", "1", "0"}, nums: 1, want910: "dev-2", wantElse: "dev-2"},
		// Networks 0 and 2 hold one NPU each: HAMi takes either (its map's
		// order), plancore the one first in the walk's order.
		{name: "across networks, the larger first", networks: []string{"0", "1", "1", "2"}, nums: 3, want910: "dev-2 dev-1 dev-3", wantElse: "dev-3 dev-2 dev-1"},
		{name: "a device without a network: no grouping", networks: []string{"1", "1", ""}, nums: 2, want910: "dev-2 dev-1", wantElse: "dev-2 dev-1"},
		{name: "more than the node has", networks: []string{"0", "1"}, nums: 3,
			want910: "2/2 AllocatedCardsInsufficientRequest", wantElse: "2/2 AllocatedCardsInsufficientRequest"},
	}
	for _, chip := range gpu.AscendChips() {
		if chip == "Ascend910C" {
			continue // its requests of several NPUs take whole modules (TestModulePairsFit)
		}
		for _, tc := range cases {
			t.Run(chip+": "+tc.name, func(t *testing.T) {
				node := npuRegisterNode(t, chip, tc.networks, 128)
				f, err := gpu.FitDevices(node, gpu.Request{Container: "c", Type: chip, Nums: tc.nums, MemoryMiB: 64, Cores: 50}, gpu.FitRequest{})
				if err != nil {
					t.Fatal(err)
				}
				got := deviceFitAnswer(f)
				want := tc.wantElse
				if strings.HasPrefix(chip, "Ascend910") {
					want = tc.want910
				}
				if got != want {
					t.Errorf("got %q, want %q", got, want)
				}
			})
		}
	}
}

// TestAscendNetworkScore: HAMi's Ascend ScoreNode (pkg/device/ascend/
// device.go; HAMi has no test of it) through Fit: per container, the share
// of its NPUs in one network, summed and weighted 10, on 910 chips only; 0
// when a device given names no network.
func TestAscendNetworkScore(t *testing.T) {
	cases := []struct {
		name     string
		chip     string
		networks []string
		nums     []string
		score    float64
	}{
		{"one network", "Ascend910B3", []string{"0", "0", "1"}, []string{"2"}, 10},
		{"two networks", "Ascend910B3", []string{"0", "0", "1", "1"}, []string{"3"}, float64(share(2, 3) * 10)},
		{"two containers of one NPU", "Ascend910B3", []string{"0", "1"}, []string{"1", "1"}, 20},
		{"a device without a network", "Ascend910B3", []string{"0", "0", ""}, []string{"1"}, 0},
		{"not a 910", "Ascend310P", []string{"0", "0"}, []string{"2"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := npuRegisterNode(t, tc.chip, tc.networks, 65536)
			var ctrs []corev1.Container
			for i, n := range tc.nums {
				ctrs = append(ctrs, ctr(string(rune('a'+i)), rl("huawei.com/"+tc.chip, n)))
			}
			fr, err := gpu.FitRequestFromPod(podWith(nil, ctrs), gpu.DefaultRegistry())
			if err != nil {
				t.Fatal(err)
			}
			p, err := fit([]gpu.Node{node}, fr)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Nodes[0].Fits || p.Nodes[0].Score != tc.score {
				t.Errorf("score %v (fits %v, %s), want %v", p.Nodes[0].Score, p.Nodes[0].Fits, p.Nodes[0].Message(), tc.score)
			}
		})
	}
}

// TestDecodeNetworkIDs: an Ascend 910 register names each device's network
// in its custominfo, read as HAMi reads it (a number's integer part) and
// written back by EncodeNode; any other value is kept as its JSON text, a
// custominfo that is not an object leaves the vendor unreadable (it fails
// HAMi's decoding), and a chip HAMi does not group reads none.
func TestDecodeNetworkIDs(t *testing.T) {
	decode := func(chip, custom string) (gpu.Node, error) {
		reg := fmt.Sprintf(`[{"id":"npu-0","count":1,"devmem":1,"type":%q,"health":true,"custominfo":%s}]`, chip, custom)
		return gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n",
			Annotations: map[string]string{"hami.io/node-register-" + chip: reg}}}, gpu.DefaultRegistry())
	}
	for _, tc := range []struct{ chip, custom, want string }{
		{"Ascend910B3", `{"NetworkID":3}`, "3"},
		{"Ascend910B3", `{"NetworkID":3.7}`, "3"},
		{"Ascend910B3", `{"NetworkID":-0.5}`, "0"},
		{"Ascend910B3", `{"NetworkID": "x" }`, `"x"`},
		{"Ascend910B3", `{"Other":1}`, ""},
		{"Ascend910B3", `null`, ""},
		{"Ascend310P", `{"NetworkID":3}`, ""},
	} {
		n, err := decode(tc.chip, tc.custom)
		if err != nil || len(n.Devices) != 1 {
			t.Fatalf("%s %s: %v %+v", tc.chip, tc.custom, err, n)
		}
		if got := n.Devices[0].Network; got != tc.want {
			t.Errorf("%s %s: network %q, want %q", tc.chip, tc.custom, got, tc.want)
		}
		annos, err := gpu.EncodeNode(n, gpu.DefaultRegistry())
		if err != nil {
			t.Fatal(err)
		}
		back, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: annos}}, gpu.DefaultRegistry())
		if err != nil || len(back.Devices) != 1 || back.Devices[0].Network != tc.want {
			t.Errorf("%s %s: EncodeNode then DecodeNode gives %+v, %v", tc.chip, tc.custom, back.Devices, err)
		}
	}
	n, err := decode("Ascend910B3", `[1]`)
	if err != nil || len(n.Devices) != 0 || len(n.Unreadable) != 1 || !strings.Contains(n.Unreadable[0].Problems.ToAggregate().Error(), "custominfo") {
		t.Errorf("a custominfo that is not an object: devices %+v, unreadable %v, err %v", n.Devices, n.Unreadable, err)
	}
	bad := gpu.Device{ID: "npu-0", Vendor: "Ascend910B3", Count: 1, Healthy: true, Network: "not json"}
	_, err = gpu.EncodeNode(gpu.Node{Name: "n", Devices: []gpu.Device{bad}}, gpu.DefaultRegistry())
	if err == nil || !strings.Contains(err.Error(), "devices[0].network") {
		t.Errorf("a network that is not JSON: %v", err)
	}
}

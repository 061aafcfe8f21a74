package gpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/gpu"
)

// xpuNode is a node of eight whole Kunlun XPUs built as HAMi's scheduler
// tests build them (one slot, 98,304 MiB and 100 cores each), the indices
// in used holding one container each, with the Kunlun score rule.
func xpuNode(name string, used ...int) gpu.Node {
	n := gpu.Node{Name: name, VendorScores: []gpu.VendorScore{{Type: "kunlun", Rule: gpu.ScoreLinkGroups}}}
	for i := range 8 {
		d := gpu.Device{ID: fmt.Sprintf("%s-uuid%d", name, i+1), Index: i, Vendor: "kunlun", Model: "kunlun",
			Count: 1, MemoryMiB: 98304, Cores: 100, Healthy: true}
		for _, u := range used {
			if u == i {
				d.Used = 1
			}
		}
		n.Devices = append(n.Devices, d)
	}
	return n
}

// nodeScores renders each node's score and, for a node that fits, the
// indices of the devices it gives, in container order.
func nodeScores(p gpu.Plan) string {
	var b strings.Builder
	for _, n := range p.Nodes {
		fmt.Fprintf(&b, "%s %.2f", n.Node, n.Score)
		for _, c := range n.Containers {
			for _, a := range c.Devices {
				fmt.Fprintf(&b, " %s", a.UUID[strings.LastIndex(a.UUID, "uuid"):])
			}
		}
		b.WriteString("; ")
	}
	return b.String()
}

// TestPlacementScoreAsCalcScore restates the Kunlun cases of HAMi's
// Test_calcScore (pkg/scheduler/score_test.go, v2.10): the node score is
// the default score plus what the vendor's rule makes of the devices
// chosen.
func TestPlacementScoreAsCalcScore(t *testing.T) {
	xpu := func(n string) corev1.Container { return ctr("xpu"+n, rl("kunlunxin.com/xpu", "1")) }
	cases := []struct {
		name  string
		nodes []gpu.Node
		pod   *corev1.Pod
		want  string
	}{{
		// HAMi's "one node one device one pod one container use one device
		// for kunlun": an idle node scores 0 (one XPU opens a group: two
		// bubbles more), the node whose XPUs 3..7 are busy 6.25 + 1000.
		name:  "calcScore: one container, one XPU",
		nodes: []gpu.Node{xpuNode("node1"), xpuNode("node2", 3, 4, 5, 6, 7)},
		pod:   podWith(nil, []corev1.Container{xpu("a")}),
		want:  "node1 0.00 uuid1; node2 1006.25 uuid1; ",
	}, {
		// HAMi's "two node eight device one pod two container use one
		// device for kunlun": 1000 and 2006.25.
		name:  "calcScore: two containers, one XPU each",
		nodes: []gpu.Node{xpuNode("node1"), xpuNode("node2", 3, 4, 5, 6, 7)},
		pod:   podWith(nil, []corev1.Container{xpu("a"), xpu("b")}),
		want:  "node1 1000.00 uuid1 uuid2; node2 2006.25 uuid1 uuid2; ",
	}, {
		// Not in HAMi's tests (its Test_ScoreNode cases are in
		// score_internal_test.go): one group busy, the pod given the other
		// whole group, as many bubbles as before: 2000, plus the default
		// score of four busy XPUs (5).
		name:  "the other group whole",
		nodes: []gpu.Node{xpuNode("node1", 0, 1, 2, 3)},
		pod:   podWith(nil, []corev1.Container{ctr("c", rl("kunlunxin.com/xpu", "4"))}),
		want:  "node1 2005.00 uuid5 uuid6 uuid7 uuid8; ",
	}, {
		// Not in HAMi's tests: a node holding another vendor's device
		// scores 0 for Kunlun (HAMi's ScoreNode returns 0 when a device of
		// the node is not a Kunlun XPU).
		name: "kunlun ScoreNode: a mixed node scores 0",
		nodes: func() []gpu.Node {
			n := xpuNode("node2", 3, 4, 5, 6, 7)
			n.Devices = append(n.Devices, gpu.Device{ID: "gpu-0", Index: 0, Vendor: "NVIDIA", Count: 1, MemoryMiB: 1000, Cores: 100, Healthy: true})
			return []gpu.Node{n}
		}(),
		pod:  podWith(nil, []corev1.Container{xpu("a")}),
		want: "node2 5.56 uuid1; ",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fr, err := gpu.FitRequestFromPod(tc.pod, gpu.DefaultRegistry())
			if err != nil {
				t.Fatal(err)
			}
			p, err := fit(tc.nodes, fr)
			if err != nil {
				t.Fatal(err)
			}
			if got := nodeScores(p); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// metaxNode is a node of Metax whole cards read from its capacity, with
// annotations.
func metaxNode(t *testing.T, cards string, annotations map[string]string) gpu.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m", Annotations: annotations},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"metax-tech.com/gpu": resource.MustParse(cards)}}}
	out, err := gpu.DecodeNode(n, gpu.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTopologyTableScore restates HAMi's whole-Metax Test_ScoreNode
// (pkg/device/metax/device_test.go): under binpack the node scores 2000
// minus its topology loss for the number of cards given, under spread 2000
// minus its topology score, through DecodeNode and Decide.
func TestTopologyTableScore(t *testing.T) {
	const losses, scores = "metax-tech.com/gpu.topology.losses", "metax-tech.com/gpu.topology.scores"
	cases := []struct {
		name   string
		annos  map[string]string
		cards  string
		policy gpu.Policy
		want   float64
	}{
		// HAMi's "policy is binpack": two cards given, loss 200.
		{name: "ScoreNode: policy is binpack", annos: map[string]string{losses: `{"1":100,"2":200}`}, cards: "2", policy: gpu.Binpack, want: 1800},
		// HAMi's "policy is spread": one card given, score 100.
		{name: "ScoreNode: policy is spread", annos: map[string]string{scores: `{"1":100,"2":200}`}, cards: "1", policy: gpu.Spread, want: 1900},
		// The rest follow HAMi's ScoreNode and parseMetaxAnnos, not one of
		// its tests: the default node policy is binpack; no table, no
		// score; a table without the count, or that is not a table, 2000.
		{name: "the default node policy reads the losses", annos: map[string]string{losses: `{"1":100,"2":200}`}, cards: "1", want: 1900},
		{name: "spread does not read the losses", annos: map[string]string{losses: `{"1":100}`}, cards: "1", policy: gpu.Spread, want: 0},
		{name: "no entry for the count", annos: map[string]string{losses: `{"1":100}`}, cards: "3", policy: gpu.Binpack, want: 2000},
		{name: "not a table", annos: map[string]string{losses: `[1,2]`}, cards: "1", policy: gpu.Binpack, want: 2000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := metaxNode(t, "4", tc.annos)
			fr, err := gpu.FitRequestFromPod(podWith(nil, []corev1.Container{ctr("c", rl("metax-tech.com/gpu", tc.cards))}), gpu.DefaultRegistry())
			if err != nil {
				t.Fatal(err)
			}
			fr.NodePolicy = tc.policy
			p, err := fit([]gpu.Node{node}, fr)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Nodes[0].Score; !p.Nodes[0].Fits || got != tc.want {
				t.Errorf("score %v (fits %v), want %v", got, p.Nodes[0].Fits, tc.want)
			}
		})
	}
}

// TestDecodeNodeVendorScores: DecodeNode gives each vendor with devices on
// the node its score rule and tables, and none to a vendor without devices.
func TestDecodeNodeVendorScores(t *testing.T) {
	n := metaxNode(t, "2", map[string]string{"metax-tech.com/gpu.topology.losses": `{"2":7,"1":3}`})
	want := []gpu.VendorScore{{Type: "Metax-GPU", Rule: gpu.ScoreTopologyTables,
		Losses: gpu.ScoreTable{Set: true, Entries: []gpu.ScoreEntry{{Devices: 1, Value: 3}, {Devices: 2, Value: 7}}}}}
	if diff := cmp.Diff(want, n.VendorScores); diff != "" {
		t.Errorf("Metax node (-want +got):\n%s", diff)
	}
	k := capacityNode("w", "kunlunxin.com/xpu", "8")
	if diff := cmp.Diff([]gpu.VendorScore{{Type: "kunlun", Rule: gpu.ScoreLinkGroups}}, k.VendorScores); diff != "" {
		t.Errorf("Kunlun node (-want +got):\n%s", diff)
	}
	if e := capacityNode("e", "nvidia.com/gpu", "1"); len(e.VendorScores) != 0 {
		t.Errorf("a node without scored vendors: %+v", e.VendorScores)
	}
}

// TestVendorScoreRuleValidated: an unknown rule on a node is refused with
// its path, as a row's is.
func TestVendorScoreRuleValidated(t *testing.T) {
	n := xpuNode("node1")
	n.VendorScores[0].Rule = "Bogus"
	_, err := fit([]gpu.Node{n}, gpu.FitRequest{})
	if err == nil || !strings.Contains(err.Error(), "nodes[0].vendorScores[0].rule") {
		t.Fatalf("want an error naming nodes[0].vendorScores[0].rule, got %v", err)
	}
	bad := gpu.DeviceType{Type: "X", Count: "x.com/x", Score: gpu.ScoreTopologyTables}
	if _, err := gpu.NewRegistry(bad); err == nil || !strings.Contains(err.Error(), "types[0].annotations.topologyLosses") {
		t.Fatalf("want an error naming types[0].annotations.topologyLosses, got %v", err)
	}
}

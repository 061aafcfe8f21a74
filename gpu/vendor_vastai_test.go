package gpu_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/gpu"
)

// va is a Vastai device as HAMi's Vastai device tests write one: id, slots
// and slots in use, healthy; card, when set, is the card the die sits on.
func va(id string, index int, count, used int32, card string) gpu.Device {
	return gpu.Device{ID: id, Index: index, Vendor: "Vastai", Model: "Vastai", Count: count, Used: used, Healthy: true, Card: card}
}

// vastaiRequest reads the pod's policy and selector annotations as
// FitRequestFromPod does.
func vastaiRequest(t *testing.T, annos map[string]string) gpu.FitRequest {
	t.Helper()
	pod := podWith(nil, []corev1.Container{ctr("c", rl("vastaitech.com/va", "1"))})
	pod.Annotations = annos
	fr, err := gpu.FitRequestFromPod(pod, gpu.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return fr
}

// TestFitDevicesAsVastaiFit restates HAMi's Vastai Fit tests
// (pkg/device/vastai/device_test.go, v2.10: TestDevices_Fit and
// TestComputeBestCombination) through FitDevices, one node's devices of
// one vendor as HAMi's tests call its Fit. Each row names its HAMi case.
// Left out: "fit fail: type mismatch" asks Fit for another type than its
// devices', which HAMi's scheduler never does (it passes a Fit only the
// devices of its type) and FitDevices does not look at devices of another
// type.
func TestFitDevicesAsVastaiFit(t *testing.T) {
	mutex := map[string]string{"hami.io/gpu-scheduler-policy": "mutex"}
	req := func(nums, mem, cores int32) gpu.Request {
		return gpu.Request{Container: "c", Type: "Vastai", Nums: nums, MemoryMiB: mem, Cores: cores}
	}
	dies := func(cards ...string) []gpu.Device {
		var out []gpu.Device
		for i, c := range cards {
			out = append(out, va("dev"+string(rune('1'+i)), i+1, 1, 0, c))
		}
		return out
	}
	cases := []struct {
		name    string
		devices []gpu.Device
		r       gpu.Request
		annos   map[string]string
		want    string // the devices given, sorted, or HAMi's reason
	}{
		{name: "fit success", devices: []gpu.Device{va("dev-0", 0, 1, 0, ""), va("dev-1", 1, 1, 0, "")}, r: req(1, 0, 0), want: "dev-1"},
		{name: "fit fail: user assign use uuid mismatch", devices: []gpu.Device{va("dev-1", 0, 1, 0, "")}, r: req(1, 0, 0),
			annos: map[string]string{"vastaitech.com/use-gpuuuid": "dev-0"}, want: "1/1 CardUuidMismatch"},
		{name: "fit fail: user assign no use uuid match", devices: []gpu.Device{va("dev-0", 0, 1, 0, "")}, r: req(1, 0, 0),
			annos: map[string]string{"vastaitech.com/nouse-gpuuuid": "dev-0"}, want: "1/1 CardUuidMismatch"},
		{name: "fit fail: card overused", devices: []gpu.Device{va("dev-0", 0, 1, 1, "")}, r: req(1, 0, 0), want: "1/1 CardTimeSlicingExhausted"},
		{name: "fit fail:  AllocatedCardsInsufficientRequest", devices: []gpu.Device{va("dev-0", 0, 1, 0, "")}, r: req(2, 0, 0),
			want: "1/1 AllocatedCardsInsufficientRequest"},
		{name: "mutex policy rejects used device", devices: []gpu.Device{va("dev-0", 0, 2, 1, "")}, r: req(1, 0, 0), annos: mutex,
			want: "1/1 ExclusiveDeviceAllocateConflict"},
		{name: "mutex die mode rejects idle die on occupied card, picks die on free card",
			devices: []gpu.Device{va("dev-0", 0, 2, 1, "1"), va("dev-1", 1, 1, 0, "1"), va("dev-2", 2, 1, 0, "2")}, r: req(1, 0, 0), annos: mutex, want: "dev-2"},
		{name: "mutex die mode rejects all idle dies on an occupied card",
			devices: []gpu.Device{va("dev-0", 0, 2, 1, "1"), va("dev-1", 1, 1, 0, "1")}, r: req(1, 0, 0), annos: mutex,
			want: "2/2 ExclusiveDeviceAllocateConflict"},
		{name: "fit fail: partial allocation AllocatedCardsInsufficientRequest", devices: func() []gpu.Device {
			d := []gpu.Device{va("dev-0", 0, 100, 0, ""), va("dev-1", 1, 100, 0, "")}
			for i := range d {
				d[i].MemoryMiB, d[i].Cores = 1280, 100
			}
			return d
		}(), r: req(3, 512, 20), want: "2/2 AllocatedCardsInsufficientRequest"},
		{name: "fit fail: CardNotHealth", devices: func() []gpu.Device {
			d := va("dev-0", 0, 1, 0, "")
			d.Healthy = false
			return []gpu.Device{d}
		}(), r: req(1, 0, 0), want: "1/1 CardNotHealth"},
		// TestComputeBestCombination's cases, through the Fit that calls
		// it: the dies of the card with the most fitting dies first.
		{name: "single AIC group, sufficient to meet demand", devices: dies("1", "1", "1"), r: req(2, 0, 0), want: "dev2 dev3"},
		{name: "multiple AIC groups, select by count after sorting", devices: dies("1", "1", "1", "2", "2", "3"), r: req(3, 0, 0), want: "dev1 dev2 dev3"},
		// HAMi's test feeds the dies in index order and gets dev4 from card
		// 2; its Fit feeds them in walk order, from the end, as
		// FitDevices walks them, and so gives dev5.
		{name: "multiple AIC groups, need to take across groups", devices: dies("1", "1", "1", "2", "2", "3"), r: req(4, 0, 0), want: "dev1 dev2 dev3 dev5"},
		// HAMi's test checks the combination's three dies; its Fit then
		// refuses the request with this reason.
		{name: "request number exceeds available devices", devices: dies("1", "1", "2"), r: req(5, 0, 0), want: "3/3 AllocatedCardsInsufficientRequest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := gpu.Node{Name: "n", Devices: tc.devices}
			before := slices.Clone(node.Devices)
			f, err := gpu.FitDevices(node, tc.r, vastaiRequest(t, tc.annos))
			if err != nil {
				t.Fatal(err)
			}
			got := deviceFitAnswer(f)
			if f.Fits {
				ids := strings.Fields(got)
				slices.Sort(ids)
				got = strings.Join(ids, " ")
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if !slices.EqualFunc(before, node.Devices, func(a, b gpu.Device) bool { return a.ID == b.ID && a.Used == b.Used }) {
				t.Errorf("FitDevices modified the node's devices")
			}
		})
	}
}

// TestFitDevicesRefusesAtOnce: a bad request and a bad device are one
// *plancore.InvalidError naming both.
func TestFitDevicesRefusesAtOnce(t *testing.T) {
	_, err := gpu.FitDevices(gpu.Node{Name: "n", Devices: []gpu.Device{{ID: "", Vendor: "Vastai"}}},
		gpu.Request{Type: "Vastai", Nums: 0}, gpu.FitRequest{})
	var inv *plancore.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("want a *plancore.InvalidError, got %v", err)
	}
	if got := strings.Join(inv.Fields(), " "); got != "request.requests[0].nums node.devices[0].id" {
		t.Errorf("fields %q", got)
	}
}

// TestSameCardScore: HAMi's Vastai ScoreNode (pkg/device/vastai/device.go;
// HAMi has no test of it) through Fit: per container, the share of its
// dies on one card, summed; 0 for devices that are not dies.
func TestSameCardScore(t *testing.T) {
	vs := []gpu.VendorScore{{Type: "Vastai", Rule: gpu.ScoreSameCard}}
	cases := []struct {
		name  string
		devs  []gpu.Device
		nums  []string
		score float64
	}{
		// Two dies asked, both on card a: 2/2.
		{"one card", []gpu.Device{va("d0", 0, 1, 0, "a"), va("d1", 1, 1, 0, "a"), va("d2", 2, 1, 0, "b")}, []string{"2"}, 1},
		// Three asked over cards of two dies: 2/3.
		{"two cards", []gpu.Device{va("d0", 0, 1, 0, "a"), va("d1", 1, 1, 0, "a"), va("d2", 2, 1, 0, "b"), va("d3", 3, 1, 0, "b")}, []string{"3"}, float64(float32(2) / 3)},
		// Two containers of one die each: 1 + 1.
		{"two containers", []gpu.Device{va("d0", 0, 1, 0, "a"), va("d1", 1, 1, 0, "b")}, []string{"1", "1"}, 2},
		// Not dies: 0.
		{"whole cards", []gpu.Device{va("d0", 0, 1, 0, ""), va("d1", 1, 1, 0, "")}, []string{"2"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ctrs []corev1.Container
			for i, n := range tc.nums {
				ctrs = append(ctrs, ctr(string(rune('a'+i)), rl("vastaitech.com/va", n)))
			}
			fr, err := gpu.FitRequestFromPod(podWith(nil, ctrs), gpu.DefaultRegistry())
			if err != nil {
				t.Fatal(err)
			}
			devs := tc.devs
			for i := range devs {
				devs[i].Cores = 100
			}
			p, err := fit([]gpu.Node{{Name: "n", Devices: devs, VendorScores: vs}}, fr)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Nodes[0].Fits || p.Nodes[0].Score != tc.score {
				t.Errorf("score %v (fits %v, %s), want %v", p.Nodes[0].Score, p.Nodes[0].Fits, p.Nodes[0].Message(), tc.score)
			}
		})
	}
}

// TestDecodeDieCards: Vastai's register names the card of each die in its
// custominfo; a device not in die mode has none, and a custominfo that is
// not an object leaves the vendor unreadable, as it fails HAMi's decoding.
func TestDecodeDieCards(t *testing.T) {
	decode := func(reg string) gpu.Node {
		t.Helper()
		n, err := gpu.DecodeNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n",
			Annotations: map[string]string{"hami.io/node-va-register": reg}}}, gpu.DefaultRegistry())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := decode(`[{"id":"d0","count":1,"health":true,"custominfo":{"DeviceStrategy":"die","AIC":"7"}},` +
		`{"id":"d1","index":1,"count":1,"health":true,"custominfo":{"DeviceStrategy":"card","AIC":"7"}},` +
		`{"id":"d2","index":2,"count":1,"health":true}]`)
	var cards []string
	for _, d := range n.Devices {
		cards = append(cards, d.ID+"="+d.Card)
	}
	if got := strings.Join(cards, " "); got != "d0=7 d1= d2=" {
		t.Errorf("cards %q", got)
	}
	if diff := cmp.Diff([]gpu.VendorScore{{Type: "Vastai", Rule: gpu.ScoreSameCard}}, n.VendorScores); diff != "" {
		t.Errorf("vendor scores (-want +got):\n%s", diff)
	}
	bad := decode(`[{"id":"d0","count":1,"health":true,"custominfo":"die"}]`)
	if len(bad.Devices) != 0 || len(bad.Unreadable) != 1 || !strings.Contains(bad.Unreadable[0].Problems[0].Field, "[0].custominfo") {
		t.Errorf("a custominfo that is not an object: devices %v, unreadable %+v", bad.Devices, bad.Unreadable)
	}
}

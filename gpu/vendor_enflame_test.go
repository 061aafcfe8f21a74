package gpu_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/plancore/plancore/gpu"
)

// drsFitNode decodes an Enflame DRS node with the profiles 1g.6gb, 3g.20gb
// and 6g.40gb and the given devices' slices, then sets each device's usage
// (slices, memory, cores used).
func drsFitNode(t *testing.T, usage ...[3]int32) gpu.Node {
	t.Helper()
	var devs []string
	for i := range usage {
		devs = append(devs, fmt.Sprintf(`{"index":"%d","minor":"%d","capacity":6}`, i, 10+i))
	}
	n, err := gpu.DecodeNode(drsNode(map[string]string{"enflame.com/gcu-drs-capacity": `{"devices":[` + strings.Join(devs, ",") +
		`],"profiles":{"1g.6gb":"0","3g.20gb":"1","6g.40gb":"2"}}`}), gpu.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range usage {
		n.Devices[i].Used, n.Devices[i].UsedMemoryMiB, n.Devices[i].UsedCores = u[0], u[1], u[2]
	}
	return n
}

// TestSliceProfileFit restates HAMi's Enflame Fit tests
// (pkg/device/enflame/device_test.go: TestFit_SelectProfileByRequest,
// _SelectProfileByMemoryCoreRequest, _ProfileNotFound,
// _MutexRejectsUsedDevice, _UnhealthyDeviceRejected) and the checks of its
// Fit: which profile a request gets, which device, and why none.
func TestSliceProfileFit(t *testing.T) {
	free := [3]int32{}
	cases := []struct {
		name   string
		limits []string
		annos  map[string]string
		node   func(t *testing.T) gpu.Node
		want   string // "<device> <profile> mem=<MiB> cores=<%> slots=<n>", or the reasons
	}{
		{name: "3 slices: the 3g profile", limits: []string{"enflame.com/drs-gcu", "3"}, node: func(t *testing.T) gpu.Node { return drsFitNode(t, free) },
			want: "e-enflame-drs-0 3g.20gb mem=20480 cores=50 slots=3"},
		{name: "20480 MiB and 40 % by spec: the 3g profile", limits: []string{"enflame.com/gcu-memory", "20480", "enflame.com/gcu-core", "40"},
			node: func(t *testing.T) gpu.Node { return drsFitNode(t, free) }, want: "e-enflame-drs-0 3g.20gb mem=20480 cores=50 slots=3"},
		{name: "7 is GiB (not above twice the 40 GB of the largest): the 3g profile", limits: []string{"enflame.com/gcu-memory", "7"},
			node: func(t *testing.T) gpu.Node { return drsFitNode(t, free) }, want: "e-enflame-drs-0 3g.20gb mem=20480 cores=50 slots=3"},
		{name: "6 GiB: the 1g profile", limits: []string{"enflame.com/gcu-memory", "6"},
			node: func(t *testing.T) gpu.Node { return drsFitNode(t, free) }, want: "e-enflame-drs-0 1g.6gb mem=6144 cores=17 slots=1"},
		{name: "cores alone: 60 % is the whole card", limits: []string{"enflame.com/gcu-core", "60"},
			node: func(t *testing.T) gpu.Node { return drsFitNode(t, free) }, want: "e-enflame-drs-0 6g.40gb mem=40960 cores=100 slots=6"},
		{name: "81 is MiB, rounded up to 1 GiB", limits: []string{"enflame.com/gcu-memory", "81"},
			node: func(t *testing.T) gpu.Node { return drsFitNode(t, free) }, want: "e-enflame-drs-0 1g.6gb mem=6144 cores=17 slots=1"},
		{name: "no profile of 2 slices", limits: []string{"enflame.com/drs-gcu", "2"}, node: func(t *testing.T) gpu.Node { return drsFitNode(t, free, free) },
			want: "1/2 ModeNotFit"},
		{name: "no profile of 41 GiB", limits: []string{"enflame.com/gcu-memory", "41"}, node: func(t *testing.T) gpu.Node { return drsFitNode(t, free) },
			want: "1/1 ModeNotFit"},
		{name: "a node without profiles", limits: []string{"enflame.com/drs-gcu", "1"}, node: func(t *testing.T) gpu.Node {
			n := drsFitNode(t, free)
			n.SliceProfiles = nil
			return n
		}, want: "1/1 ModeNotFit"},
		{name: "mutex refuses a used device", limits: []string{"enflame.com/drs-gcu", "3"}, annos: map[string]string{"hami.io/gpu-scheduler-policy": "mutex"},
			node: func(t *testing.T) gpu.Node { return drsFitNode(t, [3]int32{1, 6144, 17}) }, want: "1/1 ExclusiveDeviceAllocateConflict"},
		{name: "an unhealthy device", limits: []string{"enflame.com/drs-gcu", "3"}, node: func(t *testing.T) gpu.Node {
			n := drsFitNode(t, free)
			n.Devices[0].Healthy = false
			return n
		}, want: "1/1 CardNotHealth"},
		{name: "every slice used", limits: []string{"enflame.com/drs-gcu", "1"}, node: func(t *testing.T) gpu.Node { return drsFitNode(t, [3]int32{6, 36864, 100}) },
			want: "1/1 CardTimeSlicingExhausted"},
		{name: "5 slices used: memory left for 1g, not 3g", limits: []string{"enflame.com/drs-gcu", "3"},
			node: func(t *testing.T) gpu.Node { return drsFitNode(t, [3]int32{5, 30720, 85}) }, want: "1/1 CardInsufficientMemory"},
		{name: "cores short though memory is not", limits: []string{"enflame.com/drs-gcu", "3"},
			node: func(t *testing.T) gpu.Node { return drsFitNode(t, [3]int32{1, 6144, 60}) }, want: "1/1 CardInsufficientCore"},
		{name: "the device with room is taken", limits: []string{"enflame.com/drs-gcu", "3"},
			node: func(t *testing.T) gpu.Node { return drsFitNode(t, [3]int32{4, 24576, 68}, free) }, want: "e-enflame-drs-1 3g.20gb mem=20480 cores=50 slots=3"},
		{name: "use-gpuuuid selects the device", limits: []string{"enflame.com/drs-gcu", "1"}, annos: map[string]string{"enflame.com/use-gpuuuid": "e-enflame-drs-0"},
			node: func(t *testing.T) gpu.Node { return drsFitNode(t, free, free) }, want: "e-enflame-drs-0 1g.6gb mem=6144 cores=17 slots=1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(nil, []corev1.Container{ctr("c", rl(tc.limits...))})
			pod.Annotations = tc.annos
			nf := fitPod(t, tc.node(t), pod)
			got := nf.Message()
			if nf.Fits {
				a := nf.Containers[0].Devices[0]
				got = fmt.Sprintf("%s %s mem=%d cores=%d slots=%d", a.UUID, a.SliceProfile, a.MemoryMiB, a.Cores, a.Slots)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSliceProfilesFillADevice: slices add up on the device as HAMi's
// AddResourceUsage adds them, and Filter writes Enflame's annotations as
// HAMi's PatchAnnotations does (TestPatchAnnotations_DRSFields).
func TestSliceProfilesFillADevice(t *testing.T) {
	reg := gpu.DefaultRegistry()
	node := drsFitNode(t, [3]int32{})
	pod := podWith(nil, []corev1.Container{ctr("pod-gcu-example1", rl("enflame.com/drs-gcu", "3")), ctr("side", rl("enflame.com/drs-gcu", "1")), ctr("none", nil)})
	fr, err := gpu.FitRequestFromPod(pod, reg)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := gpu.Decide(gpu.Input{Nodes: []gpu.Node{node}, Request: fr}, gpu.HAMi())
	if err != nil || plan.Node != "e" {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	got, err := gpu.FilterAnnotations(gpu.FilterChoice{Pod: pod, Node: node, Containers: plan.Containers, Now: time.Unix(1781431200, 7), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"hami.io/vgpu-node":                      "e",
		"hami.io/vgpu-time":                      "1781431200",
		"hami.io/enflame-vgpu-devices-allocated": "e-enflame-drs-0,Enflame,20480,50:;e-enflame-drs-0,Enflame,6144,17:;;",
		"enflame.com/gcu-assigned":               "false",
		"enflame.com/gcu-assigned-time":          "1781431200000000007",
		"enflame.com/gcu-assigned-index":         "0",
		"enflame.com/gcu-assigned-id":            "0",
		"enflame.com/gcu-assigned-minor":         "10",
		"enflame.com/gcu-request-size":           "3",
		"assigned-containers": `{"pod-gcu-example1":{"allocated":false,"request":3,"profileID":"1","profileName":"3g.20gb"},` +
			`"side":{"allocated":false,"request":1,"profileID":"0","profileName":"1g.6gb"}}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("annotations (-want +got):\n%s", diff)
	}
	// Two more slices fit beside the four taken, a third 3g does not.
	full := node
	full.Devices = []gpu.Device{node.Devices[0]}
	full.Devices[0].Used, full.Devices[0].UsedMemoryMiB, full.Devices[0].UsedCores = 4, 20480+6144, 67
	for _, c := range []struct {
		slices, want string
	}{{"1", ""}, {"3", "1/1 CardInsufficientMemory"}} {
		fr, err := gpu.FitRequestFromPod(podWith(nil, []corev1.Container{ctr("c", rl("enflame.com/drs-gcu", c.slices))}), reg)
		if err != nil {
			t.Fatal(err)
		}
		nf, err := fitOne(full, fr)
		if err != nil || nf.Message() != c.want {
			t.Fatalf("%s slices on a device with 4 of 6 used: %q, %v; want %q", c.slices, nf.Message(), err, c.want)
		}
	}
}

package gpu_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plancore/plancore/gpu"
)

// onNUMA returns card id on the given NUMA node.
func onNUMA(id string, index, numa int) gpu.Device {
	d := card(id, index)
	d.NUMA = numa
	return d
}

// TestHAMiDeviceOrder checks the devices chosen on one node against HAMi's
// sorts (pkg/scheduler/policy/gpu_policy.go) and its NVIDIA Fit, which walks
// the sorted list from the end. Each expectation was derived by hand from
// that code.
func TestHAMiDeviceOrder(t *testing.T) {
	four := []gpu.Device{onNUMA("g0", 0, 0), onNUMA("g1", 1, 0), onNUMA("g2", 2, 1), onNUMA("g3", 3, 1)}
	busy := func(devs []gpu.Device, i int, slots, mem, cores int32) []gpu.Device {
		out := append([]gpu.Device(nil), devs...)
		out[i] = used(out[i], slots, mem, cores)
		return out
	}
	cases := []struct {
		name  string
		devs  []gpu.Device
		req   gpu.FitRequest
		fits  string
		msg   string
		pairs []gpu.PairScore
	}{
		{name: "full tie, default spread: highest index first", devs: four,
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 1000, 0)}}, fits: "g3"},
		{name: "full tie, chain: index ascending sorts the highest last", devs: four,
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 1000, 0)}, GPUPolicy: []gpu.Policy{gpu.Binpack, gpu.Spread}}, fits: "g3,g2"},
		{name: "binpack with numa-bind tries NUMA 0 first", devs: four,
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 1000, 0)}, GPUPolicy: []gpu.Policy{gpu.Binpack}, NUMABind: true}, fits: "g1,g0"},
		{name: "spread with numa-bind tries the highest NUMA first", devs: four,
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 1000, 0)}, NUMABind: true}, fits: "g3,g2"},
		{name: "chain with numa-bind: numa ascending first, so NUMA 1 is tried first", devs: four,
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 1000, 0)}, GPUPolicy: []gpu.Policy{gpu.Binpack, gpu.NUMAOrder}, NUMABind: true}, fits: "g3,g2"},
		{name: "binpack prefers the fuller device", devs: busy(four, 1, 1, 4000, 30),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 1000, 0)}, GPUPolicy: []gpu.Policy{gpu.Binpack}}, fits: "g1"},
		{name: "spread prefers an empty device, the highest index among equals", devs: busy(four, 3, 1, 4000, 30),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 1000, 0)}}, fits: "g2"},
		{name: "single binpack: NUMA ascending breaks a score tie, so NUMA 1 is tried first", devs: []gpu.Device{onNUMA("g0", 0, 1), onNUMA("g1", 1, 0)},
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 1000, 0)}, GPUPolicy: []gpu.Policy{gpu.Binpack}}, fits: "g0"},
		{name: "mutex alone takes only idle devices", devs: busy(busy(four, 3, 1, 100, 0), 2, 1, 100, 0),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 1000, 0)}, GPUPolicy: []gpu.Policy{gpu.Mutex}}, fits: "g1,g0"},
		{name: "mutex refuses busy devices", devs: busy(busy(four, 3, 1, 100, 0), 2, 1, 100, 0),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 3, 1000, 0)}, GPUPolicy: []gpu.Policy{gpu.Mutex}},
			msg: "2/4 AllocatedCardsInsufficientRequest, 2/4 ExclusiveDeviceAllocateConflict"},
		{name: "mutex,spread filters and spreads", devs: busy(four, 3, 1, 100, 0),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 1000, 0)}, GPUPolicy: []gpu.Policy{gpu.Mutex, gpu.Spread}}, fits: "g2"},
		{name: "two GPUs on a one-GPU node", devs: four[:1],
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 1000, 0)}}, msg: "NodeInsufficientDevice"},
		{name: "topology-aware takes the best linked pair", devs: four,
			pairs: []gpu.PairScore{{From: "g0", To: "g1", Score: 100}, {From: "g1", To: "g0", Score: 100},
				{From: "g0", To: "g3", Score: 300}, {From: "g3", To: "g0", Score: 300}, {From: "g2", To: "g3", Score: 50}},
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 1000, 0)}, GPUPolicy: []gpu.Policy{gpu.TopologyAware}}, fits: "g3,g0"},
		{name: "topology-aware gives one GPU the worst linked card", devs: four,
			pairs: []gpu.PairScore{{From: "g0", To: "g1", Score: 100}, {From: "g1", To: "g0", Score: 100},
				{From: "g3", To: "g2", Score: 50}, {From: "g2", To: "g3", Score: 50}, {From: "g2", To: "g1", Score: 10}},
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 1000, 0)}, GPUPolicy: []gpu.Policy{gpu.TopologyAware}}, fits: "g3"},
		{name: "topology-aware without enough devices", devs: busy(four, 0, 10, 0, 0),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 4, 1000, 0)}, GPUPolicy: []gpu.Policy{gpu.TopologyAware}},
			msg: "1/4 CardTimeSlicingExhausted, 3/4 AllocatedCardsInsufficientRequest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := fit([]gpu.Node{{Name: "n", Devices: tc.devs, PairScores: tc.pairs}}, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.msg != "" {
				if res.Node != "" || res.Nodes[0].Message() != tc.msg {
					t.Fatalf("got %s %q, want refusal %q", chosen(t, res), res.Nodes[0].Message(), tc.msg)
				}
				return
			}
			if got := chosen(t, res); got != "n/"+tc.fits {
				t.Fatalf("chose %s (%s), want n/%s", got, res.Nodes[0].Message(), tc.fits)
			}
		})
	}
}

// TestFitRequestFromPodPolicies reads HAMi's mutex and topology-aware
// policies, alone and chained, and each vendor's selectors.
func TestFitRequestFromPodPolicies(t *testing.T) {
	reg := gpu.DefaultRegistry()
	pod := podWith(nil, []corev1.Container{ctr("c", rl("hygon.com/dcunum", "1"))})
	pod.Annotations = map[string]string{
		gpu.AnnoGPUPolicy:         "mutex, spread",
		"hygon.com/use-gpuuuid":   "DCU-1",
		"hygon.com/nouse-dcutype": "Z100",
	}
	fr, err := gpu.FitRequestFromPod(pod, reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(fr.GPUPolicy) != 2 || fr.GPUPolicy[0] != gpu.Mutex || fr.GPUPolicy[1] != gpu.Spread {
		t.Fatalf("policy %v", fr.GPUPolicy)
	}
	if len(fr.Selectors) != 1 || fr.Selectors[0].Type != "DCU" || fr.Selectors[0].UseUUIDs[0] != "DCU-1" || fr.Selectors[0].NoUseModels[0] != "Z100" {
		t.Fatalf("selectors %+v", fr.Selectors)
	}
	node := gpu.Node{Name: "n", Devices: []gpu.Device{
		{ID: "DCU-0", Vendor: "DCU", Model: "K100", Count: 4, MemoryMiB: 8000, Cores: 100, Healthy: true},
		{ID: "DCU-1", Index: 1, Vendor: "DCU", Model: "K100", Count: 4, MemoryMiB: 8000, Cores: 100, Healthy: true},
		{ID: "DCU-2", Index: 2, Vendor: "DCU", Model: "Z100", Count: 4, MemoryMiB: 8000, Cores: 100, Healthy: true},
	}}
	res, err := fit([]gpu.Node{node}, fr)
	if err != nil {
		t.Fatal(err)
	}
	if got := chosen(t, res); got != "n/DCU-1" {
		t.Fatalf("chose %s (%s)", got, res.Nodes[0].Message())
	}
	pod.Annotations = map[string]string{gpu.AnnoGPUPolicy: "topology-aware"}
	if fr, err := gpu.FitRequestFromPod(pod, reg); err != nil || len(fr.GPUPolicy) != 1 || fr.GPUPolicy[0] != gpu.TopologyAware {
		t.Fatalf("topology-aware: %v %v", fr.GPUPolicy, err)
	}
}

// TestTopologyAwareIsNVIDIAOnly: HAMi reads topology-aware in NVIDIA's Fit
// alone; another vendor's request is ordered as under spread.
func TestTopologyAwareIsNVIDIAOnly(t *testing.T) {
	dcu := func(id string, idx int) gpu.Device {
		return gpu.Device{ID: id, Index: idx, Vendor: "DCU", Model: "Z100", Count: 4, MemoryMiB: 8000, Cores: 100, Healthy: true}
	}
	node := gpu.Node{Name: "n", Devices: []gpu.Device{dcu("d0", 0), dcu("d1", 1), dcu("d2", 2)},
		PairScores: []gpu.PairScore{{From: "d0", To: "d1", Score: 500}}}
	req := gpu.FitRequest{Requests: []gpu.Request{{Container: "c", Type: "DCU", Nums: 2, MemoryMiB: 1000}}, GPUPolicy: []gpu.Policy{gpu.TopologyAware}}
	res, err := fit([]gpu.Node{node}, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := chosen(t, res); got != "n/d2,d1" {
		t.Fatalf("chose %s, want n/d2,d1 (spread, highest index first)", got)
	}
}

// TestAMDCoresAreAShareOfComputeUnits: HAMi's AMD Fit takes the core
// percentage of each GPU's own compute units, and its allocation entries
// carry the GPU's product name.
func TestAMDCoresAreAShareOfComputeUnits(t *testing.T) {
	reg := gpu.DefaultRegistry()
	amd := func(id string, idx int) gpu.Device {
		return gpu.Device{ID: id, Index: idx, Vendor: "AMD", Model: "AMD-MI300X", Count: 4, MemoryMiB: 196608, Cores: 304, Healthy: true}
	}
	busy := amd("a1", 1)
	busy.Used, busy.UsedMemoryMiB, busy.UsedCores = 1, 1000, 200
	node := gpu.Node{Name: "n", Devices: []gpu.Device{amd("a0", 0), busy}}
	pod := podWith(nil, []corev1.Container{ctr("c", rl("amd.com/gpu", "1", "amd.com/gpumem", "8192", "amd.com/gpucores", "50"))})
	pod.Annotations = map[string]string{gpu.AnnoGPUPolicy: "binpack"}
	fr, err := gpu.FitRequestFromPod(pod, reg)
	if err != nil {
		t.Fatal(err)
	}
	// Binpack tries the busy a1 first: half of 304 CUs is 152, only 104 are free.
	res, err := fit([]gpu.Node{node}, fr)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Containers; len(got) != 1 || len(got[0].Devices) != 1 || got[0].Devices[0] != (gpu.Allocation{UUID: "a0", Type: "AMD", MemoryMiB: 8192, Cores: 152}) {
		t.Fatalf("assignment %+v (%s)", got, res.Nodes[0].Message())
	}
	annos, err := gpu.FilterAnnotations(gpu.FilterChoice{Pod: pod, Node: node, Containers: res.Containers, Now: time.Unix(1, 0), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if annos["hami.io/amd-devices-to-allocate"] != "a0,AMD-MI300X,8192,152:;" || annos["hami.io/amd-devices-allocated"] != "a0,AMD-MI300X,8192,152:;" {
		t.Fatalf("annotations %v", annos)
	}
	// A whole-memory request without cores takes every compute unit.
	pod.Spec.Containers[0] = ctr("c", rl("amd.com/gpu", "2"))
	fr, err = gpu.FitRequestFromPod(pod, reg)
	if err != nil {
		t.Fatal(err)
	}
	res, err = fit([]gpu.Node{node}, fr)
	if err != nil {
		t.Fatal(err)
	}
	if msg := res.Nodes[0].Message(); res.Node != "" || msg != "1/2 AllocatedCardsInsufficientRequest, 1/2 CardInsufficientMemory" {
		t.Fatalf("got %+v %q", res.Containers, msg)
	}
}

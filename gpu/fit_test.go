package gpu_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/plancore/plancore/gpu"
)

// card is an NVIDIA device with 8000 MiB, 100 cores and 10 slots.
func card(id string, index int) gpu.Device {
	return gpu.Device{ID: id, Index: index, Vendor: "NVIDIA", Model: "NVIDIA-A100", Count: 10, MemoryMiB: 8000, Cores: 100, Healthy: true}
}

func used(d gpu.Device, slots, mem, cores int32) gpu.Device {
	d.Used, d.UsedMemoryMiB, d.UsedCores = slots, mem, cores
	return d
}

// policyFixture is two nodes of two cards, each node with one card partly used.
func policyFixture() []gpu.Node {
	return []gpu.Node{
		{Name: "node1", Devices: []gpu.Device{used(card("device1", 0), 1, 2000, 25), card("device2", 1)}},
		{Name: "node2", Devices: []gpu.Device{card("device3", 0), used(card("device4", 1), 1, 6000, 75)}},
	}
}

func nvReq(container string, nums, mem, cores int32) gpu.Request {
	return gpu.Request{Container: container, Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: nums, MemoryMiB: mem, Cores: cores}
}

// chosen renders a fit outcome as "node/device[,device]" per container.
func chosen(t *testing.T, res gpu.Plan) string {
	t.Helper()
	if res.Node == "" {
		return "none"
	}
	out := res.Node
	for _, c := range res.Containers {
		out += "/"
		for i, a := range c.Devices {
			if i > 0 {
				out += ","
			}
			out += a.UUID
		}
	}
	return out
}

func TestFitPolicies(t *testing.T) {
	cases := []struct {
		node, gpuPolicy gpu.Policy
		want            string
	}{
		{gpu.Binpack, gpu.Binpack, "node2/device4"},
		{gpu.Binpack, gpu.Spread, "node2/device3"},
		{gpu.Spread, gpu.Binpack, "node1/device1"},
		{gpu.Spread, gpu.Spread, "node1/device2"},
		{"", "", "node2/device3"}, // defaults: binpack nodes, spread devices
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s-%s", tc.node, tc.gpuPolicy), func(t *testing.T) {
			req := gpu.FitRequest{Requests: []gpu.Request{nvReq("main", 1, 1000, 20)}, NodePolicy: tc.node}
			if tc.gpuPolicy != "" {
				req.GPUPolicy = []gpu.Policy{tc.gpuPolicy}
			}
			res, err := fit(policyFixture(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got := chosen(t, res); got != tc.want {
				t.Fatalf("chose %s, want %s", got, tc.want)
			}
		})
	}
}

func TestFitInitContainersAtPeak(t *testing.T) {
	req := gpu.FitRequest{
		Requests: []gpu.Request{
			{Container: "init", Init: true, Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryMiB: 5000},
			nvReq("app", 1, 4000, 0),
		},
		GPUPolicy: []gpu.Policy{gpu.Binpack},
	}
	res, err := fit(policyFixture(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := chosen(t, res); got != "node2/device3/device3" {
		t.Fatalf("chose %s, want node2/device3 for both containers (peak, not sum)", got)
	}
	// Two init containers of 6000 MiB each fit one 8000 MiB card: they run one
	// after another. Two app containers of 6000 MiB do not.
	one := []gpu.Node{{Name: "n", Devices: []gpu.Device{card("g0", 0)}}}
	inits := gpu.FitRequest{Requests: []gpu.Request{
		{Container: "i1", Init: true, Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryMiB: 6000},
		{Container: "i2", Init: true, Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryMiB: 6000},
	}}
	if res, _ := fit(one, inits); res.Node != "n" {
		t.Fatalf("sequential init containers did not fit: %+v", res.Nodes)
	}
	apps := gpu.FitRequest{Requests: []gpu.Request{nvReq("a1", 1, 6000, 0), nvReq("a2", 1, 6000, 0)}}
	res, _ = fit(one, apps)
	if res.Node != "" {
		t.Fatal("two app containers were fitted past the card's memory")
	}
	if f := res.Nodes[0]; f.FailedContainer != "a2" || f.Message() != "1/1 CardInsufficientMemory" {
		t.Fatalf("failure = %q on %q", f.Message(), f.FailedContainer)
	}
}

// TestFitReasons covers each per-device check on a two-card node.
func TestFitReasons(t *testing.T) {
	base := func(mut func(d *gpu.Device)) []gpu.Node {
		a, b := card("g0", 0), card("g1", 1)
		mut(&b)
		return []gpu.Node{{Name: "n", Devices: []gpu.Device{a, b}}}
	}
	full := used(card("g0", 0), 1, 7500, 0) // 500 MiB free
	cases := []struct {
		name  string
		nodes []gpu.Node
		req   gpu.FitRequest
		fits  string // chosen devices, or ""
		msg   string
	}{
		{
			// HAMi counts only the requested type's devices: the MLU card is
			// not a reason.
			name:  "memory, another vendor's card not counted",
			nodes: []gpu.Node{{Name: "n", Devices: []gpu.Device{full, {ID: "m0", Index: 1, Vendor: "MLU", Count: 10, MemoryMiB: 8000, Cores: 100, Healthy: true}}}},
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 1000, 0)}},
			msg:   "1/1 CardInsufficientMemory",
		},
		{
			name:  "unhealthy card",
			nodes: []gpu.Node{{Name: "n", Devices: []gpu.Device{func() gpu.Device { d := card("g1", 1); d.Healthy = false; return d }(), full}}},
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 1000, 0)}},
			msg:   "1/2 CardInsufficientMemory, 1/2 CardNotHealth",
		},
		{
			name:  "cordoned card",
			nodes: base(func(d *gpu.Device) { d.Cordoned = true }),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 1000, 0)}},
			msg:   "1/2 AllocatedCardsInsufficientRequest, 1/2 CardCordoned",
		},
		{
			name:  "use-gputype",
			nodes: base(func(d *gpu.Device) { d.Model = "NVIDIA-Tesla V100" }),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 1000, 0)}, Selectors: []gpu.Selector{{Type: "NVIDIA", UseModels: []string{"v100"}}}},
			fits:  "g1",
		},
		{
			name:  "nouse-gputype",
			nodes: base(func(d *gpu.Device) { d.Model = "NVIDIA-Tesla V100" }),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 1000, 0)}, Selectors: []gpu.Selector{{Type: "NVIDIA", NoUseModels: []string{"V100"}}}},
			msg:   "1/2 AllocatedCardsInsufficientRequest, 1/2 CardTypeMismatch",
		},
		{
			name:  "vgpu-mode",
			nodes: base(func(d *gpu.Device) { d.Mode = "mps" }),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 1000, 0)}, Mode: "mps"},
			fits:  "g1",
		},
		{
			name:  "a MIG-mode card without profiles has no placement, and is not time-sliced",
			nodes: base(func(d *gpu.Device) { d.Mode = "mig" }),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 1000, 0)}},
			msg:   "1/2 AllocatedCardsInsufficientRequest, 1/2 CardMigTopologyInfeasible",
		},
		{
			name:  "use-gpuuuid",
			nodes: base(func(*gpu.Device) {}),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 1000, 0)}, Selectors: []gpu.Selector{{Type: "NVIDIA", UseUUIDs: []string{"g1"}}}},
			msg:   "1/2 AllocatedCardsInsufficientRequest, 1/2 CardUuidMismatch",
		},
		{
			name:  "nouse-gpuuuid",
			nodes: base(func(*gpu.Device) {}),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 1000, 0)}, Selectors: []gpu.Selector{{Type: "NVIDIA", NoUseUUIDs: []string{"g0"}}}},
			fits:  "g1",
		},
		{
			name:  "slots exhausted",
			nodes: base(func(d *gpu.Device) { d.Used = d.Count }),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 0, 0)}},
			msg:   "1/2 AllocatedCardsInsufficientRequest, 1/2 CardTimeSlicingExhausted",
		},
		{
			name:  "mutex device policy",
			nodes: base(func(d *gpu.Device) { d.Used = 1 }),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 0, 0)}, Exclusive: true},
			msg:   "1/2 AllocatedCardsInsufficientRequest, 1/2 ExclusiveDeviceAllocateConflict",
		},
		{
			name:  "100 cores needs an unused card",
			nodes: base(func(d *gpu.Device) { d.Used, d.UsedMemoryMiB = 1, 100 }),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 100, 100)}},
			msg:   "1/2 AllocatedCardsInsufficientRequest, 1/2 ExclusiveDeviceAllocateConflict",
		},
		{
			name:  "cores above 100 are clamped, not rejected",
			nodes: base(func(*gpu.Device) {}),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 100, 250)}},
			fits:  "g1", // a full tie: the highest index first

		},
		{
			name:  "insufficient cores",
			nodes: base(func(d *gpu.Device) { d.Used, d.UsedCores = 1, 90 }),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 100, 20)}},
			msg:   "1/2 AllocatedCardsInsufficientRequest, 1/2 CardInsufficientCore",
		},
		{
			name:  "zero-core request on a fully used card",
			nodes: base(func(d *gpu.Device) { d.Used, d.UsedCores = 1, 100 }),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 100, 0)}},
			msg:   "1/2 AllocatedCardsInsufficientRequest, 1/2 CardComputeUnitsExhausted",
		},
		{
			name:  "memory percentage of the card",
			nodes: base(func(d *gpu.Device) { d.UsedMemoryMiB, d.Used = 4001, 1 }),
			req:   gpu.FitRequest{Requests: []gpu.Request{{Container: "c", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 2, MemoryPercent: 50}}},
			msg:   "1/2 AllocatedCardsInsufficientRequest, 1/2 CardInsufficientMemory",
		},
		{
			name:  "namespace quota",
			nodes: base(func(*gpu.Device) {}),
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 3000, 0)}, Quota: gpu.Quota{LimitMemory: true, MemoryMiB: 5000}},
			msg:   "1/2 AllocatedCardsInsufficientRequest, 1/2 ResourceQuotaNotFit",
		},
		{
			name:  "a node without devices is a reason, not a panic",
			nodes: []gpu.Node{{Name: "n"}},
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 0, 0)}},
			msg:   "NodeInsufficientDevice",
		},
		{
			name:  "a node with only another vendor has too few devices of the type",
			nodes: []gpu.Node{{Name: "n", Devices: []gpu.Device{{ID: "a0", Vendor: "AMD", Count: 1, MemoryMiB: 1, Cores: 100, Healthy: true}}}},
			req:   gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 0, 0)}},
			msg:   "NodeInsufficientDevice",
		},
		{
			name: "numa-bind keeps a request on one NUMA node",
			nodes: []gpu.Node{{Name: "n", Devices: []gpu.Device{
				card("g0", 0), func() gpu.Device { d := card("g1", 1); d.NUMA = 1; return d }(),
				func() gpu.Device { d := card("g2", 2); d.NUMA = 1; return d }(),
			}}},
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 0, 0)}, NUMABind: true},
			// HAMi's spread with numa-bind sorts NUMA ascending, so the walk
			// from the end starts on NUMA 1 at its highest index.
			fits: "g2,g1",
		},
		{
			name: "numa-bind fails across NUMA nodes",
			nodes: []gpu.Node{{Name: "n", Devices: []gpu.Device{
				card("g0", 0), func() gpu.Device { d := card("g1", 1); d.NUMA = 1; return d }(),
			}}},
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 0, 0)}, NUMABind: true},
			msg: "1/2 AllocatedCardsInsufficientRequest, 1/2 NumaNotFit",
		},
		{
			name: "without numa-bind the same request spans NUMA nodes",
			nodes: []gpu.Node{{Name: "n", Devices: []gpu.Device{
				card("g0", 0), func() gpu.Device { d := card("g1", 1); d.NUMA = 1; return d }(),
			}}},
			req:  gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 0, 0)}},
			fits: "g1,g0",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := fit(tc.nodes, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			f := res.Nodes[0]
			if tc.fits == "" {
				if f.Fits || res.Node != "" {
					t.Fatalf("fitted %+v, want refusal %q", res.Containers, tc.msg)
				}
				if got := f.Message(); got != tc.msg {
					t.Fatalf("reasons = %q, want %q", got, tc.msg)
				}
				return
			}
			if !f.Fits {
				t.Fatalf("refused: %s", f.Message())
			}
			if got := chosen(t, res); got != "n/"+tc.fits {
				t.Fatalf("chose %s, want n/%s", got, tc.fits)
			}
		})
	}
}

func TestFitAssignmentAndUsage(t *testing.T) {
	nodes := []gpu.Node{{Name: "n", Devices: []gpu.Device{card("g0", 0), card("g1", 1)}}}
	req := gpu.FitRequest{Requests: []gpu.Request{nvReq("a", 2, 1000, 30), {Container: "b", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryPercent: 25}}}
	res, err := fit(nodes, req)
	if err != nil {
		t.Fatal(err)
	}
	want := []gpu.ContainerAllocation{
		// Equal devices: HAMi tries the highest index first. An NVIDIA
		// device's score leaves the request out (its registered type is
		// "NVIDIA-<model>", not "NVIDIA"), so g0 and g1 tie again for b.
		{Container: "a", Devices: []gpu.Allocation{{UUID: "g1", Type: "NVIDIA", MemoryMiB: 1000, Cores: 30}, {UUID: "g0", Type: "NVIDIA", MemoryMiB: 1000, Cores: 30}}},
		{Container: "b", Devices: []gpu.Allocation{{UUID: "g1", Type: "NVIDIA", MemoryMiB: 2000}}},
	}
	if diff := cmp.Diff(want, res.Containers); diff != "" {
		t.Fatalf("assignment (-want +got):\n%s", diff)
	}
	enc := gpu.EncodeAllocations(res.Containers, "NVIDIA")
	if enc != "g1,NVIDIA,1000,30:g0,NVIDIA,1000,30:;g1,NVIDIA,2000,0:;" {
		t.Fatalf("encoding = %q", enc)
	}
	dec, err := gpu.DecodeAllocations(enc)
	if err != nil {
		t.Fatal(err)
	}
	var all []gpu.Allocation
	for _, c := range dec {
		all = append(all, c...)
	}
	after, err := gpu.AddUsage(nodes[0].Devices, all...)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]gpu.Device{used(card("g0", 0), 1, 1000, 30), used(card("g1", 1), 2, 3000, 30)}, after); diff != "" {
		t.Fatalf("usage (-want +got):\n%s", diff)
	}
	if nodes[0].Devices[0].Used != 0 {
		t.Fatal("AddUsage modified its input")
	}
	if _, err := gpu.AddUsage(nodes[0].Devices, gpu.Allocation{UUID: "nope", Type: "NVIDIA"}); !errors.Is(err, gpu.ErrInvalidDevice) {
		t.Fatalf("unknown device: err = %v", err)
	}
	if _, err := gpu.AddUsage(nodes[0].Devices, gpu.Allocation{UUID: "g0", Type: "AMD"}); !errors.Is(err, gpu.ErrInvalidDevice) {
		t.Fatalf("wrong vendor: err = %v", err)
	}
}

func TestFitScoringWeights(t *testing.T) {
	// g0 is fuller by memory, g1 by slots. Binpack with a heavy memory weight
	// picks g0; a heavy slot weight picks g1.
	nodes := []gpu.Node{{Name: "n", Devices: []gpu.Device{used(card("g0", 0), 1, 6000, 0), used(card("g1", 1), 5, 0, 0)}}}
	for _, tc := range []struct {
		w    gpu.Weights
		want string
	}{{gpu.Weights{Slot: 1, Core: 1, Memory: 3}, "n/g0"}, {gpu.Weights{Slot: 5, Core: 1, Memory: 1}, "n/g1"}} {
		res, err := fit(nodes, gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 100, 0)}, GPUPolicy: []gpu.Policy{gpu.Binpack}, Weights: tc.w})
		if err != nil {
			t.Fatal(err)
		}
		if got := chosen(t, res); got != tc.want {
			t.Errorf("weights %+v chose %s, want %s", tc.w, got, tc.want)
		}
	}
}

func TestFitRejectsBadInput(t *testing.T) {
	ok := []gpu.Node{{Name: "n", Devices: []gpu.Device{card("g0", 0)}}}
	good := gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 0, 0)}}
	cases := []struct {
		name  string
		nodes []gpu.Node
		req   gpu.FitRequest
		want  error
	}{
		{"unknown node policy", ok, gpu.FitRequest{NodePolicy: "random"}, gpu.ErrInvalidRequest},
		{"unknown gpu policy", ok, gpu.FitRequest{GPUPolicy: []gpu.Policy{"topology"}}, gpu.ErrInvalidRequest},
		{"negative weight", ok, gpu.FitRequest{Weights: gpu.Weights{Slot: -1}}, gpu.ErrInvalidRequest},
		{"zero nums", ok, gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 0, 0, 0)}}, gpu.ErrInvalidRequest},
		{"duplicate node", append(ok, ok[0]), good, gpu.ErrInvalidDevice},
		{"duplicate device", []gpu.Node{{Name: "n", Devices: []gpu.Device{card("g", 0), card("g", 1)}}}, good, gpu.ErrInvalidDevice},
		{"negative usage", []gpu.Node{{Name: "n", Devices: []gpu.Device{used(card("g", 0), -1, 0, 0)}}}, good, gpu.ErrInvalidDevice},
		{"separator in ID", []gpu.Node{{Name: "n", Devices: []gpu.Device{card("g:1", 0)}}}, good, gpu.ErrInvalidDevice},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := fit(tc.nodes, tc.req); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestFitRequestFromPod(t *testing.T) {
	reg := gpu.DefaultRegistry()
	pod := podWith(nil, []corev1.Container{ctr("c", rl("nvidia.com/gpu", "1", "nvidia.com/gpumem", "100"))})
	pod.Annotations = map[string]string{
		gpu.AnnoNodePolicy:     "spread",
		gpu.AnnoGPUPolicy:      "binpack, numa",
		gpu.AnnoScoringWeights: "slot=2,memory=3",
		gpu.AnnoUseGPUType:     "A100,H100",
		gpu.AnnoNoUseGPUUUID:   "GPU-1",
		gpu.AnnoNUMABind:       "true",
		gpu.AnnoVGPUMode:       "hami-core",
	}
	got, err := gpu.FitRequestFromPod(pod, reg)
	if err != nil {
		t.Fatal(err)
	}
	want := gpu.FitRequest{
		Requests:   []gpu.Request{nvReq("c", 1, 100, 0)},
		NodePolicy: gpu.Spread,
		GPUPolicy:  []gpu.Policy{gpu.Binpack, gpu.NUMAOrder},
		Weights:    gpu.Weights{Slot: 2, Core: 1, Memory: 3},
		Selectors:  []gpu.Selector{{Type: "NVIDIA", UseModels: []string{"A100", "H100"}, NoUseUUIDs: []string{"GPU-1"}}},
		NUMABind:   true,
		Mode:       "hami-core",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ anno, val, field string }{
		{gpu.AnnoNodePolicy, "tightest", "metadata.annotations[hami.io/node-scheduler-policy]"},
		{gpu.AnnoGPUPolicy, "binpack,topology", "metadata.annotations[hami.io/gpu-scheduler-policy][1]"},
		{gpu.AnnoScoringWeights, "slot=x", "metadata.annotations[hami.io/device-scoring-weights][0]"},
		{gpu.AnnoNUMABind, "sometimes", "metadata.annotations[nvidia.com/numa-bind]"},
	} {
		bad := pod.DeepCopy()
		bad.Annotations = map[string]string{tc.anno: tc.val}
		if _, err := gpu.FitRequestFromPod(bad, reg); !errors.Is(err, gpu.ErrInvalidRequest) || !cmp.Equal(invalidFields(err), []string{tc.field}) {
			t.Errorf("%s=%q: err = %v, want ErrInvalidRequest at %s", tc.anno, tc.val, err, tc.field)
		}
	}
}

func TestDecodeAllocationsRejectsMalformed(t *testing.T) {
	for s, field := range map[string]string{
		"g0,NVIDIA,1000:":          "containers[0].devices[0]",
		"g0,NVIDIA,x,0:":           "containers[0].devices[0].memoryMiB",
		",NVIDIA,1,1:":             "containers[0].devices[0].uuid",
		"g0,NVIDIA,-1,0:":          "containers[0].devices[0].memoryMiB",
		"g0,NVIDIA,1,99999999999:": "containers[0].devices[0].cores",
	} {
		if _, err := gpu.DecodeAllocations(s); !errors.Is(err, gpu.ErrInvalidAllocation) || !cmp.Equal(invalidFields(err), []string{field}) {
			t.Errorf("%q: err = %v, want ErrInvalidAllocation at %s", s, err, field)
		}
	}
	got, err := gpu.DecodeAllocations("g0,NVIDIA,1,2:;;g1,AMD,3,4")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]gpu.Allocation{{{UUID: "g0", Type: "NVIDIA", MemoryMiB: 1, Cores: 2}}, nil, {{UUID: "g1", Type: "AMD", MemoryMiB: 3, Cores: 4}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func FuzzDecodeAllocations(f *testing.F) {
	for _, s := range []string{"", ";", "g0,NVIDIA,1000,30:g1,NVIDIA,1000,30:;g0,NVIDIA,2000,0:;", "a,b,c,d", ":::;;;", "x,y,1,2:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		dec, err := gpu.DecodeAllocations(s)
		if err != nil {
			if !errors.Is(err, gpu.ErrInvalidAllocation) || !errors.Is(err, gpu.ErrInvalidInput) || len(invalidFields(err)) == 0 {
				t.Fatalf("error does not wrap ErrInvalidAllocation or names no field: %v", err)
			}
			return
		}
		// Whatever decodes re-encodes to something that decodes to the same.
		var cs []gpu.ContainerAllocation
		types := map[string]bool{}
		for _, c := range dec {
			cs = append(cs, gpu.ContainerAllocation{Devices: c})
			for _, a := range c {
				types[a.Type] = true
			}
		}
		for typ := range types {
			again, err := gpu.DecodeAllocations(gpu.EncodeAllocations(cs, typ))
			if err != nil {
				t.Fatalf("re-encoding of %q does not decode: %v", s, err)
			}
			if len(again) != len(dec) {
				t.Fatalf("re-encoding of %q has %d containers, want %d", s, len(again), len(dec))
			}
		}
	})
}

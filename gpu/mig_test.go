package gpu_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/gpu"
)

// a100Profiles is the geometry an A100 40GB registers in MIG mode: seven
// memory slices (eight placement units), each profile with the starts it
// may take.
func a100Profiles() []gpu.MIGProfile {
	at := func(size uint32, starts ...uint32) []gpu.MIGPlacement {
		var out []gpu.MIGPlacement
		for _, s := range starts {
			out = append(out, gpu.MIGPlacement{Start: s, Size: size})
		}
		return out
	}
	return []gpu.MIGProfile{
		{Name: "7g.40gb", MemoryMiB: 40192, Cores: 100, SliceCount: 7, Placements: at(8, 0)},
		{Name: "1g.5gb", MemoryMiB: 4864, Cores: 14, SliceCount: 1, Placements: at(1, 0, 1, 2, 3, 4, 5, 6)},
		{Name: "2g.10gb", MemoryMiB: 9984, Cores: 28, SliceCount: 2, Placements: at(2, 0, 2, 4)},
		{Name: "3g.20gb", MemoryMiB: 19968, Cores: 42, SliceCount: 3, Placements: at(4, 0, 4)},
		{Name: "4g.20gb", MemoryMiB: 19968, Cores: 57, SliceCount: 4, Placements: at(4, 0)},
	}
}

func migCard(id string, inUse ...gpu.MIGPlacement) gpu.Device {
	return gpu.Device{ID: id, Vendor: "NVIDIA", Model: "NVIDIA-A100-SXM4-40GB", Count: 7, MemoryMiB: 40960, Cores: 100, Healthy: true,
		Mode: gpu.ModeMIG, MIGProfiles: a100Profiles(), MIGInUse: inUse}
}

func TestMIGPlacement(t *testing.T) {
	pl := func(start, size uint32) gpu.MIGPlacement { return gpu.MIGPlacement{Start: start, Size: size} }
	inst := func(profile string, mem, cores int32, p gpu.MIGPlacement) gpu.Allocation {
		return gpu.Allocation{UUID: "m0", Type: "NVIDIA", MemoryMiB: mem, Cores: cores, MIGProfile: profile, MIGPlacement: p}
	}
	cases := []struct {
		name string
		dev  gpu.Device
		req  gpu.FitRequest
		want []gpu.Allocation
		msg  string
	}{
		{name: "the smallest profile that holds the memory, 1g packed at the top", dev: migCard("m0"),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 4000, 0)}}, want: []gpu.Allocation{inst("1g.5gb", 4864, 14, pl(6, 1))}},
		{name: "3g before 4g at equal memory (fewer slices), highest start first", dev: migCard("m0"),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 10000, 0)}}, want: []gpu.Allocation{inst("3g.20gb", 19968, 42, pl(4, 4))}},
		{name: "2g takes the lowest free start", dev: migCard("m0", pl(0, 1)),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 9000, 0)}}, want: []gpu.Allocation{inst("2g.10gb", 9984, 28, pl(2, 2))}},
		{name: "every large enough profile's placements taken", dev: migCard("m0", pl(0, 2), pl(2, 2), pl(4, 2)),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 9000, 0)}}, msg: "1/1 CardMigTopologyInfeasible"},
		{name: "two instances of one request on one device", dev: migCard("m0"),
			req:  gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 2, 4000, 0)}},
			want: []gpu.Allocation{inst("1g.5gb", 4864, 14, pl(6, 1)), inst("1g.5gb", 4864, 14, pl(5, 1))}},
		{name: "the whole card blocked by one small instance", dev: migCard("m0", pl(0, 1)),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 30000, 0)}}, msg: "1/1 CardMigTopologyInfeasible"},
		{name: "the whole card on an empty device", dev: migCard("m0"),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 30000, 0)}}, want: []gpu.Allocation{inst("7g.40gb", 40192, 100, pl(0, 8))}},
		{name: "no profile large enough", dev: migCard("m0"),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 40500, 0)}}, msg: "1/1 CardMigTopologyInfeasible"},
		{name: "a pod asking another mode does not get MIG", dev: migCard("m0"),
			req: gpu.FitRequest{Requests: []gpu.Request{nvReq("c", 1, 4000, 0)}, Mode: "hami-core"}, msg: "1/1 CardTypeMismatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := fit([]gpu.Node{{Name: "n", Devices: []gpu.Device{tc.dev}}}, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.msg != "" {
				if res.Node != "" || res.Nodes[0].Message() != tc.msg {
					t.Fatalf("got %+v %q, want refusal %q", res.Containers, res.Nodes[0].Message(), tc.msg)
				}
				return
			}
			if res.Node != "n" {
				t.Fatalf("refused: %s", res.Nodes[0].Message())
			}
			if diff := cmp.Diff(tc.want, res.Containers[0].Devices); diff != "" {
				t.Fatalf("instances (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPropMIGPlacementsNeverOverlap fits random requests on random MIG
// devices, pod after pod, recording each fit's instances as in use: no two
// instances on a device ever share a slice, and every instance is one of
// the device's profiles at one of its placements. Ignoring the instances
// taken earlier in the same request (dropping them from picker.occupied)
// makes it fail.
func TestPropMIGPlacementsNeverOverlap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		devs := make([]gpu.Device, rapid.IntRange(1, 3).Draw(t, "devices"))
		for i := range devs {
			devs[i] = migCard(fmt.Sprintf("m%d", i))
			devs[i].Index, devs[i].Count = i, 100
			devs[i].MemoryMiB = 1 << 20 // memory is the geometry's business here
		}
		for pod := range rapid.IntRange(1, 8).Draw(t, "pods") {
			req := nvReq(fmt.Sprintf("c%d", pod), rapid.Int32Range(1, 4).Draw(t, "nums"), rapid.Int32Range(1, 41000).Draw(t, "mem"), 0)
			res, err := fit([]gpu.Node{{Name: "n", Devices: devs}}, gpu.FitRequest{Requests: []gpu.Request{req}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Node == "" {
				continue
			}
			usage := gpu.PodUsage{Node: "n", MIG: res.Containers[0].Devices}
			if devs, err = gpu.AddPodUsage(devs, usage); err != nil {
				t.Fatal(err)
			}
		}
		for _, d := range devs {
			for i, a := range d.MIGInUse {
				known := false
				for _, p := range a100Profiles() {
					for _, q := range p.Placements {
						known = known || q == a
					}
				}
				if !known {
					t.Fatalf("%s: placement %+v is no profile's", d.ID, a)
				}
				for _, b := range d.MIGInUse[i+1:] {
					if a.Start < b.Start+b.Size && b.Start < a.Start+a.Size {
						t.Fatalf("%s: placements %+v and %+v overlap (in use %v)", d.ID, a, b, d.MIGInUse)
					}
				}
			}
		}
	})
}

// TestMIGReservationsRestored: a MIG reservation the pod's devices
// annotation does not list is read, not refused, and its slices stay
// occupied, as HAMi v2.10's getNodesUsage restores them; a reservation on a
// device the node does not have makes every MIG device unhealthy, and one on
// a device outside MIG mode makes that device unhealthy. Keys HAMi does not
// know are ignored.
func TestMIGReservationsRestored(t *testing.T) {
	reg := gpu.DefaultRegistry()
	pod := nvPod(map[string]string{
		"hami.io/vgpu-node":              "n1",
		"hami.io/vgpu-devices-allocated": ";GPU-m,NVIDIA,4864,14:;",
		"hami.io/vgpu-mig-allocations": `[{"containerIndex":1,"deviceIndex":0,"gpuUUID":"GPU-m","profile":"1g.5gb","placement":{"start":6,"size":1},"state":"ready"},` +
			`{"containerIndex":2,"deviceIndex":0,"gpuUUID":"GPU-m","profile":"3g.20gb","placement":{"start":0,"size":4}}]`,
	})
	u, err := gpu.DecodePodUsage(pod, reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.MIG) != 2 {
		t.Fatalf("MIG = %+v, want both reservations", u.MIG)
	}
	devs, err := gpu.AddPodUsage([]gpu.Device{migCard("GPU-m"), card("GPU-h", 1)}, u)
	if err != nil {
		t.Fatal(err)
	}
	want := []gpu.MIGPlacement{{Start: 6, Size: 1}, {Start: 0, Size: 4}}
	if diff := cmp.Diff(want, devs[0].MIGInUse); diff != "" || !devs[0].Healthy {
		t.Fatalf("MIG in use (-want +got):\n%s\nhealthy %v", diff, devs[0].Healthy)
	}
	// The next 4g instance finds slices 0..3 taken and no other placement.
	plan, err := gpu.Decide(gpu.Input{Nodes: []gpu.Node{{Name: "n1", Devices: devs[:1]}},
		Request: gpu.FitRequest{Requests: []gpu.Request{{Container: "c", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryMiB: 19968}}}}, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range plan.Containers {
		for _, a := range c.Devices {
			if a.MIGPlacement.Start < 4 {
				t.Fatalf("placed %+v on slices a restored reservation holds", a)
			}
		}
	}
	for _, tc := range []struct {
		name, uuid string
		healthy    []bool
	}{
		{"unknown device", "GPU-x", []bool{false, true}},
		{"device outside MIG mode", "GPU-h", []bool{true, false}},
	} {
		p := nvPod(map[string]string{"hami.io/vgpu-node": "n1", "hami.io/vgpu-devices-allocated": ";;",
			"hami.io/vgpu-mig-allocations": `[{"containerIndex":1,"deviceIndex":0,"gpuUUID":"` + tc.uuid + `","profile":"1g.5gb","placement":{"start":6,"size":1}}]`})
		u, err := gpu.DecodePodUsage(p, reg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		devs, err := gpu.AddPodUsage([]gpu.Device{migCard("GPU-m"), card("GPU-h", 1)}, u)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := []bool{devs[0].Healthy, devs[1].Healthy}; !slices.Equal(got, tc.healthy) {
			t.Errorf("%s: healthy %v, want %v", tc.name, got, tc.healthy)
		}
	}
}

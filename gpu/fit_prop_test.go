package gpu_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/gpu"
)

var vendors = []string{"NVIDIA", "MLU"}

func genDevice(t *rapid.T, node string, i int) gpu.Device {
	count := rapid.Int32Range(1, 4).Draw(t, "count")
	mem := rapid.Int32Range(0, 4).Draw(t, "memUnits") * 1000
	d := gpu.Device{
		ID:        fmt.Sprintf("%s-g%d", node, i),
		Index:     i,
		Vendor:    rapid.SampledFrom(vendors).Draw(t, "vendor"),
		Model:     rapid.SampledFrom([]string{"A100", "V100"}).Draw(t, "model"),
		Count:     count,
		MemoryMiB: mem,
		Cores:     100,
		NUMA:      rapid.IntRange(0, 1).Draw(t, "numa"),
		Healthy:   rapid.Float64Range(0, 1).Draw(t, "health") < 0.85,
		Cordoned:  rapid.Float64Range(0, 1).Draw(t, "cordon") < 0.1,
	}
	d.Used = rapid.Int32Range(0, count).Draw(t, "used")
	if d.Used > 0 {
		d.UsedMemoryMiB = rapid.Int32Range(0, mem).Draw(t, "usedMem")
		d.UsedCores = rapid.SampledFrom([]int32{0, 0, 25, 50, 90, 100}).Draw(t, "usedCores")
	}
	return d
}

func genNodes(t *rapid.T) []gpu.Node {
	n := rapid.IntRange(1, 4).Draw(t, "nodes")
	nodes := make([]gpu.Node, n)
	for i := range nodes {
		name := fmt.Sprintf("n%d", i)
		nodes[i].Name = name
		for j := range rapid.IntRange(0, 4).Draw(t, "devices") {
			nodes[i].Devices = append(nodes[i].Devices, genDevice(t, name, j))
		}
	}
	return nodes
}

func genFitRequest(t *rapid.T) gpu.FitRequest {
	var req gpu.FitRequest
	for c := range rapid.IntRange(1, 3).Draw(t, "containers") {
		r := gpu.Request{
			Container: fmt.Sprintf("c%d", c),
			Init:      rapid.Bool().Draw(t, "init"),
			Type:      rapid.SampledFrom(vendors).Draw(t, "type"),
			Nums:      rapid.Int32Range(1, 3).Draw(t, "nums"),
			Cores:     rapid.SampledFrom([]int32{0, 10, 30, 50, 100, 120}).Draw(t, "cores"),
		}
		if rapid.Bool().Draw(t, "pct") {
			r.MemoryPercent = rapid.Int32Range(1, 100).Draw(t, "memPct")
		} else {
			r.MemoryMiB = rapid.Int32Range(0, 3000).Draw(t, "memMiB")
		}
		req.Requests = append(req.Requests, r)
	}
	// DetectRequests lists init containers first; keep that shape.
	slices.SortStableFunc(req.Requests, func(a, b gpu.Request) int {
		if a.Init == b.Init {
			return 0
		}
		if a.Init {
			return -1
		}
		return 1
	})
	req.NodePolicy = rapid.SampledFrom([]gpu.Policy{"", gpu.Binpack, gpu.Spread}).Draw(t, "nodePolicy")
	req.GPUPolicy = rapid.SliceOfN(rapid.SampledFrom([]gpu.Policy{gpu.Binpack, gpu.Spread, gpu.NUMAOrder, gpu.Mutex, gpu.TopologyAware}), 0, 2).Draw(t, "gpuPolicy")
	req.NUMABind = rapid.Bool().Draw(t, "numaBind")
	req.Exclusive = rapid.Float64Range(0, 1).Draw(t, "exclusive") < 0.2
	if rapid.Bool().Draw(t, "selector") {
		req.Selectors = []gpu.Selector{{Type: "NVIDIA", NoUseModels: []string{"V100"}}}
	}
	return req
}

// TestPropFitNeverOverassigns checks that a fit never gives a device more slots, memory or cores than it
// has, and never a device the request rejects, on every
// node outcome, fitting or not.
func TestPropFitNeverOverassigns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := genNodes(t)
		req := genFitRequest(t)
		res, err := fit(nodes, req)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]gpu.Node{}
		for _, n := range nodes {
			byName[n.Name] = n
		}
		for _, f := range res.Nodes {
			n := byName[f.Node]
			if !f.Fits {
				// Reasons count the failed request's type's devices only.
				ofType := 0
				for _, d := range n.Devices {
					if d.Vendor == f.FailedType {
						ofType++
					}
				}
				sum := 0
				for _, r := range f.Rejections {
					sum += r.Count
					if r.Code == gpu.NodeInsufficientDevice {
						if r.Total != 0 || len(f.Rejections) != 1 {
							t.Fatalf("%s: %q", f.Node, f.Message())
						}
						continue
					}
					if r.Total != ofType {
						t.Fatalf("%s: reason %s total, node has %d %s devices", f.Node, r, ofType, f.FailedType)
					}
				}
				if sum > ofType {
					t.Fatalf("%s: reasons %q count %d devices, node has %d of the type", f.Node, f.Message(), sum, ofType)
				}
				continue
			}
			devs := map[string]gpu.Device{}
			for _, d := range n.Devices {
				devs[d.ID] = d
			}
			// App containers accumulate; each init container stands alone.
			app := map[string][]gpu.Allocation{}
			for _, c := range f.Containers {
				seen := map[string]bool{}
				for _, a := range c.Devices {
					d, ok := devs[a.UUID]
					switch {
					case !ok:
						t.Fatalf("%s: allocation on unknown device %s", f.Node, a.UUID)
					case !d.Healthy || d.Cordoned || d.Vendor != a.Type:
						t.Fatalf("%s: picked ineligible device %+v for %+v", f.Node, d, a)
					case req.Selectors != nil && d.Vendor == "NVIDIA" && d.Model == "V100":
						t.Fatalf("%s: picked a deselected model %+v", f.Node, d)
					case seen[a.UUID] && !hasDuplicateTypeRequest(req, c.Container):
						t.Fatalf("%s: container %s got device %s twice", f.Node, c.Container, a.UUID)
					}
					seen[a.UUID] = true
				}
				if c.Init {
					checkCapacity(t, f.Node, devs, groupByDevice(c.Devices))
				} else {
					for _, a := range c.Devices {
						app[a.UUID] = append(app[a.UUID], a)
					}
				}
			}
			checkCapacity(t, f.Node, devs, app)
		}
	})
}

func hasDuplicateTypeRequest(req gpu.FitRequest, container string) bool {
	seen := map[string]bool{}
	for _, r := range req.Requests {
		if r.Container != container {
			continue
		}
		if seen[r.Type] {
			return true
		}
		seen[r.Type] = true
	}
	return false
}

func groupByDevice(allocs []gpu.Allocation) map[string][]gpu.Allocation {
	out := map[string][]gpu.Allocation{}
	for _, a := range allocs {
		out[a.UUID] = append(out[a.UUID], a)
	}
	return out
}

func checkCapacity(t *rapid.T, node string, devs map[string]gpu.Device, byDev map[string][]gpu.Allocation) {
	for id, allocs := range byDev {
		d := devs[id]
		mem, cores := int64(d.UsedMemoryMiB), int64(d.UsedCores)
		full := false
		for _, a := range allocs {
			mem += int64(a.MemoryMiB)
			cores += int64(a.Cores)
			if a.Cores >= 100 {
				full = true
			}
		}
		switch {
		case int64(d.Used)+int64(len(allocs)) > int64(d.Count):
			t.Fatalf("%s/%s: %d slots used + %d assigned > %d", node, id, d.Used, len(allocs), d.Count)
		case mem > int64(d.MemoryMiB):
			t.Fatalf("%s/%s: memory %d assigned+used > %d", node, id, mem, d.MemoryMiB)
		case cores > int64(d.Cores):
			t.Fatalf("%s/%s: cores %d assigned+used > %d", node, id, cores, d.Cores)
		case full && (d.Used > 0 || len(allocs) > 1):
			t.Fatalf("%s/%s: a 100-core request shares the card (used %d, %d allocations)", node, id, d.Used, len(allocs))
		}
	}
}

// TestPropFitIsPureAndDeterministic checks that Fit does not modify its input,
// gives the same result twice, and does not depend on the order of the nodes.
func TestPropFitIsPureAndDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := genNodes(t)
		req := genFitRequest(t)
		nodesBefore := cloneNodes(nodes)
		reqBefore := cloneReq(req)
		first, err := fit(nodes, req)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(nodesBefore, nodes); diff != "" {
			t.Fatalf("Fit modified the nodes:\n%s", diff)
		}
		if diff := cmp.Diff(reqBefore, req); diff != "" {
			t.Fatalf("Fit modified the request:\n%s", diff)
		}
		perm := rapid.Permutation(nodes).Draw(t, "perm")
		second, err := fit(perm, req)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, second); diff != "" {
			t.Fatalf("Fit depends on node order:\n%s", diff)
		}
	})
}

// TestPropFitMatchesNaiveReference compares single-device, single-container
// fits with a naive check of each device: Fit refuses exactly when no device
// passes every check on its own.
func TestPropFitMatchesNaiveReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := genNodes(t)[:1]
		req := genFitRequest(t)
		req.Requests = req.Requests[:1]
		req.Requests[0].Nums = 1
		req.NUMABind = false
		res, err := fit(nodes, req)
		if err != nil {
			t.Fatal(err)
		}
		r := req.Requests[0]
		any := false
		for _, d := range nodes[0].Devices {
			mem := int64(r.MemoryMiB)
			if mem == 0 {
				mem = int64(d.MemoryMiB) * int64(r.MemoryPercent) / 100
			}
			cores := int64(min(r.Cores, 100))
			ok := d.Vendor == r.Type && d.Healthy && !d.Cordoned &&
				!(req.Selectors != nil && d.Vendor == "NVIDIA" && d.Model == "V100") &&
				d.Used < d.Count && !((req.Exclusive || slices.Contains(req.GPUPolicy, gpu.Mutex)) && d.Used > 0) &&
				int64(d.MemoryMiB-d.UsedMemoryMiB) >= mem && int64(d.Cores-d.UsedCores) >= cores &&
				!(d.Cores == 100 && cores == 100 && d.Used > 0) && !(d.Cores != 0 && cores == 0 && d.UsedCores >= d.Cores)
			any = any || ok
		}
		if got := res.Nodes[0].Fits; got != any {
			t.Fatalf("Fit says fits=%v (%s), naive check says %v", got, res.Nodes[0].Message(), any)
		}
	})
}

func cloneNodes(nodes []gpu.Node) []gpu.Node {
	out := slices.Clone(nodes)
	for i := range out {
		out[i].Devices = slices.Clone(out[i].Devices)
	}
	return out
}

func cloneReq(r gpu.FitRequest) gpu.FitRequest {
	r.Requests = slices.Clone(r.Requests)
	r.GPUPolicy = slices.Clone(r.GPUPolicy)
	r.Selectors = slices.Clone(r.Selectors)
	return r
}

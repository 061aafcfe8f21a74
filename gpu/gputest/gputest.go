// Package gputest provides rapid generators of valid fit inputs for package
// gpu, for property tests of schedulers built on it, in the way
// net/http/httptest serves tests of net/http code. plancore's own properties
// draw from them and check each plan with gpu.CheckPlan.
package gputest

import (
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/gpu"
)

// Vendors are the device types the generators draw.
var Vendors = []string{"NVIDIA", "MLU"}

// Device draws device i of node: 1 to 4 slots, 0 to 4000 MiB, 100 cores,
// NUMA 0 or 1, mostly healthy and not cordoned, partly used.
func Device(node string, i int) *rapid.Generator[gpu.Device] {
	return rapid.Custom(func(t *rapid.T) gpu.Device { return drawDevice(t, node, i) })
}

func drawDevice(t *rapid.T, node string, i int) gpu.Device {
	count := rapid.Int32Range(1, 4).Draw(t, "count")
	mem := rapid.Int32Range(0, 4).Draw(t, "memUnits") * 1000
	d := gpu.Device{
		ID:        fmt.Sprintf("%s-g%d", node, i),
		Index:     i,
		Vendor:    rapid.SampledFrom(Vendors).Draw(t, "vendor"),
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

// Nodes draws 1 to 4 nodes n0, n1, ... of 0 to 4 Devices each.
func Nodes() *rapid.Generator[[]gpu.Node] {
	return rapid.Custom(drawNodes)
}

func drawNodes(t *rapid.T) []gpu.Node {
	n := rapid.IntRange(1, 4).Draw(t, "nodes")
	nodes := make([]gpu.Node, n)
	for i := range nodes {
		name := fmt.Sprintf("n%d", i)
		nodes[i].Name = name
		for j := range rapid.IntRange(0, 4).Draw(t, "devices") {
			nodes[i].Devices = append(nodes[i].Devices, drawDevice(t, name, j))
		}
	}
	return nodes
}

// FitRequest draws what a pod asks for: 1 to 3 containers (init containers
// first, as DetectRequests lists them) each of one type, 1 to 3 devices,
// memory in MiB or percent, cores up to 120 (more than a card), node and
// device policies, NUMA binding, exclusive use, and sometimes a selector
// excluding NVIDIA V100s.
func FitRequest() *rapid.Generator[gpu.FitRequest] {
	return rapid.Custom(drawFitRequest)
}

func drawFitRequest(t *rapid.T) gpu.FitRequest {
	var req gpu.FitRequest
	for c := range rapid.IntRange(1, 3).Draw(t, "containers") {
		r := gpu.Request{
			Container: fmt.Sprintf("c%d", c),
			Init:      rapid.Bool().Draw(t, "init"),
			Type:      rapid.SampledFrom(Vendors).Draw(t, "type"),
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

// Input draws Nodes and a FitRequest.
func Input() *rapid.Generator[gpu.Input] {
	return rapid.Custom(func(t *rapid.T) gpu.Input {
		return gpu.Input{Nodes: drawNodes(t), Request: drawFitRequest(t)}
	})
}

package gpu_test

import (
	"strings"
	"testing"

	"github.com/plancore/plancore/gpu"
)

// TestCheckPlanCatchesBrokenPlans breaks a valid fit plan in one way at a time
// and checks that CheckPlan names the break.
func TestCheckPlanCatchesBrokenPlans(t *testing.T) {
	card := func(id string, usedMem int32, healthy bool) gpu.Device {
		return gpu.Device{ID: id, Vendor: "NVIDIA", Model: "A100", Count: 4, MemoryMiB: 8000, Cores: 100, Healthy: healthy, UsedMemoryMiB: usedMem}
	}
	in := gpu.Input{
		Nodes: []gpu.Node{
			{Name: "a", Devices: []gpu.Device{card("a0", 0, true), card("a1", 0, false)}},
			{Name: "b", Devices: []gpu.Device{card("b0", 7500, true)}},
		},
		Request: gpu.FitRequest{Requests: []gpu.Request{{Container: "main", Type: "NVIDIA", Capabilities: nvidiaCaps, Nums: 1, MemoryMiB: 1000, Cores: 30}}},
	}
	plan, err := gpu.Decide(in, gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := gpu.CheckPlan(in, gpu.Options{}, plan); err != nil || plan.Node != "a" {
		t.Fatalf("the valid plan (node %q) fails the check: %v", plan.Node, err)
	}
	for _, b := range []struct {
		name, want string
		brk        func(p *gpu.Plan)
	}{
		{"more memory than the card has", "a/a0: 9000 MiB used and assigned, the device has 8000", func(p *gpu.Plan) {
			p.Nodes[0].Containers[0].Devices[0].MemoryMiB = 9000
		}},
		{"an unhealthy card", "ineligible device a1", func(p *gpu.Plan) { p.Nodes[0].Containers[0].Devices[0].UUID = "a1" }},
		{"a refused node chosen", "chosen node b does not fit", func(p *gpu.Plan) { p.Node = "b" }},
		{"nothing chosen although a node fits", `chosen node "" while some node fits`, func(p *gpu.Plan) { p.Node, p.Containers = "", nil }},
		{"a node left out", "1 node outcomes for 2 nodes", func(p *gpu.Plan) { p.Nodes = p.Nodes[:1] }},
	} {
		t.Run(b.name, func(t *testing.T) {
			p := plan
			p.Nodes = append([]gpu.NodeFit(nil), plan.Nodes...)
			p.Nodes[0].Containers = []gpu.ContainerAllocation{{Container: "main", Devices: append([]gpu.Allocation(nil), plan.Nodes[0].Containers[0].Devices...)}}
			p.Containers = p.Nodes[0].Containers
			b.brk(&p)
			if err := gpu.CheckPlan(in, gpu.Options{}, p); err == nil || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("CheckPlan = %v, want an error containing %q", err, b.want)
			}
		})
	}
}

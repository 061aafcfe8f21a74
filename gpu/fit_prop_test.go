package gpu_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/gpu/gputest"
)

// TestPropFitNeverOverassigns checks that every plan keeps gpu.CheckPlan's
// invariants (no device given more slots, memory or cores than it has, never
// an ineligible device, rejections that add up, the chosen node fits) on every
// node outcome, fitting or not, and never picks a model the selector excludes.
// Break that makes it fail: memory left unchecked when a request fits a
// device (the CardInsufficientMemory case in pick.go; found within 100
// checks).
func TestPropFitNeverOverassigns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := gputest.Input().Draw(t, "input")
		res, err := gpu.Decide(in, gpu.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := gpu.CheckPlan(in, gpu.Options{}, res); err != nil {
			t.Fatal(err)
		}
		byName := map[string]gpu.Node{}
		for _, n := range in.Nodes {
			byName[n.Name] = n
		}
		for _, f := range res.Nodes {
			for _, c := range f.Containers {
				for _, a := range c.Devices {
					for _, d := range byName[f.Node].Devices {
						if d.ID == a.UUID && in.Request.Selectors != nil && d.Vendor == "NVIDIA" && d.Model == "V100" {
							t.Fatalf("%s: picked a deselected model %+v", f.Node, d)
						}
					}
				}
			}
		}
	})
}

// TestPropFitIsPureAndDeterministic checks that Fit does not modify its input,
// gives the same result twice, and does not depend on the order of the nodes.
func TestPropFitIsPureAndDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := gputest.Nodes().Draw(t, "nodes")
		req := gputest.FitRequest().Draw(t, "request")
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
		nodes := gputest.Nodes().Draw(t, "nodes")[:1]
		req := gputest.FitRequest().Draw(t, "request")
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

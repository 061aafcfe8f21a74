package gpu_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/fake/sim"
	"github.com/plancore/plancore/gpu"
)

// benchNodes builds n nodes of 8 GPUs each, with some usage on every node
// so scores differ.
func benchNodes(n int) []gpu.Node {
	nodes := make([]gpu.Node, n)
	for i := range nodes {
		nodes[i].Name = fmt.Sprintf("node-%04d", i)
		for j := range 8 {
			d := card(fmt.Sprintf("GPU-%04d-%d", i, j), j)
			d.NUMA = j / 4
			if (i+j)%3 == 0 {
				d = used(d, 1, int32(1000*(j%4)), int32(10*(i%5)))
			}
			nodes[i].Devices = append(nodes[i].Devices, d)
		}
	}
	return nodes
}

// BenchmarkFit fits one pod asking 2 GPUs (4000 MiB, 30 cores each) over
// 100 and 1,000 nodes of 8 GPUs (Decide: every node fitted, scored and one
// chosen). Allocations grow with the nodes, not with devices × nodes: about
// seven per node (the order, the scores, the picks, the assignment); the
// working copy of a node's devices is reused from node to node.
func BenchmarkFit(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			nodes := benchNodes(n)
			req := gpu.FitRequest{Requests: []gpu.Request{nvReq("main", 2, 4000, 30)}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := gpu.Decide(gpu.Input{Nodes: nodes, Request: req}, gpu.Options{})
				if err != nil || res.Node == "" {
					b.Fatalf("fit failed: %v %+v", err, res.Nodes[0])
				}
			}
		})
	}
}

// TestValidationAllocatesNothingOnValidInput: Decide's checks (Input.Validate
// and Options.Validate) build a field path, and box their error kind, only
// when a check fails, so on 8 valid nodes of 8 GPUs (one with MIG geometry in
// use) they allocate nothing; the one-contract rework had made it one path
// per node and request. Breaking it: build any path eagerly again
// (field.NewPath outside an error branch), or hand plancore.Invalid a
// subError sentinel on valid input.
func TestValidationAllocatesNothingOnValidInput(t *testing.T) {
	nodes := benchNodes(8)
	nodes[7].Devices[0] = migCard("GPU-MIG", gpu.MIGPlacement{Start: 0, Size: 1})
	in := gpu.Input{Nodes: nodes, Request: gpu.FitRequest{GPUPolicy: []gpu.Policy{gpu.Binpack},
		Requests: []gpu.Request{nvReq("main", 2, 4000, 30), nvReq("side", 1, 1000, 10)}}}
	allocs := testing.AllocsPerRun(200, func() {
		if err := in.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := (gpu.Options{}).Validate(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Input.Validate + Options.Validate allocate %v times per call on valid input, want 0", allocs)
	}
}

// BenchmarkFitPolicies is BenchmarkFit's 1,000 nodes under the other device
// orders: a binpack,numa chain, numa-bind, and topology-aware (which keeps
// every fitting device and searches the pairs).
func BenchmarkFitPolicies(b *testing.B) {
	nodes := benchNodes(1000)
	for _, tc := range []struct {
		name string
		req  gpu.FitRequest
	}{
		{"chain", gpu.FitRequest{GPUPolicy: []gpu.Policy{gpu.Binpack, gpu.NUMAOrder}}},
		{"numa-bind", gpu.FitRequest{NUMABind: true}},
		{"topology-aware", gpu.FitRequest{GPUPolicy: []gpu.Policy{gpu.TopologyAware}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			req := tc.req
			req.Requests = []gpu.Request{nvReq("main", 2, 4000, 30)}
			b.ReportAllocs()
			for b.Loop() {
				if res, err := fit(nodes, req); err != nil || res.Node == "" {
					b.Fatalf("fit failed: %v", err)
				}
			}
		})
	}
}

// BenchmarkBurst40 runs a burst: 40 GPU pods Bind to one node
// at t = 0 and the device plugin holds the lock 22 ms per pod. It reports the
// simulated completion time as sim-ms (target ≤ 1056) and fails if the burst
// breaks mutual exclusion or any Bind fails.
func BenchmarkBurst40(b *testing.B) {
	for _, queue := range []bool{false, true} {
		b.Run(fmt.Sprintf("queue=%v", queue), func(b *testing.B) {
			b.ReportAllocs()
			var simMS float64
			for i := 0; b.Loop(); i++ {
				w := fake.NewWorld(uint64(i), time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC))
				rep, err := sim.RunBurst(w, sim.BurstConfig{Queue: queue, Seed: uint64(i)})
				if err != nil {
					b.Fatal(err)
				}
				if len(rep.Violations) > 0 || rep.Failed() > 0 {
					b.Fatalf("violations %v, %d failed", rep.Violations, rep.Failed())
				}
				simMS = max(simMS, float64(rep.Completion)/float64(time.Millisecond))
			}
			b.ReportMetric(simMS, "sim-ms")
		})
	}
}

// BenchmarkDecode reads what HAMi's machines write: DecodeNode over a node
// carrying three vendors' registers, link scores and handshakes, and
// DecodePodUsage over a pod holding NVIDIA devices and a MIG instance.
func BenchmarkDecode(b *testing.B) {
	reg := gpu.DefaultRegistry()
	b.Run("node", func(b *testing.B) {
		node := hamiNode()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gpu.DecodeNode(node, reg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pod", func(b *testing.B) {
		pod := nvPod(map[string]string{
			"hami.io/vgpu-node":              "n1",
			"hami.io/vgpu-devices-allocated": "GPU-a,NVIDIA,1000,30:GPU-b,NVIDIA,2000,0:;GPU-m,NVIDIA,4864,14:;",
			"hami.io/vgpu-mig-allocations":   `[{"containerIndex":1,"deviceIndex":0,"gpuUUID":"GPU-m","profile":"1g.5gb","placement":{"start":6,"size":1}}]`,
		})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gpu.DecodePodUsage(pod, reg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

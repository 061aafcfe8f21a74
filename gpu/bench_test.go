package gpu_test

import (
	"fmt"
	"testing"

	"github.com/plancore/plancore/gpu"
)

// BenchmarkFit fits one 2-GPU pod on a 100-node cluster of 8 GPUs each, with
// some usage on every node so scores differ.
func BenchmarkFit(b *testing.B) {
	nodes := make([]gpu.Node, 100)
	for i := range nodes {
		nodes[i].Name = fmt.Sprintf("node-%03d", i)
		for j := range 8 {
			d := card(fmt.Sprintf("GPU-%03d-%d", i, j), j)
			d.NUMA = j / 4
			if (i+j)%3 == 0 {
				d = used(d, 1, int32(1000*(j%4)), int32(10*(i%5)))
			}
			nodes[i].Devices = append(nodes[i].Devices, d)
		}
	}
	req := gpu.FitRequest{Requests: []gpu.Request{nvReq("main", 2, 4000, 30)}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := gpu.Fit(nodes, req)
		if err != nil || res.Node == "" {
			b.Fatalf("fit failed: %v %+v", err, res.Nodes[0])
		}
	}
}

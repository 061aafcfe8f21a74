package gpu_test

import "github.com/plancore/plancore/gpu"

// fit is Decide with default Options, the arguments spelled out as the tests read.
func fit(nodes []gpu.Node, req gpu.FitRequest) (gpu.Plan, error) {
	return gpu.Decide(gpu.Input{Nodes: nodes, Request: req}, gpu.Options{})
}

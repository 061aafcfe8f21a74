package gpu_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/plancore/plancore/gpu"
)

// fit is Fit, the arguments spelled out as the tests read.
func fit(nodes []gpu.Node, req gpu.FitRequest) (gpu.Plan, error) {
	return gpu.Fit(gpu.Input{Nodes: nodes, Request: req})
}

// nvidiaCaps are the NVIDIA row's capabilities, which DetectRequests
// copies into each NVIDIA request and a hand-built one sets.
var nvidiaCaps = func() gpu.Capabilities {
	t, _ := gpu.DefaultRegistry().Lookup("NVIDIA")
	return t.Capabilities
}()

// fitOne fits req on node alone: Fit's outcome for it.
func fitOne(node gpu.Node, req gpu.FitRequest) (gpu.NodeFit, error) {
	p, err := gpu.Fit(gpu.Input{Nodes: []gpu.Node{node}, Request: req})
	if err != nil {
		return gpu.NodeFit{}, err
	}
	return p.Nodes[0], nil
}

// fitPod reads pod's request with the default registry and fits it on node,
// failing the test on an error of either step.
func fitPod(t *testing.T, node gpu.Node, pod *corev1.Pod) gpu.NodeFit {
	t.Helper()
	fr, err := gpu.FitRequestFromPod(pod, gpu.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	nf, err := fitOne(node, fr)
	if err != nil {
		t.Fatal(err)
	}
	return nf
}

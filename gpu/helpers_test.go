package gpu_test

import (
	"strings"
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

// deviceFitAnswer is what a device-level fit answers, as the vendor tables
// write it: the devices given in order, or the refusal's message.
func deviceFitAnswer(f gpu.DeviceFit) string {
	if !f.Fits {
		return f.Message()
	}
	ids := make([]string, len(f.Devices))
	for i, a := range f.Devices {
		ids[i] = a.UUID
	}
	return strings.Join(ids, " ")
}

// firstContainerAnswer is what a node answers a one-container pod, as the
// vendor tables write it: the devices the container was given, each id
// without prefix, comma-separated, or the refusal's message.
func firstContainerAnswer(nf gpu.NodeFit, prefix string) string {
	if !nf.Fits {
		return nf.Message()
	}
	var idx []string
	for _, a := range nf.Containers[0].Devices {
		idx = append(idx, strings.TrimPrefix(a.UUID, prefix))
	}
	return strings.Join(idx, ",")
}

package gpu_test

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/gpu"
)

// ExampleDetectRequests shows detection over init and app containers and the
// locks a Bind of the pod needs.
func ExampleDetectRequests() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{ctr("warmup", rl("cambricon.com/vmlu", "1"))},
			Containers:     []corev1.Container{ctr("main", rl("nvidia.com/gpu", "2", "nvidia.com/gpumem", "4000", "nvidia.com/gpucores", "30"))},
		},
	}
	reg := gpu.DefaultRegistry()
	reqs, err := gpu.DetectRequests(pod, reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range reqs {
		fmt.Printf("%s init=%v %s x%d mem=%dMiB/%d%% cores=%d\n", r.Container, r.Init, r.Type, r.Nums, r.MemoryMiB, r.MemoryPercent, r.Cores)
	}
	locks, _ := gpu.RequiredLocks(pod, reg)
	fmt.Println("locks:", locks)

	// Every malformed quantity is reported at once, by its path in the pod.
	pod.Spec.Containers[0] = ctr("main", rl("nvidia.com/gpu", "0.5", "nvidia.com/gpucores", "-5"))
	_, err = gpu.DetectRequests(pod, reg)
	var inv *plancore.InvalidError
	if errors.Is(err, gpu.ErrInvalidRequest) && errors.As(err, &inv) {
		for _, e := range inv.Errors {
			fmt.Printf("%s = %v: %s\n", e.Field, e.BadValue, e.Detail)
		}
	}
	// Output:
	// warmup init=true MLU x1 mem=0MiB/100% cores=100
	// main init=false NVIDIA x2 mem=4000MiB/0% cores=30
	// locks: [cambricon.com/dsmlu.lock hami.io/mutex.lock]
	// spec.containers[0].resources.limits[nvidia.com/gpu] = 500m: must be an integer that fits in int64
	// spec.containers[0].resources.limits[nvidia.com/gpucores] = -5: must not be negative
}

// ExampleDecide fits one GPU on two nodes with the default policies (binpack
// nodes, spread devices) and prints why the other node was refused.
func ExampleDecide() {
	nodes := []gpu.Node{
		{Name: "node-a", Devices: []gpu.Device{
			{ID: "GPU-a0", Vendor: "NVIDIA", Model: "NVIDIA-A100", Count: 10, MemoryMiB: 8000, Cores: 100, Healthy: true, Used: 1, UsedMemoryMiB: 7500},
			{ID: "GPU-a1", Index: 1, Vendor: "NVIDIA", Model: "NVIDIA-A100", Count: 10, MemoryMiB: 8000, Cores: 100, Healthy: false},
		}},
		{Name: "node-b", Devices: []gpu.Device{
			{ID: "GPU-b0", Vendor: "NVIDIA", Model: "NVIDIA-A100", Count: 10, MemoryMiB: 8000, Cores: 100, Healthy: true, Used: 2, UsedMemoryMiB: 3000, UsedCores: 40},
			{ID: "GPU-b1", Index: 1, Vendor: "NVIDIA", Model: "NVIDIA-A100", Count: 10, MemoryMiB: 8000, Cores: 100, Healthy: true},
		}},
	}
	req := gpu.FitRequest{Requests: []gpu.Request{{Container: "main", Type: "NVIDIA", Nums: 1, MemoryMiB: 1000, Cores: 20}}}
	res, err := gpu.Decide(gpu.Input{Nodes: nodes, Request: req}, gpu.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range res.Nodes {
		fmt.Printf("%s fits=%v score=%.2f reasons=%q\n", n.Node, n.Fits, n.Score, n.Message())
	}
	fmt.Println("chosen:", res.Node, gpu.EncodeAllocations(res.Containers, "NVIDIA"))
	fmt.Println(res.Reason.Code+":", res.Reason.Message)
	// Output:
	// node-a fits=false score=5.19 reasons="1/2 CardInsufficientMemory, 1/2 CardNotHealth"
	// node-b fits=true score=4.88 reasons=""
	// chosen: node-b GPU-b1,NVIDIA,1000,20:;
	// NodeChosen: binpack chose node-b (score 4.88)
}

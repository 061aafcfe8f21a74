package gpu_test

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/gpu"
)

// ExampleDecodeNode reads a node and a running pod as HAMi leaves them,
// fits a new pod and prints the annotations HAMi's Filter would write.
func ExampleDecodeNode() {
	reg := gpu.DefaultRegistry()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Annotations: map[string]string{
		"hami.io/node-nvidia-register": `[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10","health":true,"mode":"hami-core"},` +
			`{"id":"GPU-1","index":1,"count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10","health":true,"mode":"hami-core"}]`,
	}}}
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "running", Annotations: map[string]string{
		"hami.io/vgpu-node":              "gpu-1",
		"hami.io/vgpu-devices-allocated": "GPU-1,NVIDIA,20000,50:;",
	}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}

	n, err := gpu.DecodeNode(node, reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	u, err := gpu.DecodePodUsage(running, reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	if n.Devices, err = gpu.AddPodUsage(n.Devices, u); err != nil {
		fmt.Println(err)
		return
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		ctr("main", rl("nvidia.com/gpu", "1", "nvidia.com/gpumem", "8000")),
	}}}
	fr, err := gpu.FitRequestFromPod(pod, reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := gpu.Decide(gpu.Input{Nodes: []gpu.Node{n}, Request: fr}, gpu.HAMi())
	if err != nil {
		fmt.Println(err)
		return
	}
	annos, err := gpu.FilterAnnotations(gpu.FilterChoice{Pod: pod, Node: n, Containers: plan.Containers,
		Now: time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC), Registry: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	keys := make([]string, 0, len(annos))
	for k := range annos {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf("%s=%s\n", k, annos[k])
	}
	// Output:
	// hami.io/vgpu-devices-allocated=GPU-0,NVIDIA,8000,0:;
	// hami.io/vgpu-devices-to-allocate=GPU-0,NVIDIA,8000,0:;
	// hami.io/vgpu-node=gpu-1
	// hami.io/vgpu-time=1781431200
}

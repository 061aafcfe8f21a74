package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

func init() {
	register(6, "gpu", "placing pods that share GPUs (HAMi's scheduler)", runGPU)
}

// runGPU detects a pod's device requests, fits it on three nodes, binds it
// through a failing API server and again.
func runGPU(w *page) error {
	ctx := context.Background()
	t0 := time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)
	reg := gpu.DefaultRegistry()
	limits := func(kv ...string) corev1.ResourceRequirements {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return corev1.ResourceRequirements{Limits: l}
	}
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train",
			Annotations: map[string]string{gpu.AnnoGPUPolicy: "binpack"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "warmup", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "5000")}},
			Containers:     []corev1.Container{{Name: "main", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000", "nvidia.com/gpucores", "30")}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}

	fmt.Fprintln(w, "HAMi shares GPUs between pods: a pod asks for a number of cards, memory and a")
	fmt.Fprintln(w, "share of compute (cores, in %), and HAMi's scheduler extender places it.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "1. Detection reads init containers too (HAMi skips them, #2640):")
	w.calls(`reqs, err := gpu.DetectRequests(&pod, reg)
locks, _ := gpu.RequiredLocks(&pod, reg)`)
	reqs, err := gpu.DetectRequests(&pod, reg)
	if err != nil {
		return err
	}
	for _, r := range reqs {
		fmt.Fprintf(w, "   %-7s init=%-5v %s x%d, %d MiB, %d%% cores\n", r.Container, r.Init, r.Type, r.Nums, r.MemoryMiB, r.Cores)
	}
	locks, _ := gpu.RequiredLocks(&pod, reg)
	fmt.Fprintf(w, "   locks to hold while binding: %v\n", locks)
	bad := pod.DeepCopy()
	bad.Spec.Containers[0].Resources = limits("nvidia.com/gpu", "1.5")
	_, err = gpu.DetectRequests(bad, reg)
	fmt.Fprintf(w, "   1.5 GPUs is an error, not an empty request: %v\n", err)

	fmt.Fprintln(w)
	w.term("Filter", "binpack")
	fmt.Fprintln(w, "2. Fit (Filter): init containers at their peak, binpack on devices, HAMi's reasons:")
	w.calls(`fr, err := gpu.FitRequestFromPod(&pod, reg)
res, err := gpu.Fit(gpu.Input{Nodes: nodes, Request: fr})`)
	card := func(id string, i int, usedMem, usedCores int32) gpu.Device {
		used := int32(0)
		if usedMem > 0 {
			used = 1
		}
		return gpu.Device{ID: id, Index: i, Vendor: "NVIDIA", Model: "NVIDIA-A100", Count: 10, MemoryMiB: 8000, Cores: 100,
			Healthy: true, Used: used, UsedMemoryMiB: usedMem, UsedCores: usedCores}
	}
	sick := card("GPU-c1", 1, 0, 0)
	sick.Healthy = false
	nodes := []gpu.Node{
		{Name: "node-a", Devices: []gpu.Device{card("GPU-a0", 0, 2000, 25), card("GPU-a1", 1, 0, 0)}},
		{Name: "node-b", Devices: []gpu.Device{card("GPU-b0", 0, 0, 0), card("GPU-b1", 1, 6000, 75)}},
		{Name: "node-c", Devices: []gpu.Device{card("GPU-c0", 0, 7000, 10), sick}},
	}
	fr, err := gpu.FitRequestFromPod(&pod, reg)
	if err != nil {
		return err
	}
	res, err := gpu.Fit(gpu.Input{Nodes: nodes, Request: fr})
	if err != nil {
		return err
	}
	for _, n := range res.Nodes {
		verdict := "fits"
		if !n.Fits {
			verdict = "refused: " + n.Message()
		}
		fmt.Fprintf(w, "   %s score %.2f %s\n", n.Node, n.Score, verdict)
	}
	fmt.Fprintf(w, "   chosen %s, hami.io/vgpu-devices-to-allocate=%q\n", res.Node, gpu.EncodeAllocations(res.Containers, "NVIDIA"))

	fmt.Fprintln(w)
	w.term("Bind", "device plugin")
	fmt.Fprintln(w, "3. Bind through a flaky API server: the Bind call fails once. ApplyBind takes the")
	fmt.Fprintln(w, "node's lock, writes the allocation, binds, and undoes what it took on failure:")
	w.calls(`out, err := gpu.ApplyBind(ctx, in, exec, waiter)`)
	world := fake.NewWorld(6, t0)
	pods := fake.NewPodStore(world, fake.PodStoreOptions{})
	exec := fake.NewGPUBind(world, pods, lock.Options{})
	exec.AddNode(res.Node)
	created, err := pods.CreatePod(ctx, pod)
	if err != nil {
		return err
	}
	ref := gpu.PodRef{Namespace: created.Namespace, Name: created.Name, UID: string(created.UID)}
	waiter := &fake.ClockWaiter{World: world, Locks: exec.Locks}
	world.Faults.FailNext(fake.KindGPUPodBind, 1, errors.New("etcdserver: request timed out"))
	in := gpu.BindInput{Pod: ref, Node: res.Node, Registry: reg}
	out, err := gpu.ApplyBind(ctx, in, exec, waiter)
	p, _ := pods.GetPod(ctx, ref.Namespace, ref.Name)
	fmt.Fprintf(w, "   %v\n   error returned: %v\n   pod bind-phase=%s (HAMi leaves \"allocating\", #2645), lock free: %v\n",
		out, err, p.Annotations[gpu.AnnoBindPhase], lockFree(ctx, exec, res.Node))
	out, err = gpu.ApplyBind(ctx, in, exec, waiter)
	if err != nil {
		return err
	}
	p, _ = pods.GetPod(ctx, ref.Namespace, ref.Name)
	fmt.Fprintf(w, "   retried by the scheduler: %v; pod on %s, %s=%s\n", out, p.Spec.NodeName, gpu.AnnoLockEpoch, p.Annotations[gpu.AnnoLockEpoch])
	if err := exec.Allocate(ctx, ref, res.Node, []string{gpu.LockNvidia}); err != nil {
		return err
	}
	p, _ = pods.GetPod(ctx, ref.Namespace, ref.Name)
	fmt.Fprintf(w, "   the device plugin verified the fence, wrote bind-phase=%s and released the lock: free %v\n",
		p.Annotations[gpu.AnnoBindPhase], lockFree(ctx, exec, res.Node))

	return nil
}

// lockFree reports whether node's shared lock is free.
func lockFree(ctx context.Context, exec *fake.GPUBind, node string) bool {
	obs, err := exec.Locks.Inner.Get(ctx, lock.Key{Name: gpu.LockNvidia, Node: node})
	return err == nil && !obs.Present
}

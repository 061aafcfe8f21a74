// Package extendertest gives the tests of a GPU scheduler set-up what a
// throwaway API server (adapters/kube/kubetest) lacks: Nodes that carry the
// annotations HAMi's device plugins write, and the device plugin's part of
// an allocation (there is no kubelet to ask for it).
package extendertest

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

// AddNode creates a Node named name that carries HAMi's register
// annotations for devices (gpu.EncodeNode, as HAMi's device plugins leave
// them), the given extra capacity plus 64 CPUs, 512 GiB and 110 pods, a
// Ready condition, and no taint (the API server taints a new Node
// not-ready, and no node controller runs to lift it).
func AddNode(ctx context.Context, c client.Client, name string, devices []gpu.Device, capacity corev1.ResourceList) error {
	annos, err := gpu.EncodeNode(gpu.Node{Name: name, Devices: devices}, gpu.DefaultRegistry())
	if err != nil {
		return err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annos}}
	if err := c.Create(ctx, node); err != nil {
		return err
	}
	all := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	for k, v := range capacity {
		all[k] = v
	}
	node.Status.Capacity, node.Status.Allocatable = all, all
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	if err := c.Status().Update(ctx, node); err != nil {
		return err
	}
	node.Spec.Taints = nil
	return c.Update(ctx, node)
}

// NVIDIA returns n NVIDIA cards named GPU-<prefix>-<i> of memMiB each,
// shareable by 10 pods.
func NVIDIA(prefix string, n int, memMiB int32) []gpu.Device {
	var out []gpu.Device
	for i := range n {
		out = append(out, gpu.Device{ID: fmt.Sprintf("GPU-%s-%d", prefix, i), Index: i, Vendor: "NVIDIA", Model: "NVIDIA-A100-SXM4-80GB",
			Count: 10, MemoryMiB: memMiB, Cores: 100, Healthy: true})
	}
	return out
}

// Hygon returns n Hygon DCUs named DCU-<prefix>-<i> of 16 GiB, shareable by
// 4 pods.
func Hygon(prefix string, n int) []gpu.Device {
	var out []gpu.Device
	for i := range n {
		out = append(out, gpu.Device{ID: fmt.Sprintf("DCU-%s-%d", prefix, i), Index: i, Vendor: "DCU", Model: "DCU-Z100",
			Count: 4, MemoryMiB: 16 * 1024, Cores: 100, Healthy: true})
	}
	return out
}

// DevicePlugin does, until ctx ends, what HAMi's device plugin does when the
// kubelet asks it to allocate a bound pod's devices: for every pod of
// namespace bound to a node and still bind-phase=allocating, it writes
// bind-phase=success and releases the node lock the pod's Bind took, so that
// node's next Bind can run. It polls every 20 ms. errs, when not nil,
// receives the errors of releases.
func DevicePlugin(ctx context.Context, c client.Client, namespace string, errs chan<- error) {
	locker := &lock.Locker{Store: &kube.NodeLockStore{Client: c}, Options: lock.HAMi()}
	for ctx.Err() == nil {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(namespace)); err == nil {
			for i := range pods.Items {
				allocate(ctx, c, locker, &pods.Items[i], errs)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond): // polling: no kubelet calls Allocate here
		}
	}
}

func allocate(ctx context.Context, c client.Client, locker *lock.Locker, p *corev1.Pod, errs chan<- error) {
	if p.Spec.NodeName == "" || p.Annotations[gpu.AnnoBindPhase] != gpu.PhaseAllocating {
		return
	}
	patch := client.MergeFrom(p.DeepCopy())
	p.Annotations[gpu.AnnoBindPhase] = gpu.PhaseSuccess
	if err := c.Patch(ctx, p, patch); err != nil {
		return
	}
	req := lock.Requester{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}
	if _, err := locker.Release(ctx, lock.NodeKey(p.Spec.NodeName), req); err != nil && ctx.Err() == nil && errs != nil {
		errs <- fmt.Errorf("device plugin: releasing %s/%s's node lock: %w", p.Namespace, p.Name, err)
	}
}

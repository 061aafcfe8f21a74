package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
)

// kubelet plays every node's kubelet against the API server: delay after it
// sees a new pod it binds the pod to a node (pods/binding, which sets
// spec.nodeName) and reports it Running and Ready (a merge patch of
// pods/status). Its requests do not pass through an operator's proxy.
type kubelet struct {
	cs    kubernetes.Interface
	delay time.Duration
	nodes int
	queue workqueue.TypedDelayingInterface[types.NamespacedName]
	seq   atomic.Uint64
	errs  atomic.Uint64
}

func newKubelet(cs kubernetes.Interface, delay time.Duration) *kubelet {
	return &kubelet{cs: cs, delay: delay, nodes: 100,
		queue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[types.NamespacedName]{})}
}

// saw is called for every pod the harness's watch delivers; a pod that is
// not yet bound and not terminating is started after the delay.
func (k *kubelet) saw(p *corev1.Pod) {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
		return
	}
	k.queue.AddAfter(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, k.delay)
}

// run starts workers goroutines that start pods until ctx ends; each is
// done with wg once it has returned.
func (k *kubelet) run(ctx context.Context, workers int, wg *sync.WaitGroup) {
	go func() {
		<-ctx.Done()
		k.queue.ShutDown()
	}()
	wg.Add(workers)
	for range workers {
		go func() {
			defer wg.Done()
			for {
				key, stop := k.queue.Get()
				if stop {
					return
				}
				if err := k.start(ctx, key); err != nil && ctx.Err() == nil {
					k.errs.Add(1)
				}
				k.queue.Done(key)
			}
		}()
	}
}

func (k *kubelet) start(ctx context.Context, key types.NamespacedName) error {
	n := k.seq.Add(1)
	node := fmt.Sprintf("node-%d", n%uint64(k.nodes))
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := k.cs.CoreV1().Pods(key.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return err // deleted meanwhile, or already bound
	}
	now := metav1.Now().UTC().Format(time.RFC3339)
	ip := fmt.Sprintf("10.%d.%d.%d", 64+n>>16&63, n>>8&255, n&255)
	status := fmt.Sprintf(`{"status":{"phase":"Running","hostIP":"192.168.0.1","podIP":%q,"podIPs":[{"ip":%q}],"startTime":%q,`+
		`"conditions":[{"type":"PodScheduled","status":"True","lastTransitionTime":%q},`+
		`{"type":"Initialized","status":"True","lastTransitionTime":%q},`+
		`{"type":"ContainersReady","status":"True","lastTransitionTime":%q},`+
		`{"type":"Ready","status":"True","lastTransitionTime":%q}]}}`, ip, ip, now, now, now, now, now)
	_, err := k.cs.CoreV1().Pods(key.Namespace).Patch(ctx, key.Name, types.StrategicMergePatchType, []byte(status), metav1.PatchOptions{}, "status")
	return err
}

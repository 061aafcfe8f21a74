package gpu_test

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

// ExampleStartBind steps the pure Bind state machine by hand: every action
// succeeds except the Bind call, so the failure path marks the pod failed and
// releases the lock it took.
func ExampleStartBind() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "train", UID: "u1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
	}
	now := time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)
	st, err := gpu.StartBind(gpu.BindInput{Pod: gpu.PodRef{Namespace: "ml", Name: "train", UID: "u1"}, Node: "n1", Now: now, Registry: gpu.DefaultRegistry()})
	if err != nil {
		fmt.Println(err)
		return
	}
	for !st.Done() {
		a := st.Next()
		fmt.Println(a)
		r := gpu.Result{Now: now}
		switch a.Kind {
		case gpu.ActionGetPod:
			r.Pod = pod
		case gpu.ActionLock:
			r.Epoch = 7
		case gpu.ActionBind:
			r.Err = errors.New("admission webhook denied the binding")
		}
		st, _ = gpu.StepBind(st, r)
	}
	fmt.Println(st.Outcome())
	// Output:
	// GetPod ml/train (Read)
	// GetNode ml/train -> n1 (Read)
	// Lock hami.io/mutex.lock on n1 for ml/train (Acquire)
	// PatchPod ml/train {hami.io/bind-phase=allocating, hami.io/bind-time=1781431200, plancore.io/lock-epoch=hami.io/mutex.lock=7} (MarkAllocating)
	// Bind ml/train -> n1 (Bind)
	// PatchPod ml/train {hami.io/bind-phase=failed} (MarkFailed)
	// Release hami.io/mutex.lock on n1 for ml/train (FailureRollback)
	// Event ml/train Warning BindingFailed: binding ml/train to n1 failed: bind pod ml/train to n1: admission webhook denied the binding (Report)
	// ForgetAssumed ml/train (Forget)
	// failed attempts=1 released=[hami.io/mutex.lock] error="bind pod ml/train to n1: admission webhook denied the binding"
}

// ExampleApplyBind binds two pods to one node through the in-memory world:
// the second waits for the device plugin to release the first one's lock and
// is woken by the release, 22 ms later.
func ExampleApplyBind() {
	ctx := context.Background()
	w := fake.NewWorld(1, time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC))
	pods := fake.NewPodStore(w, fake.PodStoreOptions{})
	exec := fake.NewGPUBind(w, pods, lock.Options{})
	exec.AddNode("n1")
	waiter := &fake.ClockWaiter{World: w, Locks: exec.Locks}
	var refs []gpu.PodRef
	for _, name := range []string{"a", "b"} {
		p, _ := pods.CreatePod(ctx, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending},
		})
		refs = append(refs, gpu.PodRef{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)})
	}
	bind := func(ref gpu.PodRef) {
		out, err := gpu.ApplyBind(ctx, gpu.BindInput{Pod: ref, Node: "n1", Registry: gpu.DefaultRegistry()}, exec, waiter)
		fmt.Printf("%s at +%v: %v (err=%v)\n", ref.Name, w.Clock.Now().Sub(time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)), out, err)
	}
	bind(refs[0])
	waiter.At(w.Clock.Now().Add(22*time.Millisecond), func() {
		_ = exec.Allocate(ctx, refs[0], "n1", []string{gpu.LockNvidia})
	})
	bind(refs[1])
	// Output:
	// a at +0s: bound attempts=1 held=hami.io/mutex.lock=1 (err=<nil>)
	// b at +22ms: bound attempts=2 held=hami.io/mutex.lock=2 (err=<nil>)
}

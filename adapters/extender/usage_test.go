package extender_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/adapters/extender"
	"github.com/plancore/plancore/gpu"
)

// TestPropUsageReadAgain: an extender whose usage read has seen earlier
// pod lists scores nodes exactly as a fresh extender does, whatever pods
// came, went, changed resourceVersion or lost their assignment in between,
// in whatever order they are listed. Keeping a node's holders of an
// earlier read (hold without starting the node's list afresh) makes it
// fail, as does keeping a pod's usage once its resourceVersion changed.
func TestPropUsageReadAgain(t *testing.T) {
	placer, names := nvidiaCluster(t, 3)
	ext, err := extender.New(extender.Config{Client: placer, Bind: &gpu.Binder{Exec: noPods{}, Waiter: clockWait{}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 9 { // pods holding devices, as the cache shows them
		if res := ext.Filter(context.Background(), extenderv1.ExtenderArgs{Pod: gpuPod(fmt.Sprintf("held-%d", i), 30*gib), NodeNames: &names}); res.NodeNames == nil || len(*res.NodeNames) != 1 {
			t.Fatalf("placing held-%d: %+v", i, res)
		}
	}
	pool := placer.pods
	indexes := make([]int, len(pool))
	for i := range indexes {
		indexes[i] = i
	}
	newExt := func(m *memCluster) *extender.Scheduler {
		e, err := extender.New(extender.Config{Client: m, Bind: &gpu.Binder{Exec: noPods{}, Waiter: clockWait{}}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	rapid.Check(t, func(t *rapid.T) {
		warmCluster := &memCluster{nodes: placer.nodes}
		warm := newExt(warmCluster)
		for range rapid.IntRange(1, 5).Draw(t, "reads") {
			order := rapid.Permutation(indexes).Draw(t, "order")
			var pods []corev1.Pod
			for _, i := range order[:rapid.IntRange(0, len(order)).Draw(t, "listed")] {
				p := pool[i]
				switch rapid.IntRange(0, 2).Draw(t, fmt.Sprint("change ", i)) {
				case 1: // a new resourceVersion, the same annotations
					p.ResourceVersion += "-again"
				case 2: // no longer assigned
					p.ResourceVersion += "-unassigned"
					p.Annotations = nil
				}
				pods = append(pods, p)
			}
			warmCluster.pods = pods
			args := extenderv1.ExtenderArgs{Pod: gpuPod("incoming", rapid.SampledFrom([]int{8 * gib, 30 * gib, 60 * gib}).Draw(t, "mem")), NodeNames: &names}
			got, gotErr := warm.Prioritize(context.Background(), args)
			want, wantErr := newExt(&memCluster{nodes: placer.nodes, pods: pods}).Prioritize(context.Background(), args)
			if fmt.Sprint(got, gotErr) != fmt.Sprint(want, wantErr) {
				t.Fatalf("over %d pods: scored %v, %v where a fresh extender scores %v, %v", len(pods), got, gotErr, want, wantErr)
			}
		}
	})
}

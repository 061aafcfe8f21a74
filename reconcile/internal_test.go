package reconcile

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
)

// TestPropMayDeleteCoversShouldDeletePod checks the pre-filter the bucket pass
// records (flagMayDelete): whenever shouldDeletePod would delete a pod,
// mayDelete says so, so skipping the pods it rules out changes no plan.
func TestPropMayDeleteCoversShouldDeletePod(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		p.Status.Phase = corev1.PodPhase(rapid.SampledFrom([]string{"", "Pending", "Running", "Succeeded", "Failed", "Unknown"}).Draw(t, "phase"))
		p.Spec.RestartPolicy = corev1.RestartPolicy(rapid.SampledFrom([]string{"", "Always", "OnFailure", "Never"}).Draw(t, "policy"))
		if rapid.IntRange(0, 4).Draw(t, "noContainers") > 0 {
			p.Spec.Containers = []corev1.Container{{Name: "ray"}, {Name: "sidecar"}}
		}
		for range rapid.IntRange(0, 2).Draw(t, "statuses") {
			cs := corev1.ContainerStatus{Name: rapid.SampledFrom([]string{"ray", "ray", "sidecar", "other"}).Draw(t, "status")}
			if rapid.IntRange(0, 2).Draw(t, "terminated") > 0 {
				cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(rapid.IntRange(0, 2).Draw(t, "exit"))}
			}
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
		}
		for _, nodeType := range []string{NodeTypeWorker, NodeTypeHead} {
			if v := shouldDeletePod(p, nodeType); v.del && !mayDelete(p) {
				t.Fatalf("shouldDeletePod deletes %s pod (phase %q, policy %q: %s) but mayDelete rules it out",
					nodeType, p.Status.Phase, p.Spec.RestartPolicy, v.message)
			}
		}
	})
}

// TestIndexSet checks the lowest-free-index allocator against a map, with
// indices inside and outside its bool slice and negative ones.
func TestIndexSet(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		used := rapid.SliceOf(rapid.IntRange(-2, 12)).Draw(t, "used")
		s := newIndexSet(rapid.IntRange(0, 6).Draw(t, "hint"))
		ref := map[int]bool{}
		for _, n := range used {
			s.add(n)
			ref[n] = true
		}
		next := 0
		for range rapid.IntRange(0, 10).Draw(t, "takes") {
			for ref[next] {
				next++
			}
			if got := s.take(); got != next {
				t.Fatalf("take() = %d, want %d (used %v)", got, next, used)
			}
			ref[next] = true
		}
	})
}

// TestArenaSlicesAreIndependent checks that appending to one slice an arena
// handed out never writes into another.
func TestArenaSlicesAreIndependent(t *testing.T) {
	var a arena[string]
	x, y := a.one("x"), a.one("y")
	x = append(x, "x2")
	if y[0] != "y" || len(x) != 2 || x[0] != "x" {
		t.Fatalf("append to one arena slice changed another: x %v y %v", x, y)
	}
	a.reserve(3)
	z := a.take(3)
	if len(z) != 3 || cap(z) != 3 || z[0] != "" {
		t.Fatalf("take(3) = %q with cap %d, want 3 zero strings with cap 3", z, cap(z))
	}
}

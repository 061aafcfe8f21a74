package reconcile_test

import (
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/plancore/plancore/reconcile"
)

func TestSpecHash(t *testing.T) {
	base := cluster(group("small", 1), mhGroup("tpu", 1, 2)).Spec
	h0, err := reconcile.SpecHash(base)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9A-V]{32}$`).MatchString(h0) {
		t.Fatalf("hash %q is not 32 characters of base32hex", h0)
	}
	same := map[string]func(*reconcile.ClusterSpec){
		"replicas": func(s *reconcile.ClusterSpec) { s.WorkerGroups[0].Replicas = i32(9) },
		"min and max": func(s *reconcile.ClusterSpec) {
			s.WorkerGroups[0].MinReplicas, s.WorkerGroups[0].MaxReplicas = i32(3), nil
		},
		"workersToDelete":  func(s *reconcile.ClusterSpec) { s.WorkerGroups[1].ScaleStrategy.WorkersToDelete = []string{"x"} },
		"upgrade strategy": func(s *reconcile.ClusterSpec) { s.UpgradeStrategy = &reconcile.UpgradeStrategy{Type: sptr("Recreate")} },
		"worker tolerations": func(s *reconcile.ClusterSpec) {
			s.WorkerGroups[0].Template.Spec.Tolerations = []corev1.Toleration{{Key: "k"}}
		},
		"head scheduling gates": func(s *reconcile.ClusterSpec) {
			s.HeadGroup.Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue"}}
		},
		"nil rayStartParams is defaulted to {}": func(s *reconcile.ClusterSpec) { s.HeadGroup.RayStartParams = map[string]string{} },
	}
	for name, edit := range same {
		s := cluster(group("small", 1), mhGroup("tpu", 1, 2)).Spec
		edit(&s)
		if h, _ := reconcile.SpecHash(s); h != h0 {
			t.Errorf("%s changed the hash", name)
		}
	}
	differ := map[string]func(*reconcile.ClusterSpec){
		"image":          func(s *reconcile.ClusterSpec) { s.WorkerGroups[0].Template.Spec.Containers[0].Image = "other" },
		"rayVersion":     func(s *reconcile.ClusterSpec) { s.RayVersion = "2.10" },
		"numOfHosts":     func(s *reconcile.ClusterSpec) { s.WorkerGroups[1].NumOfHosts = 4 },
		"group suspend":  func(s *reconcile.ClusterSpec) { s.WorkerGroups[0].Suspend = bptr(false) },
		"autoscaling":    func(s *reconcile.ClusterSpec) { s.EnableInTreeAutoscaling = bptr(true) },
		"rayStartParams": func(s *reconcile.ClusterSpec) { s.HeadGroup.RayStartParams = map[string]string{"num-cpus": "0"} },
	}
	for name, edit := range differ {
		s := cluster(group("small", 1), mhGroup("tpu", 1, 2)).Spec
		edit(&s)
		if h, _ := reconcile.SpecHash(s); h == h0 {
			t.Errorf("%s did not change the hash", name)
		}
	}
	t.Run("caller-supplied hash wins", func(t *testing.T) {
		s := snap(cluster())
		s.ClusterHash = "KUBERAYHASH"
		p, _ := reconcile.Decide(s, opts())
		if p.ClusterHash != "KUBERAYHASH" || p.Actions[0].Create.Pod.Annotations[reconcile.AnnotationRecreateHash] != "KUBERAYHASH" {
			t.Fatalf("hash %q not used", s.ClusterHash)
		}
	})
}

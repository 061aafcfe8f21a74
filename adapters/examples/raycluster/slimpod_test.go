package main

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/reconcile"
	"github.com/plancore/plancore/reconcile/reconciletest"
)

// The pod informer's transform drops nothing a pass reads: on any snapshot
// (pods in every state, each container given resources and managedFields),
// Decide plans and Status computes the same from the slimmed pods as from
// the whole ones. (A slimPod that also clears the restart policy or the
// container names makes it fail.)
func TestSlimPodKeepsWhatAPassReads(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		snap := reconciletest.Snapshot(3).Draw(t, "snapshot")
		opts := reconciletest.Options(rapid.Bool().Draw(t, "compat")).Draw(t, "options")
		for i := range snap.Pods {
			p := &snap.Pods[i]
			p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
			for j := range p.Spec.Containers {
				cpu := resource.MustParse(rapid.SampledFrom([]string{"10m", "1", "2500m"}).Draw(t, "cpu"))
				p.Spec.Containers[j].Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: cpu},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: resource.MustParse("1Gi")},
				}
			}
		}
		slim := reconciletest.Clone(snap)
		for i := range slim.Pods {
			if _, err := slimPod(&slim.Pods[i]); err != nil {
				t.Fatal(err)
			}
			if slim.Pods[i].ManagedFields != nil {
				t.Fatalf("pod %s kept its managedFields", slim.Pods[i].Name)
			}
			for _, c := range slim.Pods[i].Spec.Containers {
				if c.Resources.Requests != nil || c.Resources.Limits != nil {
					t.Fatalf("pod %s kept container %s's resources", slim.Pods[i].Name, c.Name)
				}
			}
		}
		wantPlan, wantErr := reconcile.Decide(snap, opts)
		gotPlan, gotErr := reconcile.Decide(slim, opts)
		if !reflect.DeepEqual(gotErr, wantErr) || !reflect.DeepEqual(gotPlan, wantPlan) {
			t.Fatalf("slimmed pods plan\n%+v (%v)\nwhole pods plan\n%+v (%v)", gotPlan, gotErr, wantPlan, wantErr)
		}
		want, wantErr := reconcile.Status(reconcile.StatusInput{Snapshot: snap}, opts)
		got, gotErr := reconcile.Status(reconcile.StatusInput{Snapshot: slim}, opts)
		if !reflect.DeepEqual(gotErr, wantErr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("slimmed pods status\n%+v (%v)\nwhole pods status\n%+v (%v)", got, gotErr, want, wantErr)
		}
	})
}

// Anything but a pod (a tombstone of a deleted one) passes unchanged.
func TestSlimPodPassesTombstones(t *testing.T) {
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: &corev1.Pod{}}
	got, err := slimPod(tomb)
	if err != nil || !reflect.DeepEqual(got, tomb) {
		t.Errorf("slimPod(tombstone) = %v, %v", got, err)
	}
}

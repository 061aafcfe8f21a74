package kube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/fake"
)

// dagHarness returns a constructor of fake.DAGHarness over a JobExecutor on
// the real API server: two fresh namespaces, each with the ConfigMap "wf" that
// stands in for the workflow object, and Jobs read back uncached.
func dagHarness(t *testing.T, env *kubetest.Env, exec func() *kube.JobExecutor) fake.NewDAGHarness {
	return func(ctx context.Context) (fake.DAGHarness, error) {
		h := fake.DAGHarness{Namespaces: [2]string{env.Namespace(t), env.Namespace(t)}}
		for _, ns := range h.Namespaces {
			if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wf"}}); err != nil {
				return h, err
			}
		}
		store := &workflowStore{c: env.Client}
		e := exec()
		e.Client = env.Client
		e.Status = store.write
		e.Template = func(_ context.Context, ref dag.TemplateRef) (*batchv1.JobTemplateSpec, error) {
			if ref.Name != fake.DAGConformanceTemplate {
				return nil, fmt.Errorf("unexpected template %s/%s", ref.Namespace, ref.Name)
			}
			return jobTemplate("registry.k8s.io/pause:3.9"), nil
		}
		h.Exec = e
		h.Status = store.read
		h.Jobs = func(ctx context.Context, ns string) ([]fake.DAGJobObject, error) {
			var list batchv1.JobList
			if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return nil, err
			}
			var out []fake.DAGJobObject
			for _, j := range list.Items {
				out = append(out, fake.DAGJobObject{Namespace: j.Namespace, Name: j.Name, UID: j.UID, Labels: j.Labels,
					Annotations: j.Annotations, Owners: j.OwnerReferences, Terminating: j.DeletionTimestamp != nil})
			}
			return out, nil
		}
		return h, nil
	}
}

// TestJobExecutorConformance runs package fake's dag.Executor contract against
// JobExecutor on the real API server, with the default (background) and the
// foreground deletion propagation; under foreground a deleted Job keeps the
// foregroundDeletion finalizer (envtest runs no garbage collector), which the
// suite accepts as terminating.
func TestJobExecutorConformance(t *testing.T) {
	env := kubetest.Shared(t)
	for _, prop := range []metav1.DeletionPropagation{"", metav1.DeletePropagationForeground} {
		t.Run(fmt.Sprintf("propagation=%q", prop), func(t *testing.T) {
			ctx := testCtx(t, 2*time.Minute)
			vs := fake.CheckDAGExecutor(ctx, dagHarness(t, env, func() *kube.JobExecutor {
				return &kube.JobExecutor{Propagation: prop}
			}))
			for _, v := range vs {
				t.Error(v)
			}
		})
	}
}

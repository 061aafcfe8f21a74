package kube_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/adapters/kube/kubetest"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/gpu"
)

// bindHarness returns a constructor of fake.BindHarness over a BindExecutor
// on the real API server (locks in Node annotations through a NodeLockStore of
// the given wire format), each in a fresh namespace.
func bindHarness(t *testing.T, env *kubetest.Env, format kube.WireFormat) fake.NewBindHarness {
	return func(context.Context) (fake.BindHarness, error) {
		exec, store := newBindExecutor(env, nil)
		store.Format = format
		ns := env.Namespace(t)
		return fake.BindHarness{
			Exec: exec,
			AddPod: func(ctx context.Context, name string) (gpu.PodRef, error) {
				p, err := createPod(ctx, env.Client, ns, name)
				if err != nil {
					return gpu.PodRef{}, err
				}
				return ref(p), nil
			},
			AddNode: func(ctx context.Context) (string, error) {
				n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: env.UniqueName("bind-node")}}
				return n.Name, env.Client.Create(ctx, n)
			},
		}, nil
	}
}

// TestBindExecutorConformance runs package fake's gpu.BindExecutor contract
// against BindExecutor on the real API server, in both lock wire formats.
func TestBindExecutorConformance(t *testing.T) {
	env := kubetest.Shared(t)
	for _, tc := range []struct {
		name   string
		format kube.WireFormat
	}{{"hami", kube.WireHAMi}, {"extended", kube.WireExtended}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, 2*time.Minute)
			for _, v := range fake.CheckBindExecutor(ctx, bindHarness(t, env, tc.format)) {
				t.Error(v)
			}
		})
	}
}

package kube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/plancore/plancore/adapters/kube/kubetest"
)

// TestMain runs the whole package against one real control plane.
func TestMain(m *testing.M) { kubetest.Main(m) }

// testCtx returns a context that ends with the test or after d.
func testCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newNode creates a Node with a unique name and returns it.
func newNode(t testing.TB, env *kubetest.Env) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: env.UniqueName("node")}}
	if err := env.Client.Create(context.Background(), n); err != nil {
		t.Fatalf("creating node: %v", err)
	}
	return n
}

// newPod creates a minimal pod named name in ns and returns it (with its UID).
func newPod(t testing.TB, env *kubetest.Env, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := createPod(context.Background(), env.Client, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// createPod creates a minimal pod named name in ns; safe off the test goroutine.
func createPod(ctx context.Context, c client.Client, ns, name string) (*corev1.Pod, error) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
	if err := c.Create(ctx, p); err != nil {
		return nil, fmt.Errorf("creating pod %s/%s: %w", ns, name, err)
	}
	return p, nil
}

package kubetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestMain(m *testing.M) { Main(m) }

// TestStaleResourceVersionConflicts is the reason this package exists: a write
// carrying a stale resourceVersion must be refused with 409 Conflict, which the
// lock store's safety rests on and which client-go's fake clientset ignores.
func TestStaleResourceVersionConflicts(t *testing.T) {
	env := Shared(t)
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: env.UniqueName("node")}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	stale := node.DeepCopy()

	node.Annotations = map[string]string{"a": "1"}
	if err := env.Client.Update(ctx, node); err != nil {
		t.Fatalf("first update: %v", err)
	}
	stale.Annotations = map[string]string{"a": "2"}
	err := env.Client.Update(ctx, stale)
	if !apierrors.IsConflict(err) {
		t.Fatalf("update with stale resourceVersion: got %v, want 409 Conflict", err)
	}

	// A merge patch that carries metadata.resourceVersion is a precondition too;
	// HAMi's lock and plancore's Node store write this way.
	patch := client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"resourceVersion":"`+stale.ResourceVersion+`","annotations":{"a":"3"}}}`))
	err = env.Client.Patch(ctx, stale, patch)
	if !apierrors.IsConflict(err) {
		t.Fatalf("merge patch with stale resourceVersion: got %v, want 409 Conflict", err)
	}
	got := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations["a"] != "1" {
		t.Fatalf("annotation a = %q after refused writes, want 1", got.Annotations["a"])
	}
}

func TestNamespaceIsFreshAndUsable(t *testing.T) {
	env := Shared(t)
	ctx := context.Background()
	a, b := env.Namespace(t), env.Namespace(t)
	if a == b {
		t.Fatalf("two namespaces share the name %s", a)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: a, GenerateName: "p-"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatalf("creating a pod (no ServiceAccount admission, no default service account): %v", err)
	}
	if pod.Name == "" || pod.UID == "" {
		t.Fatalf("server did not name the pod: %+v", pod.ObjectMeta)
	}
	var list corev1.PodList
	if err := env.Client.List(ctx, &list, client.InNamespace(b)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("fresh namespace %s holds %d pods", b, len(list.Items))
	}
}

func TestAssetsDirRejectsBadOverride(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", filepath.Join(t.TempDir(), "nothing-here"))
	_, err := AssetsDir()
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("AssetsDir with an empty KUBEBUILDER_ASSETS: got %v, want ErrNoBinaries", err)
	}
}

func TestAssetsDirFindsCache(t *testing.T) {
	env := Shared(t)
	root := t.TempDir()
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("PLANCORE_KUBE_CACHE", root)
	t.Setenv("PLANCORE_KUBE_VERSION", "v9.9.9")
	if _, err := AssetsDir(); !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("empty cache: got %v, want ErrNoBinaries", err)
	}
	// A cache entry of the requested version wins over the defaults.
	dir := filepath.Join(root, "v9.9.9")
	mustSymlink(t, filepath.Join(env.Dir, "kube-apiserver"), filepath.Join(dir, "kube-apiserver"))
	mustSymlink(t, filepath.Join(env.Dir, "etcd"), filepath.Join(dir, "etcd"))
	got, err := AssetsDir()
	if err != nil || got != dir {
		t.Fatalf("AssetsDir() = %q, %v; want %q", got, err, dir)
	}
}

func TestNamespacePrefix(t *testing.T) {
	for in, want := range map[string]string{
		"TestLock/steal_expired": "testlock-steal-expired",
		"___":                    "test",
		"TestAVeryLongNameThatGoesOnAndOnAndOnForeverAndEver": "testaverylongnamethatgoesonandonandonfor",
	} {
		if got := namespacePrefix(in); got != want {
			t.Errorf("namespacePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

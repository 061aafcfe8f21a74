package fake_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

// bindHarness builds a harness over a fresh GPUBind, with exec wrapping it.
func bindHarness(wrap func(*fake.GPUBind) gpu.BindExecutor) fake.NewBindHarness {
	seed := uint64(0)
	return func(context.Context) (fake.BindHarness, error) {
		seed++
		w := fake.NewWorld(seed, podsT0)
		pods := fake.NewPodStore(w, fake.PodStoreOptions{})
		g := fake.NewGPUBind(w, pods, lock.Options{})
		nodes := 0
		return fake.BindHarness{
			Exec: wrap(g),
			AddPod: func(ctx context.Context, name string) (gpu.PodRef, error) {
				p, err := pods.CreatePod(ctx, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}})
				return gpu.PodRef{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}, err
			},
			AddNode: func(context.Context) (string, error) {
				nodes++
				name := fmt.Sprintf("node-%d", nodes)
				g.AddNode(name)
				return name, nil
			},
		}, nil
	}
}

func TestGPUBindConforms(t *testing.T) {
	for _, v := range fake.CheckBindExecutor(context.Background(), bindHarness(func(g *fake.GPUBind) gpu.BindExecutor { return g })) {
		t.Error(v)
	}
}

// Each of these executors breaks one clause of the gpu.BindExecutor contract
// the way a hand-written executor might.
type (
	// releasesAnyone's Release is not owner-checked: it removes whatever
	// holds the lock, as HAMi's release of a re-read value did (two stealers could both win).
	releasesAnyone struct{ *fake.GPUBind }
	// plainContention reports a held lock with an error that does not wrap
	// lock.ErrContention, so Bind never retries.
	plainContention struct{ *fake.GPUBind }
	// restamps re-acquires on every Lock, so the holder's epoch moves.
	restamps struct{ *fake.GPUBind }
	// strictRelease reports a release of a lock not held as an error.
	strictRelease struct{ *fake.GPUBind }
	// rebinds treats a second Bind to the same node as a conflict.
	rebinds struct{ *fake.GPUBind }
	// bindsByName drops the UID from the binding.
	bindsByName struct{ *fake.GPUBind }
	// hidesTimeouts reports an expired Bind as a plain error.
	hidesTimeouts struct{ *fake.GPUBind }
	// replacesAnnotations writes the patch as the whole annotation map.
	replacesAnnotations struct{ *fake.GPUBind }
)

func (e releasesAnyone) Release(ctx context.Context, node, name string, _ gpu.PodRef) error {
	_, err := e.Locker.ForceRelease(ctx, lock.Key{Name: name, Node: node})
	return err
}

func (e plainContention) Lock(ctx context.Context, node, name string, pod gpu.PodRef) (uint64, error) {
	epoch, err := e.GPUBind.Lock(ctx, node, name, pod)
	if errors.Is(err, lock.ErrContention) {
		return 0, errors.New("node is locked")
	}
	return epoch, err
}

func (e restamps) Lock(ctx context.Context, node, name string, pod gpu.PodRef) (uint64, error) {
	if err := e.GPUBind.Release(ctx, node, name, pod); err != nil {
		return 0, err
	}
	return e.GPUBind.Lock(ctx, node, name, pod)
}

func (e strictRelease) Release(ctx context.Context, node, name string, pod gpu.PodRef) error {
	d, err := e.Locker.Release(ctx, lock.Key{Name: name, Node: node}, lock.Requester{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID})
	if err == nil && d.Kind == lock.NoOp {
		return fmt.Errorf("release: %s", d.Reason)
	}
	return err
}

func (e rebinds) Bind(ctx context.Context, pod gpu.PodRef, node string) error {
	if p, err := e.GetPod(ctx, pod); err == nil && p.Spec.NodeName != "" {
		return errors.New("already bound")
	}
	return e.GPUBind.Bind(ctx, pod, node)
}

func (e bindsByName) Bind(ctx context.Context, pod gpu.PodRef, node string) error {
	pod.UID = ""
	return e.GPUBind.Bind(ctx, pod, node)
}

func (e hidesTimeouts) Bind(ctx context.Context, pod gpu.PodRef, node string) error {
	if err := e.GPUBind.Bind(ctx, pod, node); err != nil {
		return fmt.Errorf("bind failed: %v", err)
	}
	return nil
}

func (e replacesAnnotations) PatchPodAnnotations(_ context.Context, pod gpu.PodRef, a map[string]string) error {
	return e.Pods.Mutate(pod.Namespace, pod.Name, func(p *corev1.Pod) { p.Annotations = a })
}

func TestBindConformanceFindsViolations(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(*fake.GPUBind) gpu.BindExecutor
		want []string
	}{
		{"release not owner-checked", func(g *fake.GPUBind) gpu.BindExecutor { return releasesAnyone{g} }, []string{
			"release by another pod is a no-op that keeps the lock",
			"release by another pod is a no-op that keeps the lock",
		}},
		{"contention as a plain error", func(g *fake.GPUBind) gpu.BindExecutor { return plainContention{g} }, []string{
			"lock held by another pod fails with lock.ErrContention and stays the holder's",
			"release by another pod is a no-op that keeps the lock",
		}},
		{"lock re-stamps", func(g *fake.GPUBind) gpu.BindExecutor { return restamps{g} }, []string{
			"lock grants a free lock; the holder locking again keeps its epoch",
			"lock held by another pod fails with lock.ErrContention and stays the holder's",
			"release by another pod is a no-op that keeps the lock",
		}},
		{"release of a free lock errs", func(g *fake.GPUBind) gpu.BindExecutor { return strictRelease{g} }, []string{
			"release by another pod is a no-op that keeps the lock",
			"release of a lock not held is a no-op",
			"release of a lock not held is a no-op",
		}},
		{"second bind conflicts", func(g *fake.GPUBind) gpu.BindExecutor { return rebinds{g} }, []string{
			"bind binds the pod; binding it again to that node succeeds",
		}},
		{"bind ignores the UID", func(g *fake.GPUBind) gpu.BindExecutor { return bindsByName{g} }, []string{
			"bind with a stale UID fails and binds nothing",
			"bind with a stale UID fails and binds nothing",
		}},
		{"timeouts hidden", func(g *fake.GPUBind) gpu.BindExecutor { return hidesTimeouts{g} }, []string{
			"bind whose context expired reports gpu.ErrOutcomeUnknown or context.DeadlineExceeded",
		}},
		{"patch replaces annotations", func(g *fake.GPUBind) gpu.BindExecutor { return replacesAnnotations{g} }, []string{
			"patch merges annotations and is repeatable",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantViolations(t, fake.CheckBindExecutor(context.Background(), bindHarness(tc.wrap)), tc.want)
		})
	}
	failing := fake.CheckBindExecutor(context.Background(), func(context.Context) (fake.BindHarness, error) {
		return fake.BindHarness{}, errors.New("no cluster")
	})
	if len(failing) == 0 || !strings.Contains(failing[0].Detail, "no cluster") {
		t.Fatalf("constructor failure not reported: %v", failing)
	}
}

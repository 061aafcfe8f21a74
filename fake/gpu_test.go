package fake_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

var tGPU = time.Date(2026, 6, 14, 10, 0, 0, 0, time.UTC)

// fatalHelper is what testing.T and rapid.T share.
type fatalHelper interface {
	Helper()
	Fatal(args ...any)
}

// bindWorld is one node, a lock store and some GPU pods on a fresh World.
type bindWorld struct {
	w    *fake.World
	pods *fake.PodStore
	g    *fake.GPUBind
	wt   *fake.ClockWaiter
}

func newBindWorld(t fatalHelper, seed uint64, names ...string) *bindWorld {
	t.Helper()
	w := fake.NewWorld(seed, tGPU)
	pods := fake.NewPodStore(w, fake.PodStoreOptions{})
	g := fake.NewGPUBind(w, pods, lock.Options{})
	g.AddNode("n1")
	for _, name := range names {
		_, err := pods.CreatePod(context.Background(), corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				"nvidia.com/gpu": resource.MustParse("1"), "cambricon.com/vmlu": resource.MustParse("1"),
			}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return &bindWorld{w: w, pods: pods, g: g, wt: &fake.ClockWaiter{World: w, Locks: g.Locks}}
}

func (b *bindWorld) ref(name string) gpu.PodRef {
	for _, p := range b.pods.Pods("default") {
		if p.Name == name {
			return gpu.PodRef{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}
		}
	}
	return gpu.PodRef{Namespace: "default", Name: name}
}

func (b *bindWorld) bind(ctx context.Context, name string, opts gpu.Options) (gpu.Outcome, error) {
	return gpu.ApplyBind(ctx, gpu.BindInput{Pod: b.ref(name), Node: "n1", Registry: gpu.DefaultRegistry(), Options: opts, Seed: 9}, b.g, b.wt)
}

func (b *bindWorld) pod(name string) corev1.Pod {
	p, _ := b.pods.GetPod(context.Background(), "default", name)
	return p
}

// held returns the records of both locks on n1 ("" when free).
func (b *bindWorld) held(t fatalHelper) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{gpu.LockCambricon, gpu.LockNvidia} {
		obs, err := b.g.Locks.Inner.Get(context.Background(), lock.Key{Name: name, Node: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = obs.Raw
	}
	return out
}

// TestApplyBindWakesOnRelease is the contention example end to end: p1
// holds the shared lock; p2 locks Cambricon's, is refused the shared one,
// releases Cambricon's, waits, and is woken when the device plugin releases
// p1's lock 22 ms later, well before its 100-150 ms backoff ends.
func TestApplyBindWakesOnRelease(t *testing.T) {
	b := newBindWorld(t, 1, "p1", "p2")
	ctx := context.Background()
	out, err := b.bind(ctx, "p1", gpu.Options{})
	if err != nil || !out.Bound {
		t.Fatalf("p1: %v %v", out, err)
	}
	// p1 keeps only the shared lock, so p2 gets Cambricon's and is refused
	// the shared one.
	if err := b.g.Release(ctx, "n1", gpu.LockCambricon, b.ref("p1")); err != nil {
		t.Fatal(err)
	}
	b.wt.At(tGPU.Add(22*time.Millisecond), func() {
		if err := b.g.Allocate(ctx, b.ref("p1"), "n1", []string{gpu.LockNvidia}); err != nil {
			t.Errorf("allocate p1: %v", err)
		}
	})
	b.w.Calls.Reset()
	out, err = b.bind(ctx, "p2", gpu.Options{})
	if err != nil || !out.Bound {
		t.Fatalf("p2: %v %v", out, err)
	}
	if out.Attempts != 2 {
		t.Fatalf("p2 took %d attempts, want 2", out.Attempts)
	}
	if got := b.w.Clock.Now().Sub(tGPU); got != 22*time.Millisecond {
		t.Fatalf("p2 bound at %v, want at the 22 ms release", got)
	}
	if got := b.pod("p1").Annotations[gpu.AnnoBindPhase]; got != gpu.PhaseSuccess {
		t.Fatalf("p1 phase %q, want success", got)
	}
	p2 := b.pod("p2")
	if p2.Spec.NodeName != "n1" || p2.Annotations[gpu.AnnoBindPhase] != gpu.PhaseAllocating {
		t.Fatalf("p2 not bound and allocating: %v %v", p2.Spec.NodeName, p2.Annotations)
	}
	// p2's fence verifies against the records it holds.
	for _, name := range []string{gpu.LockCambricon, gpu.LockNvidia} {
		rec, _, err := lock.Decode(b.held(t)[name])
		if err != nil || !gpu.VerifyFence(rec, name, &p2) {
			t.Fatalf("fence of %s does not verify: %v %v %v", name, rec, err, p2.Annotations)
		}
	}
	// Lock-store calls in order: the refused attempt released Cambricon's lock
	// before waiting (RetryRollback), then both were taken again.
	var lockCalls []string
	for _, c := range b.w.Calls.Calls() {
		if strings.HasPrefix(c.Kind, "lock.") && c.Outcome == fake.OutcomeOK && c.Kind != fake.LockGet {
			lockCalls = append(lockCalls, c.Kind+" "+c.Target)
		}
	}
	want := []string{
		"lock.cas n1/cambricon.com/dsmlu.lock", // p2 takes Cambricon's
		"lock.cad n1/cambricon.com/dsmlu.lock", // refused the shared one: roll back
		"lock.cad n1/hami.io/mutex.lock",       // the device plugin releases p1's

		"lock.cas n1/cambricon.com/dsmlu.lock", // p2, woken, takes both
		"lock.cas n1/hami.io/mutex.lock",
	}
	if diff := cmp.Diff(want, lockCalls); diff != "" {
		t.Fatalf("lock writes (-want +got):\n%s", diff)
	}
}

// TestApplyBindFailuresCleanUp injects a fault at each point of the flow
// through the fake's World and checks the store and the pod afterwards.
func TestApplyBindFailuresCleanUp(t *testing.T) {
	errDown := errors.New("apiserver unavailable")
	cases := []struct {
		name  string
		setup func(b *bindWorld)
		phase string
	}{
		{"second lock holds a malformed value", func(b *bindWorld) {
			// HAMi's stuck value: Invalid is not contention, so no retry; the
			// failure path releases Cambricon's lock taken before it.
			if err := b.g.Locks.Inner.(*lock.MemoryStore).Put(lock.Key{Name: gpu.LockNvidia, Node: "n1"}, "lock"); err != nil {
				panic(err)
			}
		}, gpu.PhaseFailed},
		{"node read fails", func(b *bindWorld) { b.w.Faults.FailNext(fake.KindGPUNodeGet, 1, errDown) }, gpu.PhaseFailed},
		{"lock store down", func(b *bindWorld) { b.w.Faults.FailNext(fake.LockGet, 5, errDown) }, gpu.PhaseFailed},
		{"patch fails", func(b *bindWorld) { b.w.Faults.FailNext(fake.KindGPUPodPatch, 1, errDown) }, gpu.PhaseFailed},
		{"bind fails", func(b *bindWorld) { b.w.Faults.FailNext(fake.KindGPUPodBind, 1, errDown) }, gpu.PhaseFailed},
		{"lock CAS response lost", func(b *bindWorld) { b.w.Faults.LoseResponseNext(fake.LockCAS, 1, errDown) }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBindWorld(t, 4, "p1")
			tc.setup(b)
			out, err := b.bind(context.Background(), "p1", gpu.Options{})
			t.Logf("outcome: %v", out)
			if out.Bound {
				if err != nil {
					t.Fatalf("bound with error %v", err)
				}
				return // a lost response the Locker recovered from
			}
			if err == nil || !errors.Is(err, out.Err) {
				t.Fatalf("err = %v, outcome err %v", err, out.Err)
			}
			for name, raw := range b.held(t) {
				if strings.Contains(raw, ",p1") {
					t.Fatalf("failed Bind left %s = %q", name, raw)
				}
			}
			if got := b.pod("p1").Annotations[gpu.AnnoBindPhase]; got != gpu.PhaseFailed {
				t.Fatalf("bind-phase = %q, want failed", got)
			}
			if b.pod("p1").Spec.NodeName != "" {
				t.Fatal("failed Bind bound the pod")
			}
			if f := b.g.Forgotten(); len(f) != 1 {
				t.Fatalf("forgotten = %v", f)
			}
		})
	}
}

// TestPropApplyBindOnFake runs one Bind through ApplyBind against the fake
// with random faults on every call kind and, sometimes, a lock already held
// by another pod that the device plugin releases later. Afterwards: a failed Bind holds no lock and its pod says bind-phase=failed (unless
// that very write failed, which the outcome reports); a successful one holds
// exactly its locks, and its fence verifies.
func TestPropApplyBindOnFake(t *testing.T) {
	kinds := []string{fake.KindGPUNodeGet, fake.KindGPUPodPatch, fake.KindGPUPodBind, fake.LockGet, fake.LockCAS, fake.LockCAD, fake.KindPodGet}
	rapid.Check(t, func(t *rapid.T) {
		b := newBindWorld(t, rapid.Uint64().Draw(t, "seed"), "p0", "p1")
		ctx := context.Background()
		if rapid.Bool().Draw(t, "held") {
			if out, err := b.bind(ctx, "p0", gpu.Options{}); err != nil || !out.Bound {
				t.Fatalf("p0: %v", err)
			}
			at := time.Duration(rapid.IntRange(1, 3000).Draw(t, "release-ms")) * time.Millisecond
			b.wt.At(tGPU.Add(at), func() {
				_ = b.g.Allocate(ctx, b.ref("p0"), "n1", []string{gpu.LockNvidia, gpu.LockCambricon})
			})
		}
		for _, k := range kinds {
			fail := float64(rapid.IntRange(0, 3).Draw(t, "fail-"+k)) / 20
			lose := float64(rapid.IntRange(0, 2).Draw(t, "lose-"+k)) / 20
			b.w.Faults.SetRates(k, fail, lose, errors.New("injected "+k))
		}
		opts := gpu.Options{RetryDeadline: 2 * time.Second, ExtenderHTTPTimeout: 3 * time.Second}
		out, err := b.bind(ctx, "p1", opts)
		b.w.Faults.Clear()
		if !errors.Is(err, out.Err) && err != out.Err {
			t.Fatalf("returned %v, outcome %v", err, out.Err)
		}
		p1 := b.pod("p1")
		held := b.held(t)
		mine := map[string]bool{}
		for name, raw := range held {
			if rec, _, err := lock.Decode(raw); err == nil && rec.Name == "p1" {
				mine[name] = true
			}
		}
		switch {
		case out.Bound:
			if p1.Spec.NodeName != "n1" || p1.Annotations[gpu.AnnoBindPhase] != gpu.PhaseAllocating {
				t.Fatalf("bound outcome but pod %v %v", p1.Spec.NodeName, p1.Annotations)
			}
			for _, h := range out.Held {
				rec, _, err := lock.Decode(held[h.Name])
				if err != nil || !gpu.VerifyFence(rec, h.Name, &p1) {
					t.Fatalf("bound, but the fence of %s does not verify: %q %v", h.Name, held[h.Name], p1.Annotations)
				}
			}
		case out.Unknown:
			// Locks kept on purpose until their TTL: the Bind outcome is unknown.
		default:
			// HAMi logs a failed release and carries on, so
			// a lock may outlive a failed Bind only when its release is among
			// the reported ReleaseErrs; it then waits for its TTL.
			for name := range mine {
				if !releaseFailed(out, name) {
					t.Fatalf("failed Bind (%v) left %s without a release error; locks %v, release errors %v", out.Err, name, held, out.ReleaseErrs)
				}
			}
			if out.PhaseErr == nil && out.Err != nil && !out.ReturnGoError && p1.Annotations[gpu.AnnoBindPhase] != gpu.PhaseFailed {
				t.Fatalf("failed Bind (%v) left bind-phase %q", out.Err, p1.Annotations[gpu.AnnoBindPhase])
			}
			if p1.Spec.NodeName != "" && p1.Annotations[gpu.AnnoBindPhase] != gpu.PhaseFailed && out.PhaseErr == nil {
				t.Fatalf("pod bound to %s after a failed Bind without failed phase", p1.Spec.NodeName)
			}
		}
	})
}

// releaseFailed reports whether out records a failed release of lockName.
func releaseFailed(out gpu.Outcome, lockName string) bool {
	for _, err := range out.ReleaseErrs {
		if strings.HasPrefix(err.Error(), "release "+lockName+": ") {
			return true
		}
	}
	return false
}

// failingMark fails the bind-phase=failed write, as a flaky API server would.
type failingMark struct{ *fake.GPUBind }

func (f failingMark) PatchPodAnnotations(ctx context.Context, ref gpu.PodRef, ann map[string]string) error {
	if ann[gpu.AnnoBindPhase] == gpu.PhaseFailed {
		return errors.New("patch refused")
	}
	return f.GPUBind.PatchPodAnnotations(ctx, ref, ann)
}

func TestApplyBindReportsAFailedMark(t *testing.T) {
	b := newBindWorld(t, 5, "p1")
	b.w.Faults.FailNext(fake.KindGPUPodBind, 1, errors.New("bind refused"))
	out, err := gpu.ApplyBind(context.Background(), gpu.BindInput{Pod: b.ref("p1"), Node: "n1", Registry: gpu.DefaultRegistry()}, failingMark{b.g}, b.wt)
	if err == nil || out.PhaseErr == nil || !strings.Contains(out.ExtenderError(), "bind refused; also failed to mark hami.io/bind-phase=failed: patch refused") {
		t.Fatalf("outcome %v, err %v", out, err)
	}
	for name, raw := range b.held(t) {
		if raw != "" {
			t.Fatalf("%s still held: %q", name, raw)
		}
	}
	if diff := cmp.Diff([]string{gpu.LockNvidia, gpu.LockCambricon}, out.Released); diff != "" {
		t.Fatalf("released (-want +got):\n%s", diff)
	}
}

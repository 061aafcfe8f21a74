package gpu_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/gpu"
	"github.com/plancore/plancore/lock"
)

// TestNodeQueueServesInOrder checks FIFO hand-over per node, independence of
// nodes, and that a caller whose context ends leaves the line.
func TestNodeQueueServesInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q gpu.NodeQueue
		ctx := context.Background()
		leaveA, err := q.Enter(ctx, "n1")
		if err != nil {
			t.Fatal(err)
		}
		// Another node is not blocked by n1's line.
		leaveOther, err := q.Enter(ctx, "n2")
		if err != nil {
			t.Fatal(err)
		}
		leaveOther()

		var order []string
		done := make(chan struct{})
		enter := func(name string, ctx context.Context) {
			leave, err := q.Enter(ctx, "n1")
			if err != nil {
				order = append(order, name+":"+err.Error())
				done <- struct{}{}
				return
			}
			order = append(order, name)
			leave()
			done <- struct{}{}
		}
		go enter("b", ctx)
		synctest.Wait()
		cctx, cancel := context.WithCancel(ctx)
		go enter("c", cctx)
		synctest.Wait()
		go enter("d", ctx)
		synctest.Wait()
		if n := q.Len("n1"); n != 4 {
			t.Fatalf("line length %d, want 4", n)
		}
		cancel()
		<-done
		if n := q.Len("n1"); n != 3 {
			t.Fatalf("line length %d after a cancel, want 3", n)
		}
		if len(order) != 1 || order[0] != "c:context canceled" {
			t.Fatalf("order %v: only the cancelled caller may have left", order)
		}
		leaveA()
		<-done
		<-done
		if want := []string{"c:context canceled", "b", "d"}; len(order) != 3 || order[1] != want[1] || order[2] != want[2] {
			t.Fatalf("order %v, want %v", order, want)
		}
		if n := q.Len("n1"); n != 0 {
			t.Fatalf("line length %d at the end", n)
		}
	})
}

// TestStoreWaiterWakesOnRelease runs the production waiter in a synctest
// bubble: its timer runs on the bubble's clock, and a release on the memory
// store wakes it long before its backoff ends.
func TestStoreWaiterWakesOnRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := lock.NewMemoryStore()
		w := gpu.StoreWaiter{Store: store}
		key := lock.Key{Name: gpu.LockNvidia, Node: "n1"}
		if err := store.Put(key, "2026-06-14T10:00:00Z,default,holder"); err != nil {
			t.Fatal(err)
		}
		wake := w.Changes("n1", gpu.LockNvidia)
		start := time.Now()
		go func() {
			time.Sleep(22 * time.Millisecond)
			obs, _ := store.Get(context.Background(), key)
			_ = store.CompareAndDelete(context.Background(), key, lock.Precondition{Present: true, Raw: obs.Raw, Version: obs.Version})
		}()
		woken, err := w.Sleep(context.Background(), time.Second, wake)
		if err != nil || !woken {
			t.Fatalf("woken=%v err=%v", woken, err)
		}
		if got := time.Since(start); got != 22*time.Millisecond {
			t.Fatalf("woke after %v, want 22ms", got)
		}
		woken, err = w.Sleep(context.Background(), 100*time.Millisecond, nil)
		if err != nil || woken || time.Since(start) != 122*time.Millisecond {
			t.Fatalf("plain sleep: woken=%v err=%v at %v", woken, err, time.Since(start))
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := w.Sleep(ctx, time.Second, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled sleep: %v", err)
		}
	})
}

func TestVerifyFence(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "p", UID: "u1",
		Annotations: map[string]string{gpu.AnnoLockEpoch: "cambricon.com/dsmlu.lock=3;hami.io/mutex.lock=7"}}}
	rec := lock.Record{Namespace: "ml", Name: "p", UID: "u1", Epoch: 7}
	cases := []struct {
		name string
		rec  lock.Record
		lock string
		pod  *corev1.Pod
		want bool
	}{
		{"match", rec, gpu.LockNvidia, pod, true},
		{"other lock's epoch", rec, gpu.LockCambricon, pod, false},
		{"stolen: newer epoch", lock.Record{Namespace: "ml", Name: "p", UID: "u1", Epoch: 8}, gpu.LockNvidia, pod, false},
		{"HAMi writer: no epoch", lock.Record{Namespace: "ml", Name: "p"}, gpu.LockNvidia, pod, false},
		{"replaced pod: other UID", lock.Record{Namespace: "ml", Name: "p", UID: "u0", Epoch: 7}, gpu.LockNvidia, pod, false},
		{"3-part record without UID, name and epoch match", lock.Record{Namespace: "ml", Name: "p", Epoch: 7}, gpu.LockNvidia, pod, true},
		{"another pod", lock.Record{Namespace: "ml", Name: "q", Epoch: 7}, gpu.LockNvidia, pod, false},
		{"no annotation", rec, gpu.LockNvidia, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "p", UID: "u1"}}, false},
		{"malformed annotation", rec, gpu.LockNvidia, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "p", UID: "u1",
			Annotations: map[string]string{gpu.AnnoLockEpoch: "hami.io/mutex.lock=x"}}}, false},
		{"nil pod", rec, gpu.LockNvidia, nil, false},
	}
	for _, tc := range cases {
		if got := gpu.VerifyFence(tc.rec, tc.lock, tc.pod); got != tc.want {
			t.Errorf("%s: VerifyFence = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestApplyBindCancelledStillCleansUp cancels the Bind's context while it
// waits for a contended lock: it must fail, mark the pod failed and release
// nothing it does not hold, on a context without the cancellation.
func TestApplyBindCancelledStillCleansUp(t *testing.T) {
	pod := gpuPod("nvidia.com/gpu", "1", "cambricon.com/vmlu", "1")
	ex := &recordingExec{pod: pod, contend: map[string]bool{gpu.LockNvidia: true}}
	ctx, cancel := context.WithCancel(context.Background())
	wt := &cancelWaiter{cancel: cancel, now: tBind}
	out, err := gpu.ApplyBind(ctx, bindInput(gpu.Options{}), ex, wt)
	if !errors.Is(err, context.Canceled) || out.Bound {
		t.Fatalf("outcome %v err %v", out, err)
	}
	want := []string{"lock " + gpu.LockCambricon, "lock " + gpu.LockNvidia, "release " + gpu.LockCambricon + " live", "patch failed live", "event live", "forget live"}
	if len(ex.calls) != len(want) {
		t.Fatalf("calls %v, want %v", ex.calls, want)
	}
	for i := range want {
		if ex.calls[i] != want[i] {
			t.Fatalf("calls %v, want %v", ex.calls, want)
		}
	}
}

type recordingExec struct {
	pod     *corev1.Pod
	contend map[string]bool
	calls   []string
}

func live(ctx context.Context) string {
	if ctx.Err() != nil {
		return " cancelled"
	}
	return " live"
}

func (e *recordingExec) GetPod(context.Context, gpu.PodRef) (*corev1.Pod, error) { return e.pod, nil }
func (e *recordingExec) GetNode(context.Context, string) error                   { return nil }
func (e *recordingExec) Lock(_ context.Context, _, name string, _ gpu.PodRef) (uint64, error) {
	e.calls = append(e.calls, "lock "+name)
	if e.contend[name] {
		return 0, lock.ErrContention
	}
	return 1, nil
}
func (e *recordingExec) Release(ctx context.Context, _, name string, _ gpu.PodRef) error {
	e.calls = append(e.calls, "release "+name+live(ctx))
	return nil
}
func (e *recordingExec) PatchPodAnnotations(ctx context.Context, _ gpu.PodRef, a map[string]string) error {
	e.calls = append(e.calls, "patch "+a[gpu.AnnoBindPhase]+live(ctx))
	return nil
}
func (e *recordingExec) Bind(context.Context, gpu.PodRef, string) error { return nil }
func (e *recordingExec) Event(ctx context.Context, _ gpu.PodRef, _, _, _ string) error {
	e.calls = append(e.calls, "event"+live(ctx))
	return nil
}
func (e *recordingExec) ForgetAssumed(ctx context.Context, _ gpu.PodRef) error {
	e.calls = append(e.calls, "forget"+live(ctx))
	return nil
}

// cancelWaiter cancels the Bind when it starts to wait.
type cancelWaiter struct {
	cancel context.CancelFunc
	now    time.Time
}

func (w *cancelWaiter) Now() time.Time                         { return w.now }
func (w *cancelWaiter) Changes(string, string) <-chan struct{} { return nil }
func (w *cancelWaiter) Sleep(ctx context.Context, _ time.Duration, _ <-chan struct{}) (bool, error) {
	w.cancel()
	return false, ctx.Err()
}

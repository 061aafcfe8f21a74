package fake_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/lock"
)

var noon = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// A Clock is a k8s.io/utils/clock.Clock that moves only when told: pass it
// to any shell that takes a clock, and advance it instead of sleeping.
func ExampleClock() {
	clk := fake.NewClock(noon)
	timer := clk.NewTimer(5 * time.Second)
	clk.Advance(4 * time.Second)
	select {
	case <-timer.C():
		fmt.Println("fired early")
	default:
		fmt.Println("after 4s: waiting,", clk.Waiters(), "timer")
	}
	clk.Advance(time.Second)
	fmt.Println("after 5s: fired at", (<-timer.C()).Format(time.TimeOnly))
	// Output:
	// after 4s: waiting, 1 timer
	// after 5s: fired at 12:00:05
}

// A World's faults fail, delay or lose the response of the calls of one
// kind; every call lands in its log.
func ExampleWorld() {
	w := fake.NewWorld(1, noon)
	pods := fake.NewPodStore(w, fake.PodStoreOptions{})
	w.Faults.FailNext(fake.KindPodCreate, 1, errors.New("apiserver unavailable"))
	w.Faults.LoseResponseNext(fake.KindPodCreate, 1, errors.New("timeout"))
	w.Faults.SetLatency(fake.KindPodCreate, 30*time.Millisecond)
	ctx := context.Background()
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "worker-0"}}
	for i := 1; i <= 3; i++ {
		_, err := pods.CreatePod(ctx, pod)
		fmt.Printf("create %d: %v\n", i, err)
	}
	for _, c := range w.Calls.Calls() {
		fmt.Println(c)
	}
	// Output:
	// create 1: apiserver unavailable
	// create 2: timeout
	// create 3: pods "worker-0" already exists
	// #1 2026-01-01T12:00:00.03Z pod.create default/worker-0 injected-fail: apiserver unavailable
	// #2 2026-01-01T12:00:00.06Z pod.create default/worker-0 lost-response: timeout
	// #3 2026-01-01T12:00:00.09Z pod.create default/worker-0 error: pods "worker-0" already exists
}

// A PodStore's informer shows each change after a seeded delay of at most
// Lag, as a controller's cache does: right after the creates it lists
// nothing, and the two pods' events may arrive in either order (changes of
// one pod never overtake each other).
func ExamplePodStore_Informer() {
	w := fake.NewWorld(7, noon)
	pods := fake.NewPodStore(w, fake.PodStoreOptions{Lag: 2 * time.Second})
	inf := pods.Informer()
	inf.AddHandler(func(e fake.PodEvent) { fmt.Println("event:", e.Type, e.Pod.Name) })
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		if _, err := pods.CreatePod(ctx, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("store:", len(pods.Pods("ns")), "informer:", len(inf.List("ns", labels.Everything())))
	w.Clock.Advance(2 * time.Second)
	fmt.Println("2s later, informer:", len(inf.List("ns", labels.Everything())))
	// Output:
	// store: 2 informer: 0
	// event: ADDED b
	// event: ADDED a
	// 2s later, informer: 2
}

// A NodeAgent is a worker node for the capacity core: it accepts a
// dispatch, acknowledges it to the store and starts the job only if the
// store agrees, and counts what the scheduler side got wrong.
func ExampleNodeAgent() {
	ctx := context.Background()
	clk := fake.NewClock(noon)
	store, _ := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Clock: clk})
	node, _ := fake.NewNodeAgent("n1", 1, true, store)
	_, _ = node.Heartbeat(ctx, capacity.Usage{CPU: 20})

	loads, _ := store.Loads(ctx, []string{"n1"})
	plan, _ := capacity.Decide(capacity.Input{Now: clk.Now(), Nodes: loads}, capacity.Options{})
	res, _ := capacity.Dispatch(ctx, store, plan, "job-1/1", capacity.DispatchOptions{Clock: clk})
	out, _ := node.Dispatch(ctx, res.Lease)
	fmt.Println("job-1:", res.Verdict, out.Accept, out.Ack, "started:", out.Started)

	// The node is full now: the next job gets no lease and waits.
	loads, _ = store.Loads(ctx, []string{"n1"})
	plan, _ = capacity.Decide(capacity.Input{Now: clk.Now(), Nodes: loads}, capacity.Options{})
	fmt.Print(plan)
	st := node.Stats()
	fmt.Println("running:", st.Running, "oversold:", st.Oversold)
	// Output:
	// job-1: Selected accepted ok started: true
	// selection: NoCapacity requeue=1s
	//   x n1 CapacityExceeded: effective 1 >= max 1
	//   breakdown: CapacityExceeded=1
	// running: 1 oversold: 0
}

// A LockStore puts fault injection and the World's clock in front of a
// lock store: here one spurious conflict, which Locker absorbs by reading
// again, before the lock changes hands.
func ExampleLockStore() {
	ctx := context.Background()
	w := fake.NewWorld(3, noon)
	store := fake.NewLockStore(w)
	alive := func(context.Context, lock.Key, lock.Record) lock.Holder { return lock.Holder{State: lock.HolderExists} }
	locker := &lock.Locker{Store: store, Clock: w.Clock, Holder: alive}
	node := lock.NodeKey("gpu-node-1")
	a := lock.Requester{Namespace: "default", Name: "pod-a", UID: "ua"}
	b := lock.Requester{Namespace: "default", Name: "pod-b", UID: "ub"}

	g, err := locker.Acquire(ctx, node, a)
	fmt.Println("a:", g.Plan.Kind, "epoch", g.Plan.Record.Epoch, err)
	_, err = locker.Acquire(ctx, node, b)
	fmt.Println("b:", err)
	if _, err := locker.Release(ctx, node, a); err != nil {
		fmt.Println(err)
	}
	w.Faults.FailNext(fake.LockCAS, 1, lock.ErrConflict)
	g, err = locker.Acquire(ctx, node, b)
	fmt.Println("b:", g.Plan.Kind, "epoch", g.Plan.Record.Epoch, "after", g.Attempts, "reads", err)
	fmt.Println("writes refused by the fault:", w.Calls.Count(fake.LockCAS, fake.OutcomeInjectedFail))
	// Output:
	// a: Acquire epoch 1 <nil>
	// b: node gpu-node-1 has been locked within 5m0s: node lock contention
	// b: Acquire epoch 2 after 2 reads <nil>
	// writes refused by the fault: 1
}

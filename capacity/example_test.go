package capacity_test

import (
	"context"
	"fmt"
	"time"

	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
)

// The seed's formula, max(current, reserved), lets five reservations onto a
// node with M = 5 that already runs three jobs (counter-example A of the
// ledger's tests); plancore's default accounting admits two.
func ExampleNodeLedger() {
	now := time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)
	for _, acct := range []capacity.Accounting{capacity.SeedMax, capacity.Sum} {
		l, _ := capacity.NewNodeLedger(capacity.Options{Accounting: acct})
		l, _, _ = l.Heartbeat(now, capacity.Heartbeat{Epoch: 1, Seq: 10, Running: 3})
		admitted := 0
		for i := 1; i <= 6; i++ {
			var r capacity.ReserveResult
			l, r, _ = l.Reserve(now, capacity.Reservation{RID: fmt.Sprintf("j%d", i), Max: 5, Running: 3})
			if r.Status == capacity.ReserveOK {
				admitted++
			}
		}
		fmt.Printf("%s: admitted %d, so %d jobs on 5 slots\n", acct, admitted, 3+admitted)
	}
	// Output:
	// SeedMax: admitted 5, so 8 jobs on 5 slots
	// Sum: admitted 2, so 5 jobs on 5 slots
}

// Decide ranks the nodes that qualify and explains every one it leaves out.
func ExampleDecide() {
	now := time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)
	fresh := now.Add(-2 * time.Second)
	nodes := []capacity.NodeLoad{
		{ID: "gpu-1", Max: 4, Running: 1, HeartbeatAt: fresh, Usage: capacity.Usage{CPU: 40, Memory: 50, GPU: 95, HasGPU: true}},
		{ID: "cpu-1", Max: 4, Running: 2, Pending: 1, HeartbeatAt: fresh, Usage: capacity.Usage{CPU: 30, Memory: 40}},
		{ID: "cpu-2", Max: 8, Running: 2, HeartbeatAt: fresh, Usage: capacity.Usage{CPU: 20, Memory: 20}},
		{ID: "cpu-3", Max: 4, Running: 3, AckedUncounted: 1, HeartbeatAt: fresh, Usage: capacity.Usage{CPU: 10, Memory: 10}},
		{ID: "old-1", Max: 4, HeartbeatAt: now.Add(-time.Minute)},
	}
	sel, _ := capacity.Decide(capacity.Input{Nodes: nodes, Now: now}, capacity.Options{})
	fmt.Print(sel)
	// Output:
	// selection: Selected
	//   1. cpu-2 effective=2/8 free=6 cpu=20% mem=20%
	//   2. cpu-1 effective=3/4 free=1 cpu=30% mem=40%
	//   x gpu-1 GPUOverThreshold: gpu 95% > 90%
	//   x cpu-3 CapacityExceeded: effective 4 >= max 4
	//   x old-1 StaleHeartbeat: heartbeat 1m0s old > 45s
	//   breakdown: StaleHeartbeat=1 CapacityExceeded=1 GPUOverThreshold=1
}

// Dispatch walks the ranked candidates, reserving on each until one grants
// a lease; the node gate then accepts the job and starts it once the store
// confirms the ACK.
func ExampleDispatch() {
	ctx := context.Background()
	clock := fake.NewClock(time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)) // nil: the wall clock
	now := clock.Now()
	store, _ := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Clock: clock})
	gate, _ := capacity.NewNodeGate(1, 2, true)
	_, hb := gate.Snapshot(capacity.Usage{CPU: 10, Memory: 10})
	_, _ = store.Heartbeat(ctx, "n1", hb)

	loads, _ := store.Loads(ctx, []string{"n1"})
	plan, _ := capacity.Decide(capacity.Input{Nodes: loads, Now: now}, capacity.Options{})
	res, _ := capacity.Dispatch(ctx, store, plan, "job-7#1", capacity.DispatchOptions{Clock: clock})
	fmt.Print(res)

	gate, st, seq, _ := gate.Accept(res.Lease.RID, res.Lease.Epoch)
	ack, _ := store.Ack(ctx, capacity.Ack{Node: "n1", RID: res.Lease.RID, Epoch: gate.Epoch(), Seq: seq})
	gate, started, _ := gate.Commit(res.Lease.RID, ack)
	fmt.Println("node:", st, "ack:", ack, "started:", started, "running:", gate.Running())
	// Output:
	// dispatch: Selected node=n1 rid=job-7#1 epoch=1 expiry=12:00:05.000
	//   attempt 1: n1 ok epoch=1 load=1 expiry=12:00:05.000
	// node: accepted ack: ok started: true running: 1
}

// A Dispatcher runs the loop every scheduler writes: two nodes of one slot
// and three jobs, worked on one at a time; the third finds no room and
// waits for the requeue time (here the run stops there instead).
func ExampleDispatcher() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, _ := capacity.NewMemoryStore(capacity.MemoryStoreOptions{})
	for _, n := range []string{"n1", "n2"} {
		_, _ = store.Heartbeat(ctx, n, capacity.Heartbeat{Epoch: 1, Seq: 1, Max: 1})
	}
	d := &capacity.Dispatcher{
		Store: store, Nodes: capacity.StaticNodes("n1", "n2"), Concurrency: 1,
		Send: func(ctx context.Context, job capacity.Job, l capacity.Lease) error {
			// Hand the job and its lease to the node; the node acknowledges
			// it to the store and starts it only if the answer allows.
			st, err := store.Ack(ctx, capacity.Ack{Node: l.Node, RID: l.RID, Epoch: l.Epoch, Seq: 2})
			if err == nil && !st.Start() {
				err = fmt.Errorf("node refused: %s", st)
			}
			return err
		},
		Observer: capacity.ObserverFunc(func(e capacity.DispatcherEvent) {
			fmt.Printf("%s %s node=%q requeue=%v pending=%d\n", e.RID, e.Outcome, e.Result.Lease.Node, e.RequeueAfter, e.Pending)
			if e.Outcome == capacity.JobNoCapacity {
				fmt.Println("  " + e.Plan.Breakdown.String())
				cancel()
			}
		}),
	}
	for _, id := range []string{"a", "b", "c"} {
		_ = d.Submit(capacity.Job{ID: id})
	}
	_ = d.Run(ctx) // until ctx ends; nil then
	fmt.Println("still pending:", d.Pending())
	// Output:
	// a/1 Sent node="n2" requeue=0s pending=2
	// b/1 Sent node="n1" requeue=0s pending=1
	// c/1 NoCapacity node="" requeue=1s pending=1
	//   CapacityExceeded=2
	// still pending: [c]
}

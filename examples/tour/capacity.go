package main

import (
	"context"
	"fmt"
	"time"

	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
)

func init() { register(4, "capacity", "dispatching jobs to nodes without overselling", runCapacity) }

func runCapacity(w *page) error {
	ctx := context.Background()
	clock := fake.NewClock(time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC))

	w.term("heartbeat", "lease", "ACK", "requeue")
	fmt.Fprintln(w, "Each node runs at most M jobs. A scheduler reserves a slot (a lease) before it")
	fmt.Fprintln(w, "sends a job. The scheduler this core replaces (\"the seed\") counts a node's load as")
	fmt.Fprintln(w, "max(running, reserved); plancore's default counts running + reserved. A node with")
	fmt.Fprintln(w, "M = 5 and 3 jobs running receives six reservations before any ACK:")
	w.calls(`l, err := capacity.NewNodeLedger(capacity.Options{Accounting: acct})
l, _, _ = l.Heartbeat(clock.Now(), capacity.Heartbeat{Epoch: 1, Seq: 10, Running: 3})
if l, r, err = l.Reserve(clock.Now(), capacity.Reservation{RID: fmt.Sprintf("j%d", i), Max: 5, Running: 3}); err != nil {`)
	for _, acct := range []capacity.Accounting{capacity.SeedMax, capacity.Sum} {
		l, err := capacity.NewNodeLedger(capacity.Options{Accounting: acct})
		if err != nil {
			return err
		}
		l, _, _ = l.Heartbeat(clock.Now(), capacity.Heartbeat{Epoch: 1, Seq: 10, Running: 3})
		admitted := 0
		for i := 1; i <= 6; i++ {
			var r capacity.ReserveResult
			if l, r, err = l.Reserve(clock.Now(), capacity.Reservation{RID: fmt.Sprintf("j%d", i), Max: 5, Running: 3}); err != nil {
				return err
			}
			if r.Status == capacity.ReserveOK {
				admitted++
			}
		}
		fmt.Fprintf(w, "  %-8s admits %d: %d jobs committed to 5 slots\n", acct, admitted, 3+admitted)
	}

	fmt.Fprintln(w, "\nplancore charges a job from its reservation until a heartbeat sampled after")
	fmt.Fprintln(w, "it started counts it (heartbeats carry sequence numbers), so three fake nodes with")
	fmt.Fprintln(w, "M = 2, which would themselves accept any job, never run more than 2 jobs. Each job:")
	w.calls(`loads, err := store.Loads(ctx, ids)
sel, err := capacity.Decide(capacity.Input{Nodes: loads, Now: clock.Now()}, capacity.Options{})
res, err := capacity.Dispatch(ctx, store, sel, rid, capacity.DispatchOptions{Clock: clock})
out, err := agents[res.Lease.Node].Dispatch(ctx, res.Lease)`)
	store, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Clock: clock})
	if err != nil {
		return err
	}
	ids := []string{"node-a", "node-b", "node-c"}
	agents := map[string]*fake.NodeAgent{}
	for i, id := range ids {
		a, err := fake.NewNodeAgent(id, 2, false, store)
		if err != nil {
			return err
		}
		agents[id] = a
		if _, err := a.Heartbeat(ctx, capacity.Usage{CPU: float64(20 + 30*i), Memory: 30}); err != nil {
			return err
		}
	}
	for job := 1; job <= 8; job++ {
		rid := fmt.Sprintf("job-%d#1", job)
		loads, err := store.Loads(ctx, ids)
		if err != nil {
			return err
		}
		sel, err := capacity.Decide(capacity.Input{Nodes: loads, Now: clock.Now()}, capacity.Options{})
		if err != nil {
			return err
		}
		res, err := capacity.Dispatch(ctx, store, sel, rid, capacity.DispatchOptions{Clock: clock})
		if err != nil {
			return err
		}
		if res.Verdict != capacity.Selected {
			fmt.Fprintf(w, "  %s: %s, requeue after %v (%s)\n", rid, res.Verdict, res.RequeueAfter, res.Breakdown)
			continue
		}
		out, err := agents[res.Lease.Node].Dispatch(ctx, res.Lease)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s -> %s (node %s, ack %s, started %v)\n", rid, res.Lease.Node, out.Accept, out.Ack, out.Started)
		clock.Advance(100 * time.Millisecond)
	}
	for _, id := range ids {
		st := agents[id].Stats()
		fmt.Fprintf(w, "  %s runs %d of 2, oversold %d\n", id, st.Running, st.Oversold)
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "A job finishes on node-a; the slot returns with the next heartbeat, which")
	fmt.Fprintln(w, "counts exactly what runs:")
	if rid, ok := agents["node-a"].FinishOldest(); ok {
		fmt.Fprintf(w, "  node-a finished %s\n", rid)
	}
	if _, err := agents["node-a"].Heartbeat(ctx, capacity.Usage{CPU: 20, Memory: 30}); err != nil {
		return err
	}
	loads, err := store.Loads(ctx, []string{"node-a"})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  node-a effective load %d (running %d, pending %d, acked-uncounted %d)\n",
		loads[0].Effective(capacity.Sum), loads[0].Running, loads[0].Pending, loads[0].AckedUncounted)

	fmt.Fprintln(w)
	w.term("TTL")
	fmt.Fprintln(w, "A lease that passes its TTL before its ACK (a slow node) is refused: the ACK")
	fmt.Fprintln(w, "answers expired and the node never starts the job, so the slot is not used twice:")
	w.calls(`r, err := store.Reserve(ctx, capacity.Reservation{Node: "node-a", RID: "slow-1#1"})
clock.Advance(capacity.DefaultTTL)`)
	r, err := store.Reserve(ctx, capacity.Reservation{Node: "node-a", RID: "slow-1#1"})
	if err != nil {
		return err
	}
	clock.Advance(capacity.DefaultTTL)
	out, err := agents["node-a"].Dispatch(ctx, capacity.Lease{Node: "node-a", RID: "slow-1#1", Epoch: r.Epoch, Expiry: r.Expiry})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  reserve %s, 5s later the ACK answers %s, started %v\n", r.Status, out.Ack, out.Started)

	fmt.Fprintln(w)
	fmt.Fprintln(w, "Each node states its limit once, in its heartbeat (here M = 2). A scheduler")
	fmt.Fprintln(w, "that decided with another M is refused, never granted under a limit it did not see:")
	r, err = store.Reserve(ctx, capacity.Reservation{Node: "node-b", RID: "stale-view#1", Max: 4})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  Loads says M = %d; a reserve asking Max 4 answers %s\n", loads[0].Max, r.Status)
	return nil
}

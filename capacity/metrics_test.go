package capacity_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/plancore/plancore/capacity"
)

// TestMetrics drives a CountingStore over MemoryStore through every kind of
// answer and checks each counter.
func TestMetrics(t *testing.T) {
	// Both nodes state their limit, M = 2, in their heartbeats: Loads reports
	// it, Decide reads it and Reserve enforces it.
	ctx := context.Background()
	mem, _ := newMem(t, capacity.Options{})
	var m capacity.Metrics
	s := capacity.CountingStore{Store: mem, Metrics: &m}
	if _, err := s.Heartbeat(ctx, "a", capacity.Heartbeat{Epoch: 1, Seq: 1, Max: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Heartbeat(ctx, "b", capacity.Heartbeat{Epoch: 1, Seq: 1, Running: 2, Max: 2, Usage: capacity.Usage{CPU: 95}}); err != nil {
		t.Fatal(err)
	}
	calls := []func() error{
		func() error { _, err := s.Reserve(ctx, capacity.Reservation{Node: "a", RID: "j1", Max: 2}); return err },
		func() error { _, err := s.Reserve(ctx, capacity.Reservation{Node: "a", RID: "j1", Max: 2}); return err },
		func() error { _, err := s.Reserve(ctx, capacity.Reservation{Node: "x", RID: "j2", Max: 2}); return err },
		func() error { _, err := s.Ack(ctx, capacity.Ack{Node: "a", RID: "j1", Epoch: 1, Seq: 2}); return err },
		func() error { _, err := s.Ack(ctx, capacity.Ack{Node: "a", RID: "j1", Epoch: 1, Seq: 2}); return err },
		func() error { _, err := s.Ack(ctx, capacity.Ack{Node: "a", RID: "j3", Epoch: 9, Seq: 3}); return err },
		func() error { _, err := s.Ack(ctx, capacity.Ack{Node: "a", RID: "j4", Epoch: 1, Seq: 4}); return err },
		// j5 fits, b is full: all or nothing rolls j5 back; partial keeps it.
		func() error {
			_, err := s.ReserveBatch(ctx, []capacity.Reservation{{Node: "a", RID: "j5", Max: 2}, {Node: "b", RID: "j6", Max: 2}}, capacity.AllOrNothing)
			return err
		},
		func() error {
			_, err := s.ReserveBatch(ctx, []capacity.Reservation{{Node: "a", RID: "j5", Max: 2}, {Node: "b", RID: "j6", Max: 2}}, capacity.Partial)
			return err
		},
	}
	for i, call := range calls {
		if err := call(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	// Invalid input is the caller's bug, not a store outcome.
	if _, err := s.Reserve(ctx, capacity.Reservation{Node: "a"}); err == nil {
		t.Fatal("reserve without a rid succeeded")
	}
	// A store error counts as "error".
	down := capacity.CountingStore{Store: failingStore{SlotStore: mem, down: map[string]bool{"a": true}}, Metrics: &m}
	if _, err := down.Reserve(ctx, capacity.Reservation{Node: "a", RID: "j7"}); err == nil {
		t.Fatal("failing store succeeded")
	}

	loads, err := mem.Loads(ctx, []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := capacity.Decide(capacity.Input{Nodes: loads, Now: t0}, capacity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.ObservePlan(sel)
	res, err := capacity.Dispatch(ctx, s, capacity.Plan{Verdict: capacity.Selected, Candidates: []capacity.Candidate{{ID: "b", Max: 2}, {ID: "a", Max: 2}}},
		"j8", capacity.DispatchOptions{Clock: fixedClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveDispatch(res)

	want := capacity.MetricsSnapshot{
		// ok: j1 and the partial batch's j5; duplicate: j1 again; unknown
		// node: j2 on x; full: j6 twice, then j8 on b and on a (j5 and the
		// uncounted j1 fill it); rolled back: the first j5; error: j7.
		Reserve:          map[string]uint64{"ok": 2, "duplicate": 1, "unknown-node": 1, "full": 4, "rolled-back": 1, "error": 1},
		Ack:              map[string]uint64{"ok": 1, "duplicate": 1, "epoch-mismatch": 1, "expired": 1},
		Excluded:         map[string]uint64{"CapacityExceeded": 2, "StaleHeartbeat": 1},
		Dispatches:       1,
		DispatchAttempts: 2,
	}
	if diff := cmp.Diff(want, m.Snapshot()); diff != "" {
		t.Errorf("metrics (-want +got):\n%s\nselection: %v", diff, fmt.Sprint(sel.Excluded))
	}
}

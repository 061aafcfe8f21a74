package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
	"k8s.io/utils/clock"
)

// failingStore fails every Reserve on the nodes listed, as a store whose
// backend is down would.
type failingStore struct {
	capacity.SlotStore
	down map[string]bool
}

func (f failingStore) Reserve(ctx context.Context, r capacity.Reservation) (capacity.ReserveResult, error) {
	if f.down[r.Node] {
		return capacity.ReserveResult{}, fmt.Errorf("%w: connection refused", capacity.ErrStoreUnavailable)
	}
	return f.SlotStore.Reserve(ctx, r)
}

func TestDispatch(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) *capacity.MemoryStore {
		s, _ := newMem(t, capacity.Options{})
		for _, n := range []string{"a", "b", "c", "d"} {
			if _, err := s.Heartbeat(ctx, n, capacity.Heartbeat{Epoch: 7, Seq: 1}); err != nil {
				t.Fatal(err)
			}
		}
		// a and b are full in the store although the (stale) selection below
		// still offers them; a's lease lapses first.
		for i, n := range []string{"a", "a", "b", "b"} {
			if i == 1 || i == 3 {
				continue
			}
			for j := range 2 {
				if _, err := s.Reserve(ctx, capacity.Reservation{Node: n, RID: fmt.Sprintf("%s%d", n, j), Max: 2, TTL: time.Duration(1+i) * time.Second}); err != nil {
					t.Fatal(err)
				}
			}
		}
		return s
	}
	sel := capacity.Plan{Verdict: capacity.Selected, Candidates: []capacity.Candidate{
		{ID: "a", Max: 2}, {ID: "b", Max: 2}, {ID: "c", Max: 2}, {ID: "d", Max: 2}}}
	nodesOf := func(r capacity.DispatchResult) []string {
		var out []string
		for _, a := range r.Attempts {
			out = append(out, a.Node+":"+a.Result.Status.String())
		}
		return out
	}

	t.Run("refusals move on to the next candidate", func(t *testing.T) {
		s := setup(t)
		res, err := capacity.Dispatch(ctx, s, sel, "job#1", capacity.DispatchOptions{Clock: fixedClock(t0)})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a:full", "b:full", "c:ok"}, nodesOf(res)); diff != "" {
			t.Fatalf("attempts (-want +got):\n%s", diff)
		}
		if res.Verdict != capacity.Selected || res.Lease.Node != "c" || res.Lease.Epoch != 7 || !res.Lease.Expiry.Equal(t0.Add(5*time.Second)) {
			t.Fatalf("lease %+v", res.Lease)
		}
	})
	t.Run("attempts are bounded; the hint is the earliest lapse", func(t *testing.T) {
		s := setup(t)
		res, err := capacity.Dispatch(ctx, s, sel, "job#1", capacity.DispatchOptions{MaxAttempts: 2, Clock: fixedClock(t0)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != capacity.NoCapacity || len(res.Attempts) != 2 || res.RequeueAfter != time.Second {
			t.Fatalf("got %v", res)
		}
	})
	t.Run("a store error stops the walk and is never a yes", func(t *testing.T) {
		s := setup(t)
		res, err := capacity.Dispatch(ctx, failingStore{s, map[string]bool{"b": true}}, sel, "job#1", capacity.DispatchOptions{Clock: fixedClock(t0)})
		if !errors.Is(err, capacity.ErrStoreUnavailable) || res.Verdict == capacity.Selected {
			t.Fatalf("got %v, %v", res, err)
		}
		if diff := cmp.Diff([]string{"a:full"}, nodesOf(res)); diff != "" {
			t.Fatalf("attempts (-want +got):\n%s", diff)
		}
	})
	t.Run("no candidate keeps the selection's breakdown and hint", func(t *testing.T) {
		s := setup(t)
		empty := capacity.Plan{Verdict: capacity.NoCapacity, RequeueAfter: 3 * time.Second,
			Excluded: []capacity.Exclusion{{ID: "z", Reason: capacity.Reason{Code: capacity.ReasonStaleHeartbeat}}}, Breakdown: capacity.Breakdown{StaleHeartbeat: 1}}
		res, err := capacity.Dispatch(ctx, s, empty, "job#1", capacity.DispatchOptions{Clock: fixedClock(t0)})
		if err != nil || res.Verdict != capacity.NoCapacity || res.RequeueAfter != 3*time.Second || res.Breakdown.StaleHeartbeat != 1 {
			t.Fatalf("got %v, %v", res, err)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		s := setup(t)
		if _, err := capacity.Dispatch(ctx, s, sel, "", capacity.DispatchOptions{Clock: fixedClock(t0)}); !errors.Is(err, capacity.ErrInvalidInput) {
			t.Errorf("empty rid: %v", err)
		}
		if _, err := capacity.Dispatch(ctx, s, sel, "j", capacity.DispatchOptions{MaxAttempts: -1, Clock: fixedClock(t0)}); !errors.Is(err, capacity.ErrInvalidOptions) {
			t.Errorf("negative attempts: %v", err)
		}
	})
}

func TestNodeGate(t *testing.T) {
	g, err := capacity.NewNodeGate(3, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	var st capacity.AcceptStatus
	var seq uint64
	g, st, seq, _ = g.Accept("a", 3)
	if st != capacity.Accepted || seq != 1 {
		t.Fatalf("accept a: %v %d", st, seq)
	}
	if _, st, _, _ = g.Accept("x", 2); st != capacity.AcceptEpochMismatch {
		t.Fatalf("old epoch: %v", st)
	}
	if _, st, _, _ = g.Accept("a", 3); st != capacity.AcceptDuplicate {
		t.Fatalf("duplicate: %v", st)
	}
	g, _, _, _ = g.Accept("b", 3)
	full, st, _, _ := g.Accept("c", 3)
	if st != capacity.AcceptFull || full.HardLimitRefusals() != 1 {
		t.Fatalf("hard limit: %v", st)
	}
	g, hb := g.Snapshot(capacity.Usage{})
	if hb.Seq != 3 || hb.Running != 2 || hb.Epoch != 3 {
		t.Fatalf("heartbeat %+v: counts jobs waiting for their ACK, seq above theirs", hb)
	}
	g, started, _ := g.Commit("a", capacity.AckOK)
	g, notStarted, _ := g.Commit("b", capacity.AckExpired)
	if !started || notStarted || g.Running() != 1 || g.Started() != 1 {
		t.Fatalf("fence: started=%v %v running=%d", started, notStarted, g.Running())
	}
	if _, err := g.Finish("b"); !errors.Is(err, capacity.ErrUnknownJob) {
		t.Fatalf("finish of an aborted job: %v", err)
	}
	if _, err := g.Restart(3); !errors.Is(err, capacity.ErrEpochBackwards) {
		t.Fatalf("restart into the same epoch: %v", err)
	}
	g, _ = g.Restart(4)
	if g.Running() != 0 || g.Epoch() != 4 {
		t.Fatalf("restart kept jobs")
	}
	if _, err := capacity.NewNodeGate(1, 0, true); !errors.Is(err, capacity.ErrInvalidInput) {
		t.Fatalf("max 0: %v", err)
	}
	open, _ := capacity.NewNodeGate(1, 1, false)
	open, _, s1, _ := open.Accept("a", 1)
	open, _, s2, _ := open.Accept("b", 1)
	open, _, _ = open.Commit("a", capacity.AckOK)
	open, _, _ = open.Commit("b", capacity.AckLate)
	if open.Oversold() != 1 || open.PeakStarted() != 2 || s2 <= s1 {
		t.Fatalf("without the hard limit the overshoot is counted: oversold=%d peak=%d", open.Oversold(), open.PeakStarted())
	}
}

// fixedClock is a clock stopped at t.
func fixedClock(t time.Time) clock.PassiveClock { return fake.NewClock(t) }

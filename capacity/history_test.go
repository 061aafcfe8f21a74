package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/fake/sim"
	"pgregory.net/rapid"
)

// TestCheckLinearizableTable runs the checker on hand-made histories of one
// node with M = 1 and nothing running: a history passes exactly when some
// order consistent with real time explains every answer.
func TestCheckLinearizableTable(t *testing.T) {
	t0 := time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)
	lease := t0.Add(capacity.DefaultTTL)
	hb := capacity.HistoryOp{Kind: capacity.OpHeartbeat, Node: "n", Now: t0, Call: 1, Return: 2,
		Heartbeat: capacity.Heartbeat{Epoch: 1, Seq: 1}, HeartbeatStatus: capacity.HeartbeatApplied}
	late, during := hb, hb
	late.Call, late.Return = 5, 6
	during.Call, during.Return = 4, 5
	reserve := func(client int, rid string, call, ret int64, st capacity.ReserveStatus) capacity.HistoryOp {
		res := capacity.ReserveResult{Status: st, Epoch: 1, Load: 1}
		switch st {
		case capacity.ReserveOK, capacity.ReserveDuplicate:
			res.Expiry = lease
		case capacity.ReserveFull:
			res.EarliestExpiry = lease
		}
		return capacity.HistoryOp{Client: client, Kind: capacity.OpReserve, Node: "n", Now: t0, Call: call, Return: ret,
			Reservation: capacity.Reservation{Node: "n", RID: rid, Max: 1}, Reserved: res}
	}
	release := func(client int, rid string, call, ret int64, ok bool) capacity.HistoryOp {
		return capacity.HistoryOp{Client: client, Kind: capacity.OpRelease, Node: "n", Now: t0, Call: call, Return: ret, RID: rid, Released: ok}
	}
	cases := []struct {
		name    string
		history []capacity.HistoryOp
		ok      bool
	}{
		{"sequential: a granted, b full", []capacity.HistoryOp{hb, reserve(1, "a", 3, 4, capacity.ReserveOK), reserve(2, "b", 5, 6, capacity.ReserveFull)}, true},
		{"overlapping: one granted, one full", []capacity.HistoryOp{hb, reserve(1, "a", 3, 6, capacity.ReserveFull), reserve(2, "b", 4, 5, capacity.ReserveOK)}, true},
		{"overlapping: both granted the one slot", []capacity.HistoryOp{hb, reserve(1, "a", 3, 6, capacity.ReserveOK), reserve(2, "b", 4, 5, capacity.ReserveOK)}, false},
		{"full although the slot was free in real time", []capacity.HistoryOp{hb, reserve(1, "a", 3, 4, capacity.ReserveFull)}, false},
		{"release overlapping the reserve may find nothing", []capacity.HistoryOp{hb, reserve(1, "a", 3, 6, capacity.ReserveOK), release(2, "a", 4, 5, false)}, true},
		{"release after the reserve returned must find the lease", []capacity.HistoryOp{hb, reserve(1, "a", 3, 4, capacity.ReserveOK), release(2, "a", 5, 6, false)}, false},
		{"released slot granted again", []capacity.HistoryOp{hb, reserve(1, "a", 3, 4, capacity.ReserveOK), release(1, "a", 5, 6, true), reserve(2, "b", 7, 8, capacity.ReserveOK)}, true},
		{"a retried rid is a duplicate, not a second slot", []capacity.HistoryOp{hb, reserve(1, "a", 3, 5, capacity.ReserveOK), reserve(2, "a", 4, 6, capacity.ReserveDuplicate)}, true},
		{"grant before the heartbeat that makes the node known", []capacity.HistoryOp{reserve(1, "a", 3, 4, capacity.ReserveOK), late}, false},
		{"grant overlapping that heartbeat", []capacity.HistoryOp{reserve(1, "a", 3, 6, capacity.ReserveOK), during}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := capacity.CheckLinearizable(tc.history, capacity.Options{})
			if tc.ok && err != nil {
				t.Fatalf("linearizable history rejected: %v", err)
			}
			if !tc.ok && !errors.Is(err, capacity.ErrNotLinearizable) {
				t.Fatalf("err = %v, want ErrNotLinearizable", err)
			}
		})
	}
	// Bad input names the field.
	bad := hb
	bad.Return = bad.Call
	if err := capacity.CheckLinearizable([]capacity.HistoryOp{bad}, capacity.Options{}); !errors.Is(err, capacity.ErrInvalidInput) || !strings.Contains(err.Error(), "history[0].call") {
		t.Errorf("Call == Return: %v", err)
	}
	long := make([]capacity.HistoryOp, 17)
	for i := range long {
		long[i] = reserve(1, fmt.Sprint(i), int64(2*i+3), int64(2*i+4), capacity.ReserveFull)
	}
	if err := capacity.CheckLinearizable(long, capacity.Options{}); !errors.Is(err, capacity.ErrInvalidInput) || !strings.Contains(err.Error(), "17 operations") {
		t.Errorf("17 ops on one node: %v", err)
	}
}

// seedProperty draws one seed per rapid check and derives the run from it;
// seeds that already passed are skipped and not counted (sim.SeedRuns).
func seedProperty(prop func(t *rapid.T, seed uint64)) func(*rapid.T) {
	return sim.SeedRuns(func(t *rapid.T) uint64 { return rapid.Uint64().Draw(t, "seed") }, prop)
}

// TestMemoryStoreLinearizable is the linearizability property on MemoryStore, under -race in CI:
// clients race Reserve, Release, Ack and Heartbeat on two nodes, and every
// recorded history must be linearizable against the ledger.
func TestMemoryStoreLinearizable(t *testing.T) {
	rapid.Check(t, seedProperty(func(t *rapid.T, seed uint64) {
		h, err := sim.RunCapacityRace(context.Background(), sim.CapacityRaceConfig{Seed: seed}, memFactory)
		if err != nil {
			t.Fatal(err)
		}
		if err := capacity.CheckLinearizable(h, capacity.Options{}); err != nil {
			t.Fatal(err)
		}
	}))
}

// TestRaceReservesNeverExceedFree is the other half of the linearizability property: racers on one
// node get exactly M − running leases, never more.
func TestRaceReservesNeverExceedFree(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC) }
	for _, tc := range []struct{ max, running int }{{1, 0}, {4, 0}, {4, 3}, {4, 4}, {16, 5}} {
		t.Run(fmt.Sprintf("M=%d running=%d", tc.max, tc.running), func(t *testing.T) {
			for range 20 {
				s, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Clock: fake.ClockFunc(clock)})
				if err != nil {
					t.Fatal(err)
				}
				got, err := sim.RaceReserves(context.Background(), s, "n", 24, tc.max, tc.running)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.max-tc.running {
					t.Fatalf("%d racers got %d leases, want M − running = %d", 24, got, tc.max-tc.running)
				}
			}
		})
	}
}

// TestLinearizabilityCatchesBrokenStore points the same race and checker at a
// deliberately broken store, whose Reserve decides on a copy of the node's
// state read under the lock and writes its result back under the lock later
// (a lost update, like any check-then-act without one atomic step): racing
// reserves then both see room. The checker must reject some history, and
// the racers must be seen to oversell.
func TestLinearizabilityCatchesBrokenStore(t *testing.T) {
	ctx := context.Background()
	broken := func(clock func() time.Time, o capacity.Options) (capacity.SlotStore, error) {
		return &lostUpdateStore{clock: clock, opts: o, nodes: map[string]capacity.NodeLedger{}}, nil
	}
	var report error
	for seed := uint64(0); seed < 500 && report == nil; seed++ {
		h, err := sim.RunCapacityRace(ctx, sim.CapacityRaceConfig{Seed: seed, Clients: 6}, broken)
		if err != nil {
			t.Fatal(err)
		}
		report = capacity.CheckLinearizable(h, capacity.Options{})
	}
	if !errors.Is(report, capacity.ErrNotLinearizable) {
		t.Fatalf("500 races against a lost-update store all passed the checker (last: %v)", report)
	}
	t.Logf("caught, as it must be:\n%v", report)

	oversold := false
	for range 200 {
		s, _ := broken(func() time.Time { return time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC) }, capacity.Options{})
		got, err := sim.RaceReserves(ctx, s, "n", 8, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got > 2 {
			oversold = true
			break
		}
	}
	if !oversold {
		t.Fatal("200 races of 8 reserves on a lost-update store never granted more than M = 2")
	}
}

// lostUpdateStore is the broken store of TestLinearizabilityCatchesBrokenStore.
type lostUpdateStore struct {
	mu    sync.Mutex
	clock func() time.Time
	opts  capacity.Options
	nodes map[string]capacity.NodeLedger
}

func (s *lostUpdateStore) ledger(node string) capacity.NodeLedger {
	l, ok := s.nodes[node]
	if !ok {
		l, _ = capacity.NewNodeLedger(s.opts)
	}
	return l
}

func (s *lostUpdateStore) Reserve(_ context.Context, r capacity.Reservation) (capacity.ReserveResult, error) {
	s.mu.Lock()
	l := s.ledger(r.Node)
	s.mu.Unlock()
	next, res, err := l.Reserve(s.clock(), r)
	runtime.Gosched() // widen the window between the check and the write
	s.mu.Lock()
	s.nodes[r.Node] = next
	s.mu.Unlock()
	return res, err
}

func (s *lostUpdateStore) ReserveBatch(context.Context, []capacity.Reservation, capacity.BatchMode) (capacity.BatchResult, error) {
	return capacity.BatchResult{}, errors.New("lostUpdateStore: no batches")
}

func (s *lostUpdateStore) Ack(_ context.Context, a capacity.Ack) (capacity.AckStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, st, err := s.ledger(a.Node).Ack(s.clock(), a)
	s.nodes[a.Node] = next
	return st, err
}

func (s *lostUpdateStore) Release(_ context.Context, node, rid string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, ok, err := s.ledger(node).Release(s.clock(), rid)
	s.nodes[node] = next
	return ok, err
}

func (s *lostUpdateStore) Heartbeat(_ context.Context, node string, h capacity.Heartbeat) (capacity.HeartbeatStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, st, err := s.ledger(node).Heartbeat(s.clock(), h)
	s.nodes[node] = next
	return st, err
}

func (s *lostUpdateStore) Loads(_ context.Context, nodes []string) ([]capacity.NodeLoad, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]capacity.NodeLoad, len(nodes))
	for i, n := range nodes {
		out[i] = s.ledger(n).Load(s.clock(), n)
	}
	return out, nil
}

package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/fake"
)

// frozen is a clock for tests; it moves only when told.
type frozen struct {
	mu  sync.Mutex
	now time.Time
}

func (f *frozen) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
func (f *frozen) Add(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

func newMem(t testing.TB, o capacity.Options) (*capacity.MemoryStore, *frozen) {
	t.Helper()
	clk := &frozen{now: t0}
	s, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Options: o, Clock: fake.ClockFunc(clk.Now)})
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

func TestMemoryStoreRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	s, _ := newMem(t, capacity.Options{})
	cases := []struct {
		name string
		err  error
		word string
	}{
		{"empty node", errOf(s.Reserve(ctx, capacity.Reservation{RID: "a"})), "node: Required"},
		{"brace in node", errOf(s.Reserve(ctx, capacity.Reservation{Node: "a{b", RID: "a"})), "node: Invalid value: \"a{b\": must not contain a brace"},
		{"empty rid", errOf(s.Reserve(ctx, capacity.Reservation{Node: "n"})), "rid: Required"},
		{"max below one", errOf(s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "a", Max: -1})), "max: Invalid value: -1"},
		{"negative ttl", errOf(s.Reserve(ctx, capacity.Reservation{Node: "n", RID: "a", TTL: -1})), "ttl: Invalid value"},
		{"batch item", errOf(s.ReserveBatch(ctx, []capacity.Reservation{{Node: "n", RID: "a"}, {Node: "", RID: "b"}}, capacity.Partial)), "items[1].node: Required"},
		{"batch mode", errOf(s.ReserveBatch(ctx, nil, "Some")), "mode: Unsupported value"},
		{"ack empty node", errOf(s.Ack(ctx, capacity.Ack{RID: "a"})), "node: Required"},
		{"release empty rid", errOf(s.Release(ctx, "n", "")), "rid: Required"},
		{"heartbeat empty node", errOf(s.Heartbeat(ctx, "", capacity.Heartbeat{})), "node: Required"},
		{"loads bad node", errOf(s.Loads(ctx, []string{"ok", ""})), "node: Required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, capacity.ErrInvalidInput) {
				t.Fatalf("err = %v, want ErrInvalidInput", tc.err)
			}
			if !strings.Contains(tc.err.Error(), tc.word) {
				t.Errorf("error %q does not name %q", tc.err, tc.word)
			}
		})
	}
	if _, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Shards: -1}); !errors.Is(err, capacity.ErrInvalidOptions) {
		t.Errorf("a store with -1 shards: err = %v", err)
	}
	if _, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{}); err != nil {
		t.Errorf("the zero options (wall clock): err = %v", err)
	}
	big := make([]capacity.Reservation, capacity.DefaultMaxBatch+1)
	if _, err := s.ReserveBatch(ctx, big, capacity.Partial); !errors.Is(err, capacity.ErrInvalidInput) {
		t.Errorf("an oversized batch: err = %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Reserve(cctx, capacity.Reservation{Node: "n", RID: "a"}); !errors.Is(err, capacity.ErrStoreUnavailable) {
		t.Errorf("a cancelled context: err = %v, want ErrStoreUnavailable", err)
	}
	_, err := s.Heartbeat(ctx, "n", capacity.Heartbeat{Epoch: 1, Seq: 5})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Heartbeat(ctx, "n", capacity.Heartbeat{Epoch: 1, Seq: 3})
	if !errors.Is(err, capacity.ErrSeqBackwards) || st != capacity.HeartbeatStale || !strings.Contains(err.Error(), "Seq 3") {
		t.Errorf("backwards seq: %v %v", st, err)
	}
}

func TestMemoryStoreBatch(t *testing.T) {
	ctx := context.Background()
	s, _ := newMem(t, capacity.Options{})
	for _, n := range []string{"a", "b"} {
		if _, err := s.Heartbeat(ctx, n, capacity.Heartbeat{Epoch: 1, Seq: 1, Running: 2}); err != nil {
			t.Fatal(err)
		}
	}
	items := []capacity.Reservation{
		{Node: "a", RID: "1", Max: 4}, {Node: "a", RID: "2", Max: 4}, {Node: "a", RID: "3", Max: 4},
		{Node: "b", RID: "4", Max: 4},
	}
	res, err := s.ReserveBatch(ctx, items, capacity.AllOrNothing)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range res.Items {
		got = append(got, it.Status.String())
	}
	if diff := cmp.Diff([]string{"ok", "ok", "full", "ok"}, got); diff != "" || res.Committed {
		t.Fatalf("all-or-nothing (-want +got):\n%s committed=%v", diff, res.Committed)
	}
	loads, _ := s.Loads(ctx, []string{"a", "b"})
	if loads[0].Pending != 0 || loads[1].Pending != 0 {
		t.Fatalf("a refused all-or-nothing batch left leases: %+v", loads)
	}
	res, err = s.ReserveBatch(ctx, items, capacity.Partial)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Committed || res.Granted() != 3 {
		t.Fatalf("partial batch: %+v", res)
	}
	loads, _ = s.Loads(ctx, []string{"a", "b"})
	if loads[0].Effective(capacity.Sum) != 4 || loads[1].Effective(capacity.Sum) != 3 {
		t.Fatalf("loads after partial batch: %+v", loads)
	}
}

// TestMemoryStoreRaceNeverOversells is the race stress: 64 goroutines, 8
// nodes with M = 4, a frozen clock; per node an atomic count of held leases
// never exceeds M - running.
func TestMemoryStoreRaceNeverOversells(t *testing.T) {
	ctx := context.Background()
	s, _ := newMem(t, capacity.Options{})
	const nodes, m = 8, 4
	var held [nodes]atomic.Int32
	running := [nodes]int{0, 1, 2, 3, 0, 1, 2, 3}
	for i := range nodes {
		if _, err := s.Heartbeat(ctx, fmt.Sprint("n", i), capacity.Heartbeat{Epoch: 1, Seq: 1, Running: running[i]}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var violations, grants atomic.Int64
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				n := (g + i) % nodes
				rid := fmt.Sprintf("g%d-%d", g, i)
				r, err := s.Reserve(ctx, capacity.Reservation{Node: fmt.Sprint("n", n), RID: rid, Max: m})
				if err != nil {
					t.Error(err)
					return
				}
				if r.Status != capacity.ReserveOK {
					continue
				}
				grants.Add(1)
				if h := held[n].Add(1); int(h) > m-running[n] {
					violations.Add(1)
				}
				held[n].Add(-1)
				if ok, err := s.Release(ctx, fmt.Sprint("n", n), rid); err != nil || !ok {
					t.Errorf("release %s: %v %v", rid, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if violations.Load() != 0 {
		t.Fatalf("%d times a node held more than M - running leases", violations.Load())
	}
	if grants.Load() == 0 {
		t.Fatal("no reservation was ever granted: the test proves nothing")
	}
}

func BenchmarkMemoryReserveRelease(b *testing.B) {
	ctx := context.Background()
	clk := &frozen{now: t0}
	s, err := capacity.NewMemoryStore(capacity.MemoryStoreOptions{Clock: fake.ClockFunc(clk.Now)})
	if err != nil {
		b.Fatal(err)
	}
	const nodes = 1000
	ids := make([]string, nodes)
	for i := range ids {
		ids[i] = fmt.Sprintf("node-%04d", i)
		if _, err := s.Heartbeat(ctx, ids[i], capacity.Heartbeat{Epoch: 1, Seq: 1}); err != nil {
			b.Fatal(err)
		}
	}
	rids := make([]string, 4096)
	for i := range rids {
		rids[i] = fmt.Sprintf("job-%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		node, rid := ids[i%nodes], rids[i%len(rids)]
		r, err := s.Reserve(ctx, capacity.Reservation{Node: node, RID: rid})
		if err != nil || r.Status != capacity.ReserveOK {
			b.Fatalf("reserve: %v %v", r, err)
		}
		if ok, err := s.Release(ctx, node, rid); err != nil || !ok {
			b.Fatalf("release: %v %v", ok, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

// TestMemoryStoreOneLimit: the node's M lives in its heartbeat only (making
// reserve enforce the caller's Max again makes it fail).
func TestMemoryStoreOneLimit(t *testing.T) {
	newStore := func(context.Context) (capacity.SlotStore, error) {
		s, _ := newMem(t, capacity.Options{MaxJobs: 3})
		return s, nil
	}
	for _, v := range fake.CheckOneLimit(context.Background(), newStore, "n", 3) {
		t.Error(v)
	}
}

// TestValidationAllocatesNothingOnValidInput: Decide's check (Validate) and a
// store's batch check (ValidateBatch) build a field path, and look inside an
// error, only for a bad item, so valid input allocates nothing (ValidateBatch
// had built each item's path, and an errors.As target on the heap, per item).
// Breaking it: build any path eagerly again (field.NewPath outside an error
// branch), or call errors.As on a nil error.
func TestValidationAllocatesNothingOnValidInput(t *testing.T) {
	items := []capacity.Reservation{{Node: "n1", RID: "a", Max: 2, TTL: time.Second}, {Node: "n2", RID: "b", Max: 2, TTL: time.Second}}
	in := capacity.Input{Now: t0, Nodes: []capacity.NodeLoad{{ID: "n1"}}}
	allocs := testing.AllocsPerRun(200, func() {
		if err := capacity.Validate(in, capacity.Options{}); err != nil {
			t.Fatal(err)
		}
		if err := capacity.ValidateBatch(items, capacity.AllOrNothing, capacity.Options{}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Validate + ValidateBatch allocate %v times per call on valid input, want 0", allocs)
	}
}

package lock_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/plancore/plancore/lock"
)

// BenchmarkPlanAcquire measures one plan on a parsed (decoded inside PlanAcquire)
// record: the hot path of every Bind. Target ≤ 1 µs/op and 0 allocs/op.
func BenchmarkPlanAcquire(b *testing.B) {
	exists := lock.Holder{State: lock.HolderExists}
	cases := []struct {
		name string
		obs  lock.Observation
	}{
		{"acquire", lock.Observation{Key: node1, Version: "100", EpochHigh: 6}},
		{"held-hami", lock.Observation{Key: node1, Present: true, Raw: "2026-06-14T09:58:00Z,default,p0", Version: "200"}},
		{"held-sidecar", lock.Observation{Key: node1, Present: true, Raw: "2026-06-14T09:58:00Z,default,p0", Sidecar: "2026-06-14T09:58:00Z,default,p0,u0,6", Version: "200"}},
		{"steal-extended", lock.Observation{Key: node1, Present: true, Raw: "2026-06-14T09:50:00Z,default,p0,u0,6", Version: "200"}},
		{"reentrant", lock.Observation{Key: node1, Present: true, Raw: "2026-06-14T09:58:00Z,default,a,ua,6", Version: "200"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var d lock.Plan
			for b.Loop() {
				d, _ = decide(c.obs, podA, t0, lock.Options{}, exists)
			}
			if d.Kind == "" {
				b.Fatal("no decision")
			}
		})
	}
}

// BenchmarkPlanRelease measures the owner check.
func BenchmarkPlanRelease(b *testing.B) {
	obs := lock.Observation{Key: node1, Present: true, Raw: "2026-06-14T09:58:00Z,default,a", Version: "200"}
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := planRelease(obs, podA, lock.Options{}); d.Kind != lock.Release {
			b.Fatal(d)
		}
	}
}

// BenchmarkMemoryAcquireRelease measures a full Locker acquire + release
// round (read, decide, CAS, read, decide, CAD) on the in-memory store from
// parallel goroutines: each on its own node (nodes never contend), and all on
// one node (one wins, the others see contention and back off at once).
func BenchmarkMemoryAcquireRelease(b *testing.B) {
	ctx := context.Background()
	b.Run("own-node", func(b *testing.B) {
		l := &lock.Locker{Store: lock.NewMemoryStore()}
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := next.Add(1)
			key := lock.NodeKey(fmt.Sprintf("n%d", i))
			req := lock.Requester{Namespace: "default", Name: fmt.Sprintf("p%d", i), UID: fmt.Sprintf("u%d", i)}
			for pb.Next() {
				if _, err := l.Acquire(ctx, key, req); err != nil {
					b.Error(err)
					return
				}
				if _, err := l.Release(ctx, key, req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("one-node", func(b *testing.B) {
		l := &lock.Locker{Store: lock.NewMemoryStore(), Holder: alive}
		var next, grants atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := next.Add(1)
			req := lock.Requester{Namespace: "default", Name: fmt.Sprintf("p%d", i), UID: fmt.Sprintf("u%d", i)}
			for pb.Next() {
				if _, err := l.Acquire(ctx, node1, req); err == nil {
					grants.Add(1)
					if _, err := l.Release(ctx, node1, req); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
		b.ReportMetric(float64(grants.Load())/float64(b.N), "grants/op")
	})
}

// TestPlannersAllocateNothingOnValidInput: validation builds a field path
// only when a check fails, so planning on valid input allocates nothing (the
// one-contract rework had made it 4 allocations per call). Breaking it: build
// any path eagerly again (field.NewPath outside an error branch).
func TestPlannersAllocateNothingOnValidInput(t *testing.T) {
	acquire := lock.Observation{Key: node1, Version: "100", EpochHigh: 6}
	held := lock.Observation{Key: node1, Present: true, Raw: "2026-06-14T09:58:00Z,default,a", Version: "200"}
	exists := lock.Holder{State: lock.HolderExists}
	allocs := testing.AllocsPerRun(200, func() {
		if d, err := decide(acquire, podA, t0, lock.HAMi(), exists); err != nil || d.Kind != lock.Acquire {
			t.Fatal(d, err)
		}
		if d, err := planRelease(held, podA, lock.HAMi()); err != nil || d.Kind != lock.Release {
			t.Fatal(d, err)
		}
	})
	if allocs != 0 {
		t.Errorf("PlanAcquire + PlanRelease allocate %v times per call on valid input, want 0", allocs)
	}
}

package expectations

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// The benchmarks: Satisfied over 10,000 items of one group against a
// view of 10,000 pods, and the baseline it is measured against, one bare pass
// over the same items looking each up in the same index.

const benchN = 10000

var (
	benchOwner = Owner{Namespace: "ns", Name: "rc", UID: "uid-1"}
	benchT0    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

func benchNames(prefix string) []string {
	names := make([]string, benchN)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return names
}

// benchState records a create for each name, and checks once so the group's
// order is sorted (the sort is measured by BenchmarkSatisfiedFirstAfterRecord10k).
func benchState(b *testing.B, names []string, sorted bool) *State {
	s := &State{}
	for _, n := range names {
		if _, err := s.Record(benchT0, Record{Owner: benchOwner, Group: "g", Action: Create, Pod: n}); err != nil {
			b.Fatal(err)
		}
	}
	if sorted {
		s.Check(benchT0, benchOwner, "g", nil) // read-only: does not sort
		s.owners[string(benchOwner.UID)].groups["g"].order = s.sortGroup(s.owners[string(benchOwner.UID)].groups["g"])
	}
	return s
}

// benchView holds 10,000 pods: the first observed of them named like the
// items, the rest named otherwise.
func benchView(names []string, observed int) *View {
	v := &View{}
	for i, n := range names {
		if i >= observed {
			n = "other-" + n
		}
		v.Add("ns", ViewPod{Name: n, UID: "u"})
	}
	return v
}

// fresh clones base for one iteration and collects the garbage the clone made,
// so that the timed check pays for its own allocations only, not for the
// setup's.
func fresh(base *State) *State {
	s := base.Clone()
	runtime.GC()
	return s
}

func benchSatisfied(b *testing.B, observed int, sorted bool) {
	names := benchNames("w")
	base := benchState(b, names, sorted)
	view := benchView(names, observed)
	now := benchT0.Add(time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := fresh(base)
		b.StartTimer()
		r, err := s.Satisfied(now, benchOwner, "g", view)
		if err != nil || len(r.Observed) != observed {
			b.Fatalf("observed %d, want %d (%v)", len(r.Observed), observed, err)
		}
	}
}

// BenchmarkSatisfiedInto10k is BenchmarkSatisfied10k with the result's lists
// reused from one check to the next, as a controller checking many groups can.
func BenchmarkSatisfiedInto10k(b *testing.B) {
	names := benchNames("w")
	base := benchState(b, names, true)
	view := benchView(names, benchN)
	now := benchT0.Add(time.Second)
	var r Verdict
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := fresh(base)
		b.StartTimer()
		if err := s.SatisfiedInto(&r, now, benchOwner, "g", view); err != nil || len(r.Observed) != benchN {
			b.Fatalf("observed %d (%v)", len(r.Observed), err)
		}
	}
}

// BenchmarkSatisfied10k is the main target: every item observed (and removed).
func BenchmarkSatisfied10k(b *testing.B) { benchSatisfied(b, benchN, true) }

// BenchmarkSatisfied10kNoneObserved: no item's pod is in the view.
func BenchmarkSatisfied10kNoneObserved(b *testing.B) { benchSatisfied(b, 0, true) }

// BenchmarkSatisfied10kHalfObserved: half the items' pods are in the view.
func BenchmarkSatisfied10kHalfObserved(b *testing.B) { benchSatisfied(b, benchN/2, true) }

// BenchmarkSatisfiedFirstAfterRecord10k is the first check after a batch of
// 10,000 records, which sorts the group once.
func BenchmarkSatisfiedFirstAfterRecord10k(b *testing.B) { benchSatisfied(b, benchN, false) }

// BenchmarkCheck10k is the read-only Check of a planner, all observed.
func BenchmarkCheck10k(b *testing.B) {
	names := benchNames("w")
	s := benchState(b, names, true)
	view := benchView(names, benchN)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if r, _ := s.Check(benchT0, benchOwner, "g", view); len(r.Observed) != benchN {
			b.Fatal(len(r.Observed))
		}
	}
}

// baselineScan is the bare pass both baselines time: each item's pod name
// looked up once in the view's name index.
func baselineScan(items []*item, view *View) int {
	found := 0
	index := view.spaces["ns"].byName
	for _, it := range items {
		if _, ok := index[it.pod]; ok {
			found++
		}
	}
	return found
}

// BenchmarkBaselineScan10k is one bare pass over the same 10,000 items,
// reading each item's pod name from the view's name index. Like the Satisfied
// benchmarks, each pass runs on a fresh clone of the items, so both are timed
// with the same (cold) memory.
func BenchmarkBaselineScan10k(b *testing.B) {
	names := benchNames("w")
	base := benchState(b, names, true)
	view := benchView(names, benchN)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := fresh(base)
		items := s.owners[string(benchOwner.UID)].groups["g"].order
		b.StartTimer()
		if found := baselineScan(items, view); found != benchN {
			b.Fatal(found)
		}
	}
}

// BenchmarkBaselineScanWarm10k is the same pass repeated over the same items,
// whose memory stays in the CPU caches.
func BenchmarkBaselineScanWarm10k(b *testing.B) {
	names := benchNames("w")
	s := benchState(b, names, true)
	view := benchView(names, benchN)
	items := s.owners[string(benchOwner.UID)].groups["g"].order
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if found := baselineScan(items, view); found != benchN {
			b.Fatal(found)
		}
	}
}

// BenchmarkNewView10k builds the name index of a 10,000-pod snapshot, which a
// caller does once per snapshot and shares with the planner.
func BenchmarkNewView10k(b *testing.B) {
	names := benchNames("w")
	b.ReportAllocs()
	for range b.N {
		benchView(names, benchN)
	}
}

// BenchmarkRecordResolve is one record and its resolution in a group of 10,000.
func BenchmarkRecordResolve(b *testing.B) {
	s := benchState(b, benchNames("w"), true)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ref, _ := s.Record(benchT0, Record{Owner: benchOwner, Group: "g", Action: Create, Token: "t"})
		if _, err := s.Resolve(benchT0, ref, fmt.Sprint("x-", i%benchN), ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSatisfiedWarm10kNoneObserved checks one group of 10,000 pending
// items again and again: nothing settles, so no clone is needed and the
// items stay in the CPU caches, as in BenchmarkBaselineScanWarm10k.
func BenchmarkSatisfiedWarm10kNoneObserved(b *testing.B) {
	names := benchNames("w")
	s := benchState(b, names, true)
	view := benchView(names, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if r, _ := s.Satisfied(benchT0, benchOwner, "g", view); len(r.Pending) != benchN {
			b.Fatal(len(r.Pending))
		}
	}
}

// BenchmarkSatisfiedIntoWarm10kNoneObserved is the same with the result's
// lists reused.
func BenchmarkSatisfiedIntoWarm10kNoneObserved(b *testing.B) {
	names := benchNames("w")
	s := benchState(b, names, true)
	view := benchView(names, 0)
	var r Verdict
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := s.SatisfiedInto(&r, benchT0, benchOwner, "g", view); err != nil || len(r.Pending) != benchN {
			b.Fatal(len(r.Pending))
		}
	}
}

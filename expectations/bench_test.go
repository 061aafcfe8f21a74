package expectations

import (
	"fmt"
	"testing"
	"time"
)

// The benchmarks of §5: Satisfied over 10,000 items of one group against a
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

func benchSatisfied(b *testing.B, observed int, sorted bool) {
	names := benchNames("w")
	base := benchState(b, names, sorted)
	view := benchView(names, observed)
	now := benchT0.Add(time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := base.Clone()
		b.StartTimer()
		r, err := s.Satisfied(now, benchOwner, "g", view)
		if err != nil || len(r.Observed) != observed {
			b.Fatalf("observed %d, want %d (%v)", len(r.Observed), observed, err)
		}
	}
}

// BenchmarkSatisfied10k is the §5 target: every item observed (and removed).
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

// BenchmarkBaselineScan10k is one bare pass over the same 10,000 items,
// reading each item's pod from the view's index.
func BenchmarkBaselineScan10k(b *testing.B) {
	names := benchNames("w")
	s := benchState(b, names, true)
	view := benchView(names, benchN)
	items := s.owners[string(benchOwner.UID)].groups["g"].order
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		found := 0
		for _, it := range items {
			if _, ok := view.pods[podKey{"ns", it.pod}]; ok {
				found++
			}
		}
		if found != benchN {
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

package capacity_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/plancore/plancore/capacity"
	"github.com/plancore/plancore/capacity/capacitytest"
	"pgregory.net/rapid"
)

// TestPropertyDecide checks that every plan keeps capacity.CheckPlan's
// invariants (every node accounted for once, the breakdown, no full or hot
// candidate, the ranking, the outcome), that ties are deterministic (the input
// order does not matter), and that the input is left unchanged.
// Breaks that make it fail: a candidate allowed at Effective == Max
// (excludeReasons), and ranking by Effective alone with RankUtilisation
// (sortCandidates; found after about 300 checks, so within CI's 1,000).
func TestPropertyDecide(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := capacitytest.Input().Draw(t, "input")
		opts := capacitytest.Options().Draw(t, "options")
		nodes := in.Nodes
		before := slices.Clone(nodes)
		sel, err := capacity.Decide(in, opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, nodes, cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("Decide changed its input:\n%s", diff)
		}
		if err := capacity.CheckPlan(in, opts, sel); err != nil {
			t.Fatal(err)
		}
		// Deterministic: the reversed input ranks the same candidates the same
		// way (ids are unique among candidates).
		rev := slices.Clone(nodes)
		slices.Reverse(rev)
		in.Nodes = dedupe(rev, nodes)
		sel2, _ := capacity.Decide(in, opts)
		if diff := cmp.Diff(sel.Candidates, sel2.Candidates, cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("ranking depends on input order:\n%s", diff)
		}
	})
}

// dedupe keeps, for each id of rev, the snapshot the original order used (the
// first), so that reordering does not change which duplicate is considered.
func dedupe(rev, orig []capacity.NodeLoad) []capacity.NodeLoad {
	first := map[string]capacity.NodeLoad{}
	for _, n := range orig {
		if _, ok := first[n.ID]; !ok {
			first[n.ID] = n
		}
	}
	var out []capacity.NodeLoad
	done := map[string]bool{}
	for _, n := range rev {
		if !done[n.ID] {
			out = append(out, first[n.ID])
			done[n.ID] = true
		}
	}
	return out
}

// FuzzDecide feeds arbitrary snapshots to Decide: it must never panic, and
// every plan must keep CheckPlan's invariants.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{1, 4, 2, 0, 0, 50, 50}, uint8(0))
	f.Add([]byte{0, 0, 0, 0, 0, 255, 255, 3, 9, 9, 9, 9, 91, 10}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		var nodes []capacity.NodeLoad
		for i := 0; i+7 <= len(data); i += 7 {
			d := data[i : i+7]
			nodes = append(nodes, capacity.NodeLoad{ID: string(rune('a' + d[0]%8)), Max: int(int8(d[1])), Running: int(d[2]),
				Pending: int(d[3]), AckedUncounted: int(d[4]), HeartbeatAt: t0.Add(-time.Duration(d[2]) * time.Second),
				Usage: capacity.Usage{CPU: float64(int8(d[5])), Memory: float64(d[6]), GPU: float64(d[5]) / 2, HasGPU: d[6]%2 == 0}})
		}
		in := capacity.Input{Nodes: nodes, Now: t0}
		o := capacity.Options{Accounting: []capacity.Accounting{capacity.Sum, capacity.SeedMax}[mode%2], RankBy: []capacity.RankBy{capacity.RankUtilisation, capacity.RankJobs}[mode/2%2]}
		sel, err := capacity.Decide(in, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := capacity.CheckPlan(in, o, sel); err != nil {
			t.Fatal(err)
		}
	})
}

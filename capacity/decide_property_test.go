package capacity_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/plancore/plancore/capacity"
	"pgregory.net/rapid"
)

func genUsage(t *rapid.T, label string) float64 {
	switch rapid.IntRange(0, 9).Draw(t, label+" kind") {
	case 0:
		return math.NaN()
	case 1:
		return -1
	case 2:
		return 90
	default:
		return float64(rapid.IntRange(0, 100).Draw(t, label))
	}
}

func genNodes(t *rapid.T) []capacity.NodeLoad {
	n := rapid.IntRange(0, 12).Draw(t, "nodes")
	out := make([]capacity.NodeLoad, n)
	for i := range out {
		id := rapid.SampledFrom([]string{"a", "b", "c", "d", "e", "f", "g", "h", "", "x{y"}).Draw(t, "id")
		hb := time.Time{}
		if rapid.Bool().Draw(t, "has heartbeat") {
			hb = t0.Add(-time.Duration(rapid.IntRange(0, 90).Draw(t, "age s")) * time.Second)
		}
		out[i] = capacity.NodeLoad{
			ID: id, Max: rapid.IntRange(-1, 6).Draw(t, "max"),
			Running: rapid.IntRange(0, 6).Draw(t, "running"), Pending: rapid.IntRange(0, 4).Draw(t, "pending"),
			AckedUncounted: rapid.IntRange(0, 3).Draw(t, "acked"), HeartbeatAt: hb,
			Usage: capacity.Usage{CPU: genUsage(t, "cpu"), Memory: genUsage(t, "mem"), GPU: genUsage(t, "gpu"), HasGPU: rapid.Bool().Draw(t, "gpu?")},
		}
	}
	return out
}

// TestPropertyDecide checks that Decide never offers a node at or over M or
// above the threshold, accounts for every node exactly once, its breakdown
// sums to the exclusions, ties are deterministic (the input order does not
// matter), and the input is left unchanged.
func TestPropertyDecide(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := genNodes(t)
		opts := capacity.Options{
			Accounting: rapid.SampledFrom([]capacity.Accounting{capacity.Sum, capacity.SeedMax}).Draw(t, "accounting"),
			RankBy:     rapid.SampledFrom([]capacity.RankBy{capacity.RankUtilisation, capacity.RankJobs}).Draw(t, "rank"),
		}
		in := capacity.Input{Nodes: nodes, Now: t0, SpreadKey: rapid.SampledFrom([]string{"", "job-1", "job-2"}).Draw(t, "spread")}
		before := slices.Clone(nodes)
		sel, err := capacity.Decide(in, opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, nodes, cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("Decide changed its input:\n%s", diff)
		}
		if len(sel.Candidates)+len(sel.Excluded) != len(nodes) {
			t.Fatalf("%d candidates + %d excluded != %d nodes", len(sel.Candidates), len(sel.Excluded), len(nodes))
		}
		if sel.Breakdown.Total() != len(sel.Excluded) {
			t.Fatalf("breakdown %v does not sum to %d exclusions", sel.Breakdown, len(sel.Excluded))
		}
		seen := map[string]bool{}
		for _, c := range sel.Candidates {
			if c.Effective >= c.Max || c.Free != c.Max-c.Effective || seen[c.ID] {
				t.Fatalf("candidate %+v is full or repeated", c)
			}
			seen[c.ID] = true
			u := c.Usage
			if !(u.CPU <= 90 && u.Memory <= 90 && (!u.HasGPU || u.GPU <= 90)) {
				t.Fatalf("candidate %+v is over the threshold or of unknown usage", c)
			}
		}
		for i := 1; i < len(sel.Candidates); i++ {
			a, b := sel.Candidates[i-1], sel.Candidates[i]
			if opts.RankBy != capacity.RankJobs && a.Effective*b.Max > b.Effective*a.Max {
				t.Fatalf("%s (%d/%d) ranked before the less utilised %s (%d/%d)", a.ID, a.Effective, a.Max, b.ID, b.Effective, b.Max)
			}
			if opts.RankBy == capacity.RankJobs && a.Effective > b.Effective {
				t.Fatalf("%s ranked before the less loaded %s", a.ID, b.ID)
			}
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
// its accounting of nodes must hold.
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
		sel, err := capacity.Decide(capacity.Input{Nodes: nodes, Now: t0}, capacity.Options{Accounting: []capacity.Accounting{capacity.Sum, capacity.SeedMax}[mode%2], RankBy: []capacity.RankBy{capacity.RankUtilisation, capacity.RankJobs}[mode/2%2]})
		if err != nil {
			t.Fatal(err)
		}
		if len(sel.Candidates)+len(sel.Excluded) != len(nodes) || sel.Breakdown.Total() != len(sel.Excluded) {
			t.Fatalf("nodes unaccounted for: %v", sel)
		}
	})
}

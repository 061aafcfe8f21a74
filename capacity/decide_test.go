package capacity_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plancore/plancore/capacity"
)

func fresh(id string, max, running, pending, acked int, u capacity.Usage) capacity.NodeLoad {
	return capacity.NodeLoad{ID: id, Max: max, Running: running, Pending: pending, AckedUncounted: acked,
		HeartbeatAt: t0.Add(-time.Second), Usage: u}
}

func TestDecide(t *testing.T) {
	low := capacity.Usage{CPU: 10, Memory: 10}
	type row struct {
		name       string
		nodes      []capacity.NodeLoad
		opts       capacity.Options
		candidates []string
		excluded   map[string]capacity.ReasonCode
		breakdown  capacity.Breakdown
	}
	tests := []row{
		{name: "least utilised first, fair across M",
			nodes: []capacity.NodeLoad{
				fresh("a", 4, 2, 0, 0, low), // 2/4
				fresh("b", 8, 3, 0, 0, low), // 3/8
				fresh("c", 2, 0, 1, 0, low), // 1/2 ties a on utilisation, wins on load
			},
			candidates: []string{"b", "c", "a"}},
		{name: "seed ranking by jobs alone",
			nodes: []capacity.NodeLoad{
				fresh("a", 4, 2, 0, 0, low),
				fresh("b", 8, 3, 0, 0, low),
				fresh("c", 2, 0, 1, 0, low),
			},
			opts:       capacity.Options{RankBy: capacity.RankJobs},
			candidates: []string{"c", "a", "b"}},
		{name: "ties broken by highest usage then id",
			nodes: []capacity.NodeLoad{
				fresh("z", 4, 1, 0, 0, capacity.Usage{CPU: 50, Memory: 10}),
				fresh("y", 4, 1, 0, 0, capacity.Usage{CPU: 20, Memory: 30}),
				fresh("x", 4, 1, 0, 0, capacity.Usage{CPU: 20, Memory: 30}),
			},
			candidates: []string{"x", "y", "z"}},
		{name: "effective load sums running, pending and acked-uncounted",
			nodes: []capacity.NodeLoad{
				fresh("a", 4, 2, 1, 1, low),
				fresh("b", 4, 1, 1, 1, low),
			},
			candidates: []string{"b"},
			excluded:   map[string]capacity.ReasonCode{"a": capacity.ReasonCapacityExceeded},
			breakdown:  capacity.Breakdown{CapacityExceeded: 1}},
		{name: "seed formula max(running, pending) admits what sum refuses",
			nodes: []capacity.NodeLoad{
				fresh("a", 4, 2, 1, 1, low),
			},
			opts:       capacity.Options{Accounting: capacity.SeedMax},
			candidates: []string{"a"}},
		{name: "threshold: exactly 90 passes, above is excluded; GPU only if present",
			nodes: []capacity.NodeLoad{
				fresh("ok", 4, 0, 0, 0, capacity.Usage{CPU: 90, Memory: 90, GPU: 99}),
				fresh("cpu", 4, 0, 0, 0, capacity.Usage{CPU: 90.5, Memory: 10}),
				fresh("gpu", 4, 0, 0, 0, capacity.Usage{CPU: 10, Memory: 10, GPU: 91, HasGPU: true}),
				fresh("mem", 4, 0, 0, 0, capacity.Usage{CPU: 10, Memory: 100}),
				fresh("nan", 4, 0, 0, 0, capacity.Usage{CPU: math.NaN(), Memory: 10}),
				fresh("neg", 4, 0, 0, 0, capacity.Usage{CPU: 10, Memory: -1}),
			},
			candidates: []string{"ok"},
			excluded: map[string]capacity.ReasonCode{"cpu": capacity.ReasonCPUOverThreshold, "gpu": capacity.ReasonGPUOverThreshold,
				"mem": capacity.ReasonMemoryOverThreshold, "nan": capacity.ReasonUsageUnknown, "neg": capacity.ReasonUsageUnknown},
			breakdown: capacity.Breakdown{CPUOverThreshold: 1, GPUOverThreshold: 1, MemoryOverThreshold: 1, UsageUnknown: 2}},
		{name: "primary reason order: invalid, stale, capacity, usage",
			nodes: []capacity.NodeLoad{
				{ID: "never", Max: 4},
				{ID: "old", Max: 4, Running: 9, HeartbeatAt: t0.Add(-time.Hour), Usage: capacity.Usage{CPU: 99}},
				fresh("full", 4, 4, 0, 0, capacity.Usage{CPU: 99}),
				fresh("bad{id}", 4, 0, 0, 0, low),
				fresh("neg", -1, 0, 0, 0, low),
				fresh("full", 4, 0, 0, 0, low),
			},
			excluded: map[string]capacity.ReasonCode{"never": capacity.ReasonStaleHeartbeat, "old": capacity.ReasonStaleHeartbeat,
				"full": capacity.ReasonCapacityExceeded, "bad{id}": capacity.ReasonInvalidNode, "neg": capacity.ReasonInvalidNode},
			breakdown: capacity.Breakdown{InvalidNode: 2, StaleHeartbeat: 2, CapacityExceeded: 1, DuplicateNode: 1}},
		{name: "default M is 4, stale check can be disabled",
			nodes: []capacity.NodeLoad{
				{ID: "a", Running: 3, Usage: low},
				{ID: "b", Running: 4, Usage: low},
			},
			opts:       capacity.Options{IgnoreHeartbeatAge: true},
			candidates: []string{"a"},
			excluded:   map[string]capacity.ReasonCode{"b": capacity.ReasonCapacityExceeded},
			breakdown:  capacity.Breakdown{CapacityExceeded: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := capacity.Decide(capacity.Input{Nodes: tc.nodes, Now: t0}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range sel.Candidates {
				got = append(got, c.ID)
			}
			if diff := cmp.Diff(tc.candidates, got); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
			gotEx := map[string]capacity.ReasonCode{}
			for _, e := range sel.Excluded {
				if e.Reason.Code != capacity.ReasonDuplicateNode {
					gotEx[e.ID] = e.Reason.Code
				}
			}
			if tc.excluded == nil {
				tc.excluded = map[string]capacity.ReasonCode{}
			}
			if diff := cmp.Diff(tc.excluded, gotEx); diff != "" {
				t.Errorf("excluded (-want +got):\n%s", diff)
			}
			if tc.breakdown != (capacity.Breakdown{}) {
				if diff := cmp.Diff(tc.breakdown, sel.Breakdown); diff != "" {
					t.Errorf("breakdown (-want +got):\n%s", diff)
				}
			}
			if sel.Breakdown.Total() != len(sel.Excluded) {
				t.Errorf("breakdown total %d != %d excluded", sel.Breakdown.Total(), len(sel.Excluded))
			}
			wantOutcome := capacity.Selected
			if len(tc.candidates) == 0 {
				wantOutcome = capacity.NoCapacity
			}
			if sel.Verdict != wantOutcome {
				t.Errorf("outcome %v, want %v", sel.Verdict, wantOutcome)
			}
		})
	}
}

func TestDecideSpreadKeySpreadsTies(t *testing.T) {
	var nodes []capacity.NodeLoad
	for _, id := range []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"} {
		nodes = append(nodes, fresh(id, 4, 0, 0, 0, capacity.Usage{}))
	}
	firsts := map[string]bool{}
	for _, job := range []string{"job-1", "job-2", "job-3", "job-4", "job-5", "job-6", "job-7", "job-8"} {
		a, _ := capacity.Decide(capacity.Input{Nodes: nodes, Now: t0, SpreadKey: job}, capacity.Options{})
		b, _ := capacity.Decide(capacity.Input{Nodes: nodes, Now: t0, SpreadKey: job}, capacity.Options{})
		if a.String() != b.String() {
			t.Fatalf("selection for %s is not deterministic", job)
		}
		firsts[a.Candidates[0].ID] = true
	}
	if len(firsts) < 3 {
		t.Errorf("8 spread keys picked only %d distinct first nodes: %v", len(firsts), firsts)
	}
	plain, _ := capacity.Decide(capacity.Input{Nodes: nodes, Now: t0}, capacity.Options{})
	if plain.Candidates[0].ID != "n1" {
		t.Errorf("without a spread key the id breaks ties; got %s first", plain.Candidates[0].ID)
	}
}

func TestDecideRejectsBadOptions(t *testing.T) {
	for _, o := range []capacity.Options{
		{MaxJobs: -1}, {Threshold: -5}, {Threshold: math.NaN()}, {RankBy: "Random"}, {Accounting: "Min"}, {RetryAfter: -1},
	} {
		if _, err := capacity.Decide(capacity.Input{Now: t0}, o); !errors.Is(err, capacity.ErrInvalidOptions) {
			t.Errorf("Decide accepted %+v", o)
		}
	}
}

// TestExclusionFacts: every figure an exclusion's message states is a field
// of its Reason, and the message is rendered from those fields.
func TestExclusionFacts(t *testing.T) {
	nodes := []capacity.NodeLoad{
		fresh("full", 4, 3, 1, 0, capacity.Usage{CPU: 10, Memory: 10}),
		fresh("hot", 4, 0, 0, 0, capacity.Usage{CPU: 95.5, Memory: 10}),
		{ID: "old", Max: 4, HeartbeatAt: t0.Add(-time.Minute), Usage: capacity.Usage{CPU: 1, Memory: 1}},
		{ID: "never", Max: 4, Usage: capacity.Usage{CPU: 1, Memory: 1}},
	}
	p, err := capacity.Decide(capacity.Input{Nodes: nodes, Now: t0}, capacity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]capacity.Reason{}
	for _, e := range p.Excluded {
		got[e.ID] = e.Reason
	}
	timeout := got["old"].Facts.HeartbeatTimeout
	want := map[string]capacity.Reason{
		"full":  {Code: capacity.ReasonCapacityExceeded, Message: "effective 4 >= max 4", Facts: capacity.ReasonFacts{Observed: 4, Limit: 4}},
		"hot":   {Code: capacity.ReasonCPUOverThreshold, Message: "cpu 95.5% > 90%", Facts: capacity.ReasonFacts{Observed: 95.5, Limit: 90}},
		"old":   {Code: capacity.ReasonStaleHeartbeat, Message: "heartbeat 1m0s old > " + timeout.String(), Facts: capacity.ReasonFacts{HeartbeatAge: time.Minute, HeartbeatTimeout: timeout}},
		"never": {Code: capacity.ReasonStaleHeartbeat, Message: "no heartbeat", Facts: capacity.ReasonFacts{HeartbeatTimeout: timeout}},
	}
	if timeout <= 0 || timeout >= time.Minute {
		t.Fatalf("default heartbeat timeout %v: the rows assume one under a minute", timeout)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exclusion reasons (-want +got):\n%s", diff)
	}
}

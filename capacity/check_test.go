package capacity_test

import (
	"strings"
	"testing"
	"time"

	"github.com/plancore/plancore/capacity"
)

// TestCheckPlanCatchesBrokenPlans breaks a valid plan in one way at a time and
// checks that CheckPlan names the break.
func TestCheckPlanCatchesBrokenPlans(t *testing.T) {
	in := capacity.Input{Now: t0, Nodes: []capacity.NodeLoad{
		{ID: "a", Max: 4, Running: 1, HeartbeatAt: t0},
		{ID: "b", Max: 4, Running: 3, HeartbeatAt: t0},
		{ID: "full", Max: 2, Running: 2, HeartbeatAt: t0},
		{ID: "stale", Max: 4, HeartbeatAt: t0.Add(-time.Hour)},
	}}
	o := capacity.Options{}
	plan, err := capacity.Decide(in, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := capacity.CheckPlan(in, o, plan); err != nil {
		t.Fatalf("the valid plan fails the check: %v", err)
	}
	for _, b := range []struct {
		name, want string
		brk        func(p *capacity.Plan)
	}{
		{"the ranking reversed", `"b" (3/4) ranked before the less utilised "a" (1/4)`, func(p *capacity.Plan) {
			p.Candidates[0], p.Candidates[1] = p.Candidates[1], p.Candidates[0]
		}},
		{"a full node offered", `candidate "full" holds 2 of 2`, func(p *capacity.Plan) {
			p.Candidates = append(p.Candidates, capacity.Candidate{ID: "full", Effective: 2, Max: 2})
			p.Excluded = p.Excluded[1:]
		}},
		{"a node dropped", "2 candidates and 1 exclusions for 4 nodes", func(p *capacity.Plan) { p.Excluded = p.Excluded[1:] }},
		{"a breakdown that does not sum", "breakdown", func(p *capacity.Plan) { p.Breakdown.StaleHeartbeat++ }},
		{"NoCapacity with candidates", "outcome NoCapacity", func(p *capacity.Plan) { p.Verdict = capacity.NoCapacity }},
	} {
		t.Run(b.name, func(t *testing.T) {
			p := plan
			p.Candidates = append([]capacity.Candidate(nil), plan.Candidates...)
			p.Excluded = append([]capacity.Exclusion(nil), plan.Excluded...)
			b.brk(&p)
			if err := capacity.CheckPlan(in, o, p); err == nil || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("CheckPlan = %v, want an error containing %q", err, b.want)
			}
		})
	}
}

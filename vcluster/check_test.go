package vcluster_test

import (
	"strings"
	"testing"

	"github.com/plancore/plancore/vcluster"
)

// TestCheckPlanCatchesBrokenPlans breaks a valid plan (and the state it
// leads to) in one way at a time and checks that the checks name the break.
func TestCheckPlanCatchesBrokenPlans(t *testing.T) {
	s := mustState(t, nodesOf("c", "8c16g", 4), nodesOf("g", "gpu", 2))
	plan, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s,
		Request: vcluster.Request{ID: "serve", ReplicaSets: vcluster.ReplicaSet{"8c16g": 2}}, Revision: 1})

	if err != nil || plan.Refused() {
		t.Fatalf("plan %v, %v", plan, err)
	}
	if err := vcluster.CheckPlan(s, plan); err != nil {
		t.Fatalf("the valid plan fails the check: %v\n%s", err, plan)
	}
	for _, b := range []struct {
		name, want string
		brk        func(p *vcluster.Plan)
	}{
		{"a changed record not flushed", "record of serve changed but it is not flushed", func(p *vcluster.Plan) { p.Flush, p.Publish = nil, nil }},
		{"the primary flushed", "the primary is flushed", func(p *vcluster.Plan) { p.Flush = append(p.Flush, vcluster.PrimaryID) }},
		{"a move without a reason", "has no reason", func(p *vcluster.Plan) { p.Moves[0].Reason = vcluster.Reason{} }},
		{"a refusal that moves nodes", "a refused plan changes something", func(p *vcluster.Plan) {
			p.Refusal = &vcluster.Refusal{Reason: vcluster.Reason{Code: vcluster.ReasonOutOfResource}}
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			p := plan
			p.Moves = append([]vcluster.Move(nil), plan.Moves...)
			p.Flush = append([]string(nil), plan.Flush...)
			b.brk(&p)
			if err := vcluster.CheckPlan(s, p); err == nil || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("CheckPlan = %v, want an error containing %q", err, b.want)
			}
		})
	}
	// A state whose node sits in two clusters breaks the one-leaf rule.
	next := plan.After.Clone()
	serve := next.Logical["serve"]
	id := serve.Buckets["8c16g"][vcluster.Undivided][0]
	next.Primary.Buckets["8c16g"][vcluster.Undivided] = append([]string{id}, next.Primary.Buckets["8c16g"][vcluster.Undivided]...)
	if err := vcluster.CheckState(next); err == nil || !strings.Contains(err.Error(), "is in 2 leaf buckets") {
		t.Fatalf("CheckState = %v, want a node in 2 leaf buckets", err)
	}
}

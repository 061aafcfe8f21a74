package vcluster

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestReplenishMessages: PlanReplenish writes all of a plan's messages into
// one string; each must still read as withMessage words it (a part cut one
// byte short or from the wrong offset fails here).
// swapState is a small state with dead nodes in an indivisible cluster, a
// divisible one, its job cluster and the primary.
func swapState(t *testing.T) State {
	t.Helper()
	var nodes []Node
	for i := range 40 {
		nodes = append(nodes, Node{ID: fmt.Sprintf("n%02d", i), Template: fmt.Sprint("t", i%2), Alive: true})
	}
	s, err := NewState(nodes)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(p Plan, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		s = p.After
	}
	apply(PlanCreateOrUpdate(CreateOrUpdateInput{State: s, Request: Request{ID: "ind", ReplicaSets: ReplicaSet{"t0": 3, "t1": 3}}, Revision: 1}))
	apply(PlanCreateOrUpdate(CreateOrUpdateInput{State: s, Request: Request{ID: "div", Divisible: true, ReplicaSets: ReplicaSet{"t0": 4, "t1": 4}}, Revision: 2}))
	apply(PlanCreateJobCluster(CreateJobClusterInput{State: s, Request: JobRequest{Parent: "div", Job: "j", ReplicaSets: ReplicaSet{"t0": 2}}, Revision: 3}))
	for _, id := range []string{"ind", "div", JobID("div", "j")} {
		for _, n := range s.Members(id)[:2] {
			if s, err = s.SetNode(n, false, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err = s.SetNode(s.Primary.Buckets["t1"][Undivided][0], false, false) // a dead node the primary purges
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReplenishMessages(t *testing.T) {
	s := swapState(t)
	p, err := PlanReplenish(ReplenishInput{State: s}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Moves) != 10 || len(p.Purge) != 6 {
		t.Fatalf("want 5 swaps and 6 purges, got %d moves and %d purges:\n%s", len(p.Moves), len(p.Purge), p)
	}
	for _, m := range p.Moves {
		want := withMessage(Reason{Code: m.Reason.Code, Facts: m.Reason.Facts}).Message
		if m.Reason.Message != want || want == "" {
			t.Errorf("move %s: message %q, want %q", m.Node, m.Reason.Message, want)
		}
	}
	for _, n := range p.Purge {
		if want := "dead node " + n.Node + " leaves the primary"; n.Reason.Message != want {
			t.Errorf("purge %s: message %q, want %q", n.Node, n.Reason.Message, want)
		}
	}
	if m := p.Moves[0].Reason; m.Message != "replaces dead node "+m.Facts.Node+" of "+m.Facts.Cluster {
		t.Errorf("first move's message %q", m.Message)
	}
}

// TestNextPurgeChecks: Next checks a purged node where the plan's moves
// leave it, not where it starts: a dead node moved into the primary's
// undivided bucket may be purged, one moved out of it, one elsewhere, an
// alive one or one purged twice may not.
func TestNextPurgeChecks(t *testing.T) {
	s := swapState(t)
	deadInd := ""
	for _, id := range s.Members("ind") {
		if !s.Nodes.Node(id).Alive {
			deadInd = id
			break
		}
	}
	deadPrimary := ""
	for _, id := range s.Primary.Buckets["t1"][Undivided] {
		if !s.Nodes.Node(id).Alive {
			deadPrimary = id
		}
	}
	alivePrimary := s.Primary.Buckets["t1"][Undivided][1]
	tpl := s.Nodes.Node(deadInd).Template
	toPrimary := Move{Node: deadInd, Template: tpl, From: Place{"ind", Undivided}, To: Place{PrimaryID, Undivided}}
	fromPrimary := Move{Node: deadPrimary, Template: "t1", From: Place{PrimaryID, Undivided}, To: Place{"ind", Undivided}}
	purge := func(ids ...string) []PurgedNode {
		var out []PurgedNode
		for _, id := range ids {
			out = append(out, PurgedNode{Node: id})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		p    Plan
		ok   bool
	}{
		{"moved into the primary", Plan{Moves: []Move{toPrimary}, Purge: purge(deadInd)}, true},
		{"in the primary", Plan{Purge: purge(deadPrimary)}, true},
		{"both", Plan{Moves: []Move{toPrimary}, Purge: purge(deadPrimary, deadInd)}, true},
		{"moved out of the primary", Plan{Moves: []Move{fromPrimary}, Purge: purge(deadPrimary)}, false},
		{"in a logical cluster", Plan{Purge: purge(deadInd)}, false},
		{"alive", Plan{Purge: purge(alivePrimary)}, false},
		{"twice", Plan{Purge: purge(deadPrimary, deadPrimary)}, false},
	} {
		next, err := s.Next(tc.p)
		if !tc.ok {
			if !errors.Is(err, ErrPlanMismatch) {
				t.Errorf("%s: err %v, want a plan mismatch", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if err := CheckState(next); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		for _, n := range tc.p.Purge {
			if next.Nodes.Has(n.Node) || slices.Contains(next.Members(PrimaryID), n.Node) {
				t.Errorf("%s: %s still in the state", tc.name, n.Node)
			}
		}
	}
}

package vcluster

import (
	"fmt"
	"testing"
)

// TestReplenishMessages: PlanReplenish writes all of a plan's messages into
// one string; each must still read as withMessage words it (a part cut one
// byte short or from the wrong offset fails here).
func TestReplenishMessages(t *testing.T) {
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

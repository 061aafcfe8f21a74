package vcluster_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/vcluster"
)

func exampleNodes() []vcluster.Node {
	var nodes []vcluster.Node
	for i := range 6 {
		nodes = append(nodes, vcluster.Node{ID: fmt.Sprintf("n%d", i), Hostname: fmt.Sprintf("host-%d", i), Template: "8c16g", Alive: true})
	}
	return nodes
}

// Carve an indivisible cluster out of the primary, write the plan out
// through an executor (here the in-memory fake), and keep plan.After as the
// next state.
func ExamplePlanCreateOrUpdate() {
	s, _ := vcluster.NewState(exampleNodes())
	plan, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{
		ID:          "serve",
		ReplicaSets: vcluster.ReplicaSet{"8c16g": 4},
	}, Revision: 1})

	if err != nil {
		fmt.Println(err)
		return
	}
	next := plan.After
	store := fake.NewVClusterStore(fake.NewWorld(1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	rep, _ := vcluster.Apply(context.Background(), plan, store)
	fmt.Print(plan)
	fmt.Println("flushed", rep.Flushed, "published", rep.Published)
	fmt.Println("serve", next.ReplicaSet("serve"), "primary", next.ReplicaSet(vcluster.PrimaryID))
	// Output:
	// create serve kind=indivisible revision=1
	// move n0 (8c16g) kPrimaryClusterID/NIL -> serve/NIL
	// move n1 (8c16g) kPrimaryClusterID/NIL -> serve/NIL
	// move n2 (8c16g) kPrimaryClusterID/NIL -> serve/NIL
	// move n3 (8c16g) kPrimaryClusterID/NIL -> serve/NIL
	// flush [serve]
	// publish [serve]
	// flushed [serve] published [serve]
	// serve {8c16g: 4} primary {8c16g: 2}
}

// A request that cannot be met is not an error: the plan refuses, moves
// nothing and says what could be done.
func ExampleRefusal() {
	s, _ := vcluster.NewState(exampleNodes())
	plan, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "big", ReplicaSets: vcluster.ReplicaSet{"8c16g": 9}}, Revision: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	if r := plan.Refusal; r != nil {
		fmt.Println(r.Reason.Code, "acts:", plan.Acts(), "empty:", plan.Empty())
		fmt.Println(r.Reason.Message)
		fmt.Println("recommend", r.Recommend)
	}
	// Output:
	// OutOfResource acts: false empty: false
	// No enough nodes to add to the virtual cluster. The replica sets that gcs can add at most are shown below. Use it as a suggestion to adjust your request or cluster.
	// recommend {8c16g: 6}
}

// Invalid input is an error naming every field at fault.
func ExampleErrInvalidInput() {
	s, _ := vcluster.NewState(exampleNodes())
	_, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "a##b", ReplicaSets: vcluster.ReplicaSet{"8c16g": -1}}})
	var inv *plancore.InvalidError
	if errors.As(err, &inv) {
		fmt.Println(errors.Is(err, vcluster.ErrInvalidInput), inv.Fields())
	}
	// Output:
	// true [request.id request.replicaSets[8c16g]]
}

// Dead nodes are swapped for alive ones of the same template, all in one
// plan; the dead nodes leave the model.
func ExamplePlanReplenish() {
	s, _ := vcluster.NewState(exampleNodes())
	plan, _ := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "serve", ReplicaSets: vcluster.ReplicaSet{"8c16g": 3}}, Revision: 1})
	s, _ = s.Next(plan)
	s, _ = s.SetNode("n0", false, false)
	s, _ = s.SetNode("n2", false, false)
	plan, _ = vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{})
	fmt.Print(plan)
	// Output:
	// move n3 (8c16g) kPrimaryClusterID/NIL -> serve/NIL
	// move n0 (8c16g) serve/NIL -> kPrimaryClusterID/NIL
	// move n4 (8c16g) kPrimaryClusterID/NIL -> serve/NIL
	// move n2 (8c16g) serve/NIL -> kPrimaryClusterID/NIL
	// purge n0
	// purge n2
	// flush [serve]
	// publish [serve]
}

// A job cluster is divided from a divisible cluster; its nodes are the
// parent's bucket named after it.
func ExamplePlanCreateJobCluster() {
	s, _ := vcluster.NewState(exampleNodes())
	plan, _ := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "train", Divisible: true, ReplicaSets: vcluster.ReplicaSet{"8c16g": 4}}, Revision: 1})
	s, _ = s.Next(plan)
	plan, _ = vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: vcluster.JobRequest{Parent: "train", Job: "job1", ReplicaSets: vcluster.ReplicaSet{"8c16g": 2}}, Revision: 2})
	s, _ = s.Next(plan)
	fmt.Print(s)
	// Output:
	// nodes 6 (dead 0, busy 0)
	// primary kPrimaryClusterID {8c16g: 2}
	//   8c16g NIL [n4 n5]
	// divisible train rev=1 {8c16g: 4}
	//   8c16g NIL [n2 n3]
	//   8c16g train##job1 [n0 n1]
	//   job train##job1 rev=2 {8c16g: 2}
}

// After a restart the hierarchy is rebuilt from the node table and the
// stored records; records that disagree are repaired and rewritten.
func ExamplePlanRecover() {
	table := exampleNodes()
	records := []vcluster.Record{
		{ID: "train", Divisible: true, Revision: 1, Nodes: map[string]vcluster.RecordNode{
			"n0": {Template: "8c16g", Hostname: "host-0"}, "n1": {Template: "8c16g", Hostname: "host-1"}, "dead": {Template: "8c16g"},
		}},
		// The job's record was written before a crash; its parent's was not.
		{ID: "train##job1", Revision: 2, Nodes: map[string]vcluster.RecordNode{
			"n0": {Template: "8c16g", Hostname: "host-0"}, "n5": {Template: "8c16g", Hostname: "host-5"},
		}},
	}
	plan, _ := vcluster.PlanRecover(vcluster.RecoverInput{Nodes: table, Records: records})
	s := plan.After
	fmt.Print(plan)
	fmt.Println("train", s.Members("train"))
	// Output:
	// anomaly repair train n5: node of job cluster train##job1 missing from its parent's record added
	// flush [train]
	// publish []
	// train [n0 n1 n5]
}

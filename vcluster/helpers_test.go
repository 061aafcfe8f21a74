package vcluster_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/vcluster"
)

// nodesOf returns count alive idle nodes of template, with ids prefix00,
// prefix01, ... and hostnames h-<id>.
func nodesOf(prefix, template string, count int) []vcluster.Node {
	out := make([]vcluster.Node, count)
	for i := range out {
		id := fmt.Sprintf("%s%02d", prefix, i)
		out[i] = vcluster.Node{ID: id, Hostname: "h-" + id, Template: template, Alive: true}
	}
	return out
}

func mustState(t testing.TB, groups ...[]vcluster.Node) vcluster.State {
	t.Helper()
	s, err := vcluster.NewState(slices.Concat(groups...))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// step applies a plan that must have succeeded.
func step(t testing.TB, s vcluster.State, p vcluster.Plan, err error) vcluster.State {
	t.Helper()
	if err != nil {
		t.Fatalf("plan failed: %v", err)
	}
	if p.Refused() {
		t.Fatalf("plan refused: %s", p.Refusal)
	}
	next, err := s.Next(p)
	if err != nil {
		t.Fatalf("apply: %v\nplan:\n%s", err, p)
	}
	if !reflect.DeepEqual(next, p.After) {
		t.Fatalf("plan.After differs from State.Next of the plan:\n%s\nafter:\n%s", next, p.After)
	}
	if err := checkInvariants(next); err != nil {
		t.Fatalf("invariants after plan:\n%s\n%v", p, err)
	}
	return next
}

func create(t testing.TB, s vcluster.State, id string, divisible bool, rs vcluster.ReplicaSet, rev uint64) vcluster.State {
	t.Helper()
	req := vcluster.Request{ID: id, Divisible: divisible, ReplicaSets: rs}
	if c, ok := s.Logical[id]; ok {
		req.Revision = c.Revision
	}
	p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: req, Revision: rev})
	return step(t, s, p, err)
}

func createJob(t testing.TB, s vcluster.State, parent, job string, rs vcluster.ReplicaSet, rev uint64) vcluster.State {
	t.Helper()
	p, err := vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: vcluster.JobRequest{Parent: parent, Job: job, ReplicaSets: rs}, Revision: rev})
	return step(t, s, p, err)
}

func kill(t testing.TB, s vcluster.State, ids ...string) vcluster.State {
	t.Helper()
	for _, id := range ids {
		var err error
		if s, err = s.SetNode(id, false, false); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// members returns the members of cluster id by template, for compact
// assertions: {"t0": ["n1", "n2"]}.
func members(s vcluster.State, id string) map[string][]string {
	out := map[string][]string{}
	for _, n := range s.Members(id) {
		t := s.Nodes.Node(n).Template
		out[t] = append(out[t], n)
	}
	return out
}

func bucketOf(s vcluster.State, holder, template, b string) []string {
	c, _ := s.Cluster(holder)
	return c.Buckets[template][b]
}

func sortedNodes(s vcluster.State) []string { return s.Nodes.IDs() }

// checkInvariants is vcluster.CheckState, under the name the tests use.
func checkInvariants(s vcluster.State) error { return vcluster.CheckState(s) }

// asInvalid returns err as a *plancore.InvalidError wrapping
// ErrInvalidInput, or fails the test.
func asInvalid(t testing.TB, err error) *plancore.InvalidError {
	t.Helper()
	var e *plancore.InvalidError
	if !errors.As(err, &e) || !errors.Is(err, vcluster.ErrInvalidInput) || len(e.Errors) == 0 {
		t.Fatalf("error %v is not an invalid-input error", err)
	}
	return e
}

// asRefusal returns p's refusal, or fails the test when the call did not
// refuse (an error, or a plan that acts).
func asRefusal(t testing.TB, p vcluster.Plan, err error) *vcluster.Refusal {
	t.Helper()
	if err != nil || p.Refusal == nil || p.Acts() || p.Empty() {
		t.Fatalf("want a refused empty plan, got error %v, plan:\n%s", err, p)
	}
	return p.Refusal
}

// recoverPlan runs PlanRecover with the default options and returns the
// recovered state and the plan; PlanRecover refuses no input.
func recoverPlan(table []vcluster.Node, records []vcluster.Record) (vcluster.State, vcluster.Plan) {
	p, err := vcluster.PlanRecover(vcluster.RecoverInput{Nodes: table, Records: records})
	if err != nil {
		panic(err)
	}
	return p.After, p
}

// removedIDs returns the ids of the clusters p removes, in plan order.
func removedIDs(p vcluster.Plan) []string {
	var out []string
	for _, r := range p.Removes {
		out = append(out, r.Cluster)
	}
	return out
}

// purgedIDs returns the nodes p purges, in plan order.
func purgedIDs(p vcluster.Plan) []string {
	var out []string
	for _, n := range p.Purge {
		out = append(out, n.Node)
	}
	return out
}

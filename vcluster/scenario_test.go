package vcluster_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/plancore/plancore/vcluster"
)

// TestExample1Buckets: buckets of a primary with job clusters, and an
// addition refused with its recommendation.
func TestExample1Buckets(t *testing.T) {
	var groups [][]vcluster.Node
	for i := range 10 {
		groups = append(groups, nodesOf(fmt.Sprintf("n%d-", i), fmt.Sprint(i), 20))
	}
	s := mustState(t, groups...)
	s = create(t, s, "vc0", false, vcluster.ReplicaSet{"0": 5, "1": 10}, 1)
	if got := len(bucketOf(s, vcluster.PrimaryID, "0", vcluster.Undivided)); got != 15 {
		t.Errorf("primary t0 NIL = %d, want 15", got)
	}
	s = createJob(t, s, vcluster.PrimaryID, "job_0", vcluster.ReplicaSet{"0": 5, "1": 10}, 2)
	job := vcluster.JobID(vcluster.PrimaryID, "job_0")
	gotSizes := map[string]map[string]int{}
	for _, tpl := range []string{"0", "1"} {
		gotSizes[tpl] = map[string]int{}
		for b, ids := range s.Primary.Buckets[tpl] {
			gotSizes[tpl][b] = len(ids)
		}
	}
	want := map[string]map[string]int{"0": {vcluster.Undivided: 10, job: 5}, "1": {job: 10}}
	if diff := cmp.Diff(want, gotSizes); diff != "" {
		t.Errorf("primary buckets (-want +got):\n%s", diff)
	}
	rs := s.ReplicaSet(vcluster.PrimaryID)
	if rs["0"] != 15 || rs["1"] != 10 || rs["2"] != 20 {
		t.Errorf("primary replica set %v", rs)
	}
	p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "vc1", ReplicaSets: vcluster.ReplicaSet{"1": 1}}, Revision: 3})
	if e := asRefusal(t, p, err); e.Reason.Code != vcluster.ReasonOutOfResource || !cmp.Equal(e.Recommend, vcluster.ReplicaSet{"1": 0}) {
		t.Errorf("got %v, want OutOfResource recommending {1: 0}", err)
	}
}

// TestExample2RecommendationsAndRevisions: recommendations, stale revisions
// and revisions assigned when the caller's clock is behind.
func TestExample2RecommendationsAndRevisions(t *testing.T) {
	s := mustState(t, nodesOf("s", "4c8g", 1), nodesOf("l", "8c16g", 1))
	p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "vc1", ReplicaSets: vcluster.ReplicaSet{"4c8g": 2, "8c16g": 1}}, Revision: 10})
	if e := asRefusal(t, p, err); e.Reason.Code != vcluster.ReasonOutOfResource || !cmp.Equal(e.Recommend, vcluster.ReplicaSet{"4c8g": 1, "8c16g": 1}) {
		t.Fatalf("got %v", err)
	}
	p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "vc1", ReplicaSets: vcluster.ReplicaSet{"4c8g": 1}}, Revision: 10})
	s = step(t, s, p, err)
	r1 := s.Logical["vc1"].Revision
	if r1 != 10 {
		t.Fatalf("revision %d, want 10", r1)
	}
	_, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "vc1", Revision: 0, ReplicaSets: vcluster.ReplicaSet{"4c8g": 1}}, Revision: 11})
	if e := asInvalid(t, err); e.Errors[0].Detail != "The revision (0) is expired, the latest revision of the virtual cluster vc1 is 10" {
		t.Fatalf("got %v", err)
	}
	before := s.Clone()
	p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "vc1", Revision: r1, ReplicaSets: vcluster.ReplicaSet{"4c8g": 2, "8c16g": 2}}, Revision: 12})
	if e := asRefusal(t, p, err); e.Reason.Code != vcluster.ReasonOutOfResource || !cmp.Equal(e.Recommend, vcluster.ReplicaSet{"4c8g": 0, "8c16g": 1}) || p.Acts() {
		t.Fatalf("got %v", err)
	}
	if diff := cmp.Diff(before, s); diff != "" || s.Logical["vc1"].Revision != r1 {
		t.Fatalf("vc1 changed:\n%s", diff)
	}
	// A successful update with a caller clock behind still moves forward.
	p, err = vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "vc1", Revision: r1, ReplicaSets: vcluster.ReplicaSet{"4c8g": 1}}, Revision: 3})
	s = step(t, s, p, err)
	if got := s.Logical["vc1"].Revision; got != 11 {
		t.Fatalf("revision after a no-op update with rev 3 = %d, want 11", got)
	}
}

// TestExample3OnePlanHealsAll: one replenish plan heals every replaceable
// dead node (the anchor one per template per cluster per round).
func TestExample3OnePlanHealsAll(t *testing.T) {
	s := mustState(t, nodesOf("n", "8c16g", 13))
	s = create(t, s, "serve", false, vcluster.ReplicaSet{"8c16g": 8}, 1)
	s = kill(t, s, "n01", "n03", "n05")
	p, err := vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(p.Moves) / 2; got != 3 {
		t.Fatalf("%d swaps, want 3:\n%s", got, p)
	}
	if diff := cmp.Diff([]string{"serve"}, p.Flush); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]string{"serve"}, p.Publish); diff != "" {
		t.Error(diff)
	}
	next := step(t, s, p, nil)
	if diff := cmp.Diff(map[string][]string{"8c16g": {"n00", "n02", "n04", "n06", "n07", "n08", "n09", "n10"}}, members(next, "serve")); diff != "" {
		t.Errorf("serve members (-want +got):\n%s", diff)
	}
	if ok := next.Nodes.Has("n01"); ok {
		t.Error("dead n01 not purged")
	}
	if next.Logical["serve"].Revision != 1 {
		t.Error("replenishment changed the revision")
	}

	// With MaxSwaps = 2: two swaps now, one next round.
	p, err = vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{MaxSwaps: 2})
	if err != nil || len(p.Moves) != 4 || !p.Truncated {
		t.Fatalf("capped plan: err %v truncated %v\n%s", err, p.Truncated, p)
	}
	s = step(t, s, p, nil)
	p, err = vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{MaxSwaps: 2})
	if err != nil || len(p.Moves) != 2 || p.Truncated {
		t.Fatalf("second round: err %v\n%s", err, p)
	}
	// The anchor's pacing: one per template per cluster per round.
	p, err = vcluster.PlanReplenish(vcluster.ReplenishInput{State: mustKillServe(t)}, vcluster.Options{OnePerTemplatePerCluster: true})
	if err != nil || len(p.Moves) != 2 || !p.Truncated {
		t.Fatalf("anchor pacing: err %v\n%s", err, p)
	}
}

func mustKillServe(t *testing.T) vcluster.State {
	s := mustState(t, nodesOf("n", "8c16g", 13))
	s = create(t, s, "serve", false, vcluster.ReplicaSet{"8c16g": 8}, 1)
	return kill(t, s, "n01", "n03", "n05")
}

// TestExample4FallbackSwapIsConsistent: a job cluster healed from its
// parent updates the parent's bucket too (the anchor leaves the node owned
// twice).
func TestExample4FallbackSwapIsConsistent(t *testing.T) {
	s := mustState(t, nodesOf("n", "t0", 6))
	s = create(t, s, "P", true, vcluster.ReplicaSet{"t0": 6}, 1)
	p, err := vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: vcluster.JobRequest{Parent: "P", Job: "J", ReplicaSets: vcluster.ReplicaSet{"t0": 4}, Prefer: []string{"n03", "n04", "n05", "n06"}}, Revision: 2})
	s = step(t, s, p, err)
	// Prefer picked n03..n05 and then the lowest id left, n00.
	if diff := cmp.Diff(map[string][]string{"t0": {"n00", "n03", "n04", "n05"}}, members(s, "P##J")); diff != "" {
		t.Fatalf("job members (-want +got):\n%s", diff)
	}
	s = kill(t, s, "n04")
	p, err = vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, vcluster.Options{})
	s = step(t, s, p, err)
	if diff := cmp.Diff([]string{"n02", "n04"}, bucketOf(s, "P", "t0", vcluster.Undivided)); diff != "" {
		t.Errorf("P NIL (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"n00", "n01", "n03", "n05"}, bucketOf(s, "P", "t0", "P##J")); diff != "" {
		t.Errorf("P bucket J (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"P##J", "P"}, p.Flush); diff != "" {
		t.Errorf("flush (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"P##J"}, p.Publish); diff != "" {
		t.Errorf("publish (-want +got):\n%s", diff)
	}
	// Removing J later gives P exactly its 6 nodes back.
	p, err = vcluster.PlanRemove(vcluster.RemoveInput{State: s, ID: "P##J"})
	s = step(t, s, p, err)
	if got := s.ReplicaSet("P"); !cmp.Equal(got, vcluster.ReplicaSet{"t0": 6}) {
		t.Errorf("P replica set %v, want {t0: 6}", got)
	}
}

// TestExample5RecoverRepair: the job record is ahead
// of its parent's.
func TestExample5RecoverRepair(t *testing.T) {
	table := []vcluster.Node{}
	for _, id := range []string{"n1", "n2", "n3", "n5", "n6", "X", "Z"} {
		table = append(table, vcluster.Node{ID: id, Hostname: "h" + id, Template: "t0", Alive: true})
	}
	rec := func(id string, div bool, rev uint64, ids ...string) vcluster.Record {
		r := vcluster.Record{ID: id, Divisible: div, Revision: rev, Nodes: map[string]vcluster.RecordNode{}}
		for _, n := range ids {
			r.Nodes[n] = vcluster.RecordNode{Template: "t0", Hostname: "h" + n}
		}
		return r
	}
	records := []vcluster.Record{
		rec("P##J", false, 7, "n3", "X", "n5", "n6"),
		rec("P", true, 3, "n1", "n2", "n3", "n4", "n5", "n6"),
	}
	s, p := recoverPlan(table, records)
	if err := checkInvariants(s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"t0": {"X", "n1", "n2", "n3", "n5", "n6"}}, members(s, "P")); diff != "" {
		t.Errorf("P (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Z"}, s.Members(vcluster.PrimaryID)); diff != "" {
		t.Errorf("primary (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"P"}, p.Flush); diff != "" {
		t.Errorf("flush (-want +got):\n%s", diff)
	}
	if len(p.Publish) != 0 {
		t.Errorf("publish %v, want none (P is divisible)", p.Publish)
	}
	if s.Logical["P"].Revision != 3 || s.Jobs["P##J"].Revision != 7 {
		t.Error("revisions changed by recovery")
	}
	// A second recovery from the repaired records finds nothing to do.
	again := []vcluster.Record{}
	for _, id := range []string{"P", "P##J"} {
		r, _ := vcluster.RecordOf(s, id)
		again = append(again, r)
	}
	s2, p2 := recoverPlan(table, again)
	if !p2.Empty() || len(p2.Anomalies) != 0 {
		t.Errorf("second recovery not idle:\n%s", p2)
	}
	if diff := cmp.Diff(s, s2, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("second recovery differs:\n%s", diff)
	}
}

func TestScaleDownReturnsDeadNodesFirst(t *testing.T) {
	s := mustState(t, nodesOf("n", "t0", 6))
	s = create(t, s, "vc", false, vcluster.ReplicaSet{"t0": 5}, 1)
	s = kill(t, s, "n04", "n02")
	s, _ = s.SetNode("n00", true, true)
	p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: vcluster.Request{ID: "vc", Revision: 1, ReplicaSets: vcluster.ReplicaSet{"t0": 2}}, Revision: 2})
	s = step(t, s, p, err)
	// Dead n02 and n04 first, then the lowest idle id n01; busy n00 stays.
	if diff := cmp.Diff(map[string][]string{"t0": {"n00", "n03"}}, members(s, "vc")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRemoveNodes(t *testing.T) {
	s := mustState(t, nodesOf("n", "t0", 4))
	s = create(t, s, "vc", false, vcluster.ReplicaSet{"t0": 3}, 4)
	s = kill(t, s, "n01")
	p, err := vcluster.PlanRemoveNodes(vcluster.RemoveNodesInput{State: s, ID: "vc", Nodes: []string{"n02", "n01", "n02"}, Revision: 1})
	s = step(t, s, p, err)
	if diff := cmp.Diff(map[string][]string{"t0": {"n00"}}, members(s, "vc")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := s.Logical["vc"].Revision; got != 5 {
		t.Errorf("revision %d, want 5", got)
	}
	if diff := cmp.Diff([]string{"n01", "n02", "n03"}, bucketOf(s, vcluster.PrimaryID, "t0", vcluster.Undivided)); diff != "" {
		t.Errorf("primary NIL (-want +got):\n%s", diff)
	}
	if !cmp.Equal(p.Flush, []string{"vc"}) || !cmp.Equal(p.Publish, []string{"vc"}) {
		t.Errorf("flush %v publish %v", p.Flush, p.Publish)
	}
}

func TestGCRemovesDeadJobsNotInUse(t *testing.T) {
	s := mustState(t, nodesOf("n", "t0", 6))
	s = create(t, s, "P", true, vcluster.ReplicaSet{"t0": 4}, 1)
	s = createJob(t, s, "P", "a", vcluster.ReplicaSet{"t0": 1}, 2)
	s = createJob(t, s, "P", "b", vcluster.ReplicaSet{"t0": 1}, 3)
	s = createJob(t, s, vcluster.PrimaryID, "c", vcluster.ReplicaSet{"t0": 1}, 4)
	for _, id := range []string{"P##a", "P##b", vcluster.PrimaryID + "##c"} {
		s, _ = s.SetJobDead(id, true)
	}
	s, _ = s.SetDetached("P##b", 1)
	p, err := vcluster.PlanGC(vcluster.GCInput{State: s})
	s = step(t, s, p, err)
	if diff := cmp.Diff([]string{"P##a", vcluster.PrimaryID + "##c"}, removedIDs(p)); diff != "" {
		t.Errorf("removes (-want +got):\n%s", diff)
	}
	if _, ok := s.Jobs["P##b"]; !ok {
		t.Error("job with detached objects collected")
	}
	if s.Logical["P"].Revision != 1 {
		t.Error("job churn changed the parent's revision")
	}
	// The detached actor goes away: the next GC collects it.
	s, _ = s.SetDetached("P##b", 0)
	p, err = vcluster.PlanGC(vcluster.GCInput{State: s})
	s = step(t, s, p, err)
	if len(s.Jobs) != 0 || !cmp.Equal(s.ReplicaSet("P"), vcluster.ReplicaSet{"t0": 4}) {
		t.Errorf("jobs %v, P %v", s.Jobs, s.ReplicaSet("P"))
	}
}

func TestZeroTemplatesStayVisible(t *testing.T) {
	s := mustState(t, nodesOf("n", "t0", 2))
	s = create(t, s, "vc", true, vcluster.ReplicaSet{"t0": 1, "gpu": 0}, 1)
	if diff := cmp.Diff(vcluster.ReplicaSet{"t0": 1, "gpu": 0}, s.ReplicaSet("vc")); diff != "" {
		t.Error(diff)
	}
	s = create(t, s, "vc", true, vcluster.ReplicaSet{"t0": 0}, 2)
	if diff := cmp.Diff(vcluster.ReplicaSet{}, s.ReplicaSet("vc")); diff != "" {
		t.Errorf("an update scaling to 0 must not leave {t: 0}:\n%s", diff)
	}
}

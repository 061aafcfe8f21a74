package vcluster_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/plancore/plancore"
	"github.com/plancore/plancore/vcluster"
)

// baseState: 4 t0 + 4 t1 nodes; logical divisible "div" {t0: 2} with job
// "div##j" {t0: 1}; logical indivisible "ind" {t1: 2} at revision 5, one of
// its nodes busy; primary job "kPrimaryClusterID##pj" {t1: 1}.
func baseState(t *testing.T) vcluster.State {
	t.Helper()
	s := mustState(t, nodesOf("a", "t0", 4), nodesOf("b", "t1", 4))
	s = create(t, s, "div", true, vcluster.ReplicaSet{"t0": 2}, 1)
	s = createJob(t, s, "div", "j", vcluster.ReplicaSet{"t0": 1}, 2)
	s = create(t, s, "ind", false, vcluster.ReplicaSet{"t1": 2}, 5)
	s = createJob(t, s, vcluster.PrimaryID, "pj", vcluster.ReplicaSet{"t1": 1}, 6)
	s, err := s.SetNode("b00", true, true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// outcome says how a call must fail: invalidArg and notFound are errors
// (wrapping ErrInvalidInput, and ErrNotFound for notFound) naming the field
// path with the anchor's message as detail; outOfResource and
// unsafeToRemove are refused plans carrying the reason and the
// recommendation.
type outcome string

const (
	invalidArg     outcome = "InvalidArgument"
	notFound       outcome = "NotFound"
	outOfResource  outcome = "OutOfResource"
	unsafeToRemove outcome = "UnsafeToRemove"
)

type wantErr struct {
	code      outcome
	field     string
	msg       string
	recommend vcluster.ReplicaSet
	failed    []string
	busy      []string
}

// checkErr checks that a call refused as want says: an error for invalid
// input (its first problem names want.field with want.msg), or a refused
// plan that moves nothing for a refusal.
func checkErr(t *testing.T, p vcluster.Plan, err error, want wantErr) {
	t.Helper()
	var got wantErr
	switch want.code {
	case invalidArg, notFound:
		var inv *plancore.InvalidError
		if !errors.As(err, &inv) || len(inv.Errors) == 0 {
			t.Fatalf("error %v is not a *plancore.InvalidError; plan:\n%s", err, p)
		}
		got = wantErr{code: invalidArg, field: inv.Errors[0].Field, msg: inv.Errors[0].Detail}
		if errors.Is(err, vcluster.ErrNotFound) {
			got.code = notFound
		}
		if !errors.Is(err, vcluster.ErrInvalidInput) {
			t.Errorf("errors.Is(%v, ErrInvalidInput) = false", err)
		}
		if !p.Empty() || p.Refused() {
			t.Errorf("invalid input returned a plan:\n%s", p)
		}
	default:
		if err != nil || p.Refusal == nil {
			t.Fatalf("want a refused plan, got err %v, plan:\n%s", err, p)
		}
		r := p.Refusal
		got = wantErr{code: outcome(r.Reason.Code), field: r.Field, msg: r.Reason.Message, recommend: r.Recommend, failed: r.FailedNodes, busy: r.BusyNodes}
		if p.Acts() || p.Empty() {
			t.Errorf("refused plan acts, or reads as empty:\n%s", p)
		}
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(wantErr{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("outcome mismatch (-want +got):\n%s", diff)
	}
}

func TestCreateOrUpdatePrechecks(t *testing.T) {
	s := baseState(t)
	tests := []struct {
		name string
		req  vcluster.Request
		want wantErr
	}{
		{"empty id", vcluster.Request{ID: ""}, wantErr{code: invalidArg, field: "request.id", msg: "Invalid request, the virtual cluster id is empty."}},
		{"primary id", vcluster.Request{ID: vcluster.PrimaryID}, wantErr{code: invalidArg, field: "request.id", msg: "Invalid request, kPrimaryClusterID can not be created or updated."}},
		{"job separator", vcluster.Request{ID: "a##b"}, wantErr{code: invalidArg, field: "request.id", msg: `Invalid request, the virtual cluster id a##b must not contain "##".`}},
		{"negative replicas", vcluster.Request{ID: "x", ReplicaSets: vcluster.ReplicaSet{"t0": 1, "t1": -2}}, wantErr{code: invalidArg, field: "request.replicaSets[t1]", msg: "Invalid request, replicas(-2) must >= 0, virtual_cluster_id: x"}},
		{"empty template", vcluster.Request{ID: "x", ReplicaSets: vcluster.ReplicaSet{"": 1}}, wantErr{code: invalidArg, field: "request.replicaSets", msg: "Invalid request, template_id is empty, virtual_cluster_id: x"}},
		{"negative before empty template of a later entry", vcluster.Request{ID: "x", ReplicaSets: vcluster.ReplicaSet{"": -1}}, wantErr{code: invalidArg, field: "request.replicaSets[]", msg: "Invalid request, replicas(-1) must >= 0, virtual_cluster_id: x"}},
		{"stale revision", vcluster.Request{ID: "ind", Revision: 4, ReplicaSets: vcluster.ReplicaSet{"t1": 2}}, wantErr{code: invalidArg, field: "request.revision", msg: "The revision (4) is expired, the latest revision of the virtual cluster ind is 5"}},
		{"divisibility change", vcluster.Request{ID: "ind", Revision: 5, Divisible: true}, wantErr{code: invalidArg, field: "request.divisible", msg: "The requested attributes are incompatible with virtual cluster ind. expect: (0), actual: (1)."}},
		{"divisibility change to indivisible", vcluster.Request{ID: "div", Revision: 1}, wantErr{code: invalidArg, field: "request.divisible", msg: "The requested attributes are incompatible with virtual cluster div. expect: (1), actual: (0)."}},
		{"scale-down of a busy node", vcluster.Request{ID: "ind", Revision: 5, ReplicaSets: vcluster.ReplicaSet{}}, wantErr{code: unsafeToRemove, field: "request.replicaSets", msg: "No enough nodes to remove from the virtual cluster. The replica sets that gcs can remove at most are shown below. Use it as a suggestion to adjust your request or cluster.", recommend: vcluster.ReplicaSet{"t1": 1}}},
		{"scale-down into job buckets", vcluster.Request{ID: "div", Revision: 1, Divisible: true}, wantErr{code: unsafeToRemove, field: "request.replicaSets", msg: "No enough nodes to remove from the virtual cluster. The replica sets that gcs can remove at most are shown below. Use it as a suggestion to adjust your request or cluster.", recommend: vcluster.ReplicaSet{"t0": 1}}},
		{"scale-up short, every template evaluated", vcluster.Request{ID: "x", ReplicaSets: vcluster.ReplicaSet{"t0": 3, "t1": 1, "t9": 0}}, wantErr{code: outOfResource, field: "request.replicaSets", msg: "No enough nodes to add to the virtual cluster. The replica sets that gcs can add at most are shown below. Use it as a suggestion to adjust your request or cluster.", recommend: vcluster.ReplicaSet{"t0": 2, "t1": 1}}},
		{"scale-down short skips the add side", vcluster.Request{ID: "ind", Revision: 5, ReplicaSets: vcluster.ReplicaSet{"t0": 99}}, wantErr{code: unsafeToRemove, field: "request.replicaSets", msg: "No enough nodes to remove from the virtual cluster. The replica sets that gcs can remove at most are shown below. Use it as a suggestion to adjust your request or cluster.", recommend: vcluster.ReplicaSet{"t1": 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Clone()
			p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: tc.req, Revision: 100})
			checkErr(t, p, err, tc.want)
			if diff := cmp.Diff(before, s); diff != "" {
				t.Errorf("input modified:\n%s", diff)
			}
		})
	}
}

func TestJobClusterPrechecks(t *testing.T) {
	s := baseState(t)
	tests := []struct {
		name string
		req  vcluster.JobRequest
		want wantErr
	}{
		{"empty job name", vcluster.JobRequest{Parent: "div"}, wantErr{code: invalidArg, field: "request.job", msg: "Invalid request, the job name is empty, virtual_cluster_id: div"}},
		{"negative replicas", vcluster.JobRequest{Parent: "div", Job: "k", ReplicaSets: vcluster.ReplicaSet{"t0": -1}}, wantErr{code: invalidArg, field: "request.replicaSets[t0]", msg: "Invalid request, replicas(-1) must >= 0, virtual_cluster_id: div##k"}},
		{"empty template", vcluster.JobRequest{Parent: "div", Job: "k", ReplicaSets: vcluster.ReplicaSet{"": 1}}, wantErr{code: invalidArg, field: "request.replicaSets", msg: "Invalid request, template_id is empty, virtual_cluster_id: div##k"}},
		{"parent missing", vcluster.JobRequest{Parent: "nope", Job: "k"}, wantErr{code: notFound, field: "request.parent", msg: "virtual cluster not exists: nope"}},
		{"parent is a job", vcluster.JobRequest{Parent: "div##j", Job: "k"}, wantErr{code: notFound, field: "request.parent", msg: "virtual cluster not exists: div##j"}},
		{"parent indivisible", vcluster.JobRequest{Parent: "ind", Job: "k"}, wantErr{code: invalidArg, field: "request.parent", msg: " virtual cluster is not exclusive: ind"}},
		{"duplicate", vcluster.JobRequest{Parent: "div", Job: "j"}, wantErr{code: invalidArg, field: "request.job", msg: "The job cluster div##j already exists."}},
		{"short: only undivided nodes count", vcluster.JobRequest{Parent: "div", Job: "k", ReplicaSets: vcluster.ReplicaSet{"t0": 2}}, wantErr{code: outOfResource, field: "request.replicaSets", msg: "No enough node instances to create the job cluster div##k", recommend: vcluster.ReplicaSet{"t0": 1}}},
		{"short in the primary", vcluster.JobRequest{Parent: vcluster.PrimaryID, Job: "k", ReplicaSets: vcluster.ReplicaSet{"t0": 3, "t1": 2}}, wantErr{code: outOfResource, field: "request.replicaSets", msg: "No enough node instances to create the job cluster kPrimaryClusterID##k", recommend: vcluster.ReplicaSet{"t0": 2, "t1": 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: tc.req, Revision: 9})
			checkErr(t, p, err, tc.want)
		})
	}
}

func TestRemovePrechecks(t *testing.T) {
	s := baseState(t)
	detached, err := s.SetDetached("div##j", 1)
	if err != nil {
		t.Fatal(err)
	}
	busyJob, err := s.SetNode("b02", true, true) // b02 is the primary job's node
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Members(vcluster.PrimaryID + "##pj"); !cmp.Equal(got, []string{"b02"}) {
		t.Fatalf("fixture: primary job members %v", got)
	}
	indDetached, err := s.SetDetached("ind", 2)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		state vcluster.State
		id    string
		want  wantErr
	}{
		{"empty id", s, "", wantErr{code: invalidArg, field: "id", msg: "Invalid request, the virtual cluster id is empty."}},
		{"primary", s, vcluster.PrimaryID, wantErr{code: invalidArg, field: "id", msg: "Invalid request, kPrimaryClusterID can not be removed."}},
		{"logical missing", s, "nope", wantErr{code: notFound, field: "id", msg: "The logical cluster nope does not exist."}},
		{"divisible with a job is in use", s, "div", wantErr{code: unsafeToRemove, field: "id", msg: "The virtual cluster div can not be removed as it is still in use. "}},
		{"indivisible with a busy node is in use", s, "ind", wantErr{code: unsafeToRemove, field: "id", msg: "The virtual cluster ind can not be removed as it is still in use. "}},
		{"indivisible with detached objects is in use", indDetached, "ind", wantErr{code: unsafeToRemove, field: "id", msg: "The virtual cluster ind can not be removed as it is still in use. "}},
		{"job: parent missing", s, "nope##j", wantErr{code: notFound, field: "id", msg: "Failed to remove virtual cluster, parent cluster not exists, virtual cluster id: nope##j"}},
		{"job: parent indivisible", s, "ind##j", wantErr{code: invalidArg, field: "id", msg: "Failed to remove virtual cluster, parent cluster is not divisible, virtual cluster id: ind##j"}},
		{"job: detached objects", detached, "div##j", wantErr{code: unsafeToRemove, field: "id", msg: "Failed to remove virtual cluster, job cluster is in use, virtual cluster id: div##j"}},
		{"job: busy node", busyJob, vcluster.PrimaryID + "##pj", wantErr{code: unsafeToRemove, field: "id", msg: "Failed to remove virtual cluster, job cluster is in use, virtual cluster id: kPrimaryClusterID##pj"}},
		{"job: missing", s, "div##zz", wantErr{code: notFound, field: "id", msg: "The job cluster div##zz does not exist."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := vcluster.PlanRemove(vcluster.RemoveInput{State: tc.state, ID: tc.id})
			checkErr(t, p, err, tc.want)
		})
	}
}

func TestRemoveNodesPrechecks(t *testing.T) {
	s := baseState(t)
	failMsg := "Failed to remove some of the nodes because they are not idle nor found in the virtual cluster. These nodes with failure are shown below."
	tests := []struct {
		name  string
		id    string
		nodes []string
		want  wantErr
	}{
		{"empty id", "", []string{"a00"}, wantErr{code: invalidArg, field: "id", msg: "Invalid request, the virtual cluster id is empty."}},
		{"primary", vcluster.PrimaryID, []string{"a00"}, wantErr{code: invalidArg, field: "id", msg: "Invalid request, kPrimaryClusterID should not be updated via this API."}},
		{"missing cluster", "nope", []string{"a00"}, wantErr{code: notFound, field: "id", msg: "The logical cluster nope does not exist."}},
		{"job id", "div##j", []string{"a01"}, wantErr{code: notFound, field: "id", msg: "The logical cluster div##j does not exist."}},
		{"no nodes", "div", nil, wantErr{code: invalidArg, field: "nodes", msg: "Invalid request, no node to remove from the virtual cluster div."}},
		{"busy, unknown, foreign and job-bucket nodes", "ind", []string{"b00", "zz", "a02", "b01", "b01"}, wantErr{code: unsafeToRemove, field: "nodes", msg: failMsg, failed: []string{"a02", "b00", "zz"}, busy: []string{"b00"}}},
		{"node inside a job bucket", "div", []string{"a01", "a00"}, wantErr{code: unsafeToRemove, field: "nodes", msg: failMsg, failed: []string{"a00"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := vcluster.PlanRemoveNodes(vcluster.RemoveNodesInput{State: s, ID: tc.id, Nodes: tc.nodes, Revision: 50})
			checkErr(t, p, err, tc.want)
		})
	}
}

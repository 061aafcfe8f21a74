package kube_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/plancore/plancore/adapters/kube"
	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/reconcile"
)

// drain returns what a FakeRecorder holds, as "Type Reason Message" lines.
func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestReconcileEvents(t *testing.T) {
	scaleUp := reconcile.Reason{Code: reconcile.ReasonScaleUp, Message: "scaling up: 1 of 4 worker pods running"}
	pending := reconcile.Reason{Code: reconcile.ReasonExpectationsPending, Message: "group gpu: expectations pending"}
	heads := reconcile.Reason{Code: reconcile.ReasonMultipleHeads, Message: "2 head pods"}
	p := reconcile.Plan{
		Actions: []reconcile.Action{
			{Kind: reconcile.ActionCreatePod, Group: reconcile.HeadGroupLabel, Reason: reconcile.Reason{Code: reconcile.ReasonHeadCreate, Message: "no head pod: creating one"}},
			{Kind: reconcile.ActionCreatePod, Group: "cpu", Reason: scaleUp},
			{Kind: reconcile.ActionCreatePod, Group: "cpu", Reason: scaleUp},
			{Kind: reconcile.ActionCreatePod, Group: "cpu", Reason: scaleUp},
			{Kind: reconcile.ActionDeletePod, Group: "cpu", Reason: reconcile.Reason{Code: reconcile.ReasonScaleDown, Message: "scaling down"}},
		},
		Verdict: reconcile.Verdict{Reason: heads, StoppedAt: "head"},
		Groups:  []reconcile.GroupReport{{Group: "cpu"}, {Group: "gpu", Stopped: &pending}},
		Notices: []reconcile.Reason{{Code: reconcile.ReasonGroupNotInSpec, Message: "pods of group old are left alone"},
			{Code: reconcile.ReasonExpectationsPending, Message: "head expectations are not satisfied"}},
	}
	rep := &reconcile.Report{Results: []reconcile.ActionResult{
		{Index: 0, Kind: reconcile.ActionCreatePod, Target: "default/demo-head-*", Status: reconcile.CallDone},
		{Index: 1, Kind: reconcile.ActionCreatePod, Target: "default/demo-cpu-*", Status: reconcile.CallDone},
		{Index: 2, Kind: reconcile.ActionCreatePod, Target: "default/demo-cpu-*", Status: reconcile.CallAlreadyDone},
		{Index: 3, Kind: reconcile.ActionCreatePod, Target: "default/demo-cpu-*", Status: reconcile.CallFailed, Err: errors.Join(errors.New("FailedCreateWorkerPod"), errors.New("exceeded quota"))},
		{Index: 4, Kind: reconcile.ActionDeletePod, Target: "default/w1", Status: reconcile.CallSkipped},
	}, Stopped: true}

	want := []kube.Event{
		{Type: "Normal", Reason: "HeadCreate", Message: "no head pod: creating one"},
		{Type: "Normal", Reason: "ScaleUp", Message: "scaling up: 1 of 4 worker pods running"},
		{Type: "Normal", Reason: "ScaleUp", Message: "scaling up: 1 of 4 worker pods running"},
		{Type: "Warning", Reason: "ScaleUp", Message: "scaling up: 1 of 4 worker pods running (CreatePod default/demo-cpu-* failed: FailedCreateWorkerPod: exceeded quota)"},
		{Type: "Warning", Reason: "MultipleHeads", Message: "2 head pods"},
		{Type: "Warning", Reason: "GroupNotInSpec", Message: "pods of group old are left alone"},
	}
	got := kube.ReconcileEvents(p, rep)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("ReconcileEvents (-want +got):\n%s", d)
	}

	// A dry run (no report): every action counts as done.
	dry := kube.ReconcileEvents(p, nil)
	if len(dry) != 5+2 || dry[3].Type != "Normal" || dry[4] != (kube.Event{Type: "Normal", Reason: "ScaleDown", Message: "scaling down"}) {
		t.Fatalf("dry run events: %+v", dry)
	}
	// A report that ends early (Apply refused the plan) lists no action.
	if got := kube.ReconcileEvents(p, &reconcile.Report{}); len(got) != 2 {
		t.Fatalf("events with an empty report: %+v", got)
	}

	rec := record.NewFakeRecorder(100)
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo"}}
	if err := kube.Emit(rec, obj, got); err != nil {
		t.Fatal(err)
	}
	wantLines := []string{
		"Normal HeadCreate no head pod: creating one",
		"Normal ScaleUp scaling up: 1 of 4 worker pods running",
		"Warning ScaleUp scaling up: 1 of 4 worker pods running (CreatePod default/demo-cpu-* failed: FailedCreateWorkerPod: exceeded quota)",
		"Warning MultipleHeads 2 head pods",
		"Warning GroupNotInSpec pods of group old are left alone",
	}
	if d := cmp.Diff(wantLines, drain(rec)); d != "" {
		t.Fatalf("recorded events (-want +got):\n%s", d)
	}
	// Deduplication is per call (per pass): the next pass records again.
	if err := kube.Emit(rec, obj, got[:2]); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wantLines[:2], drain(rec)); d != "" {
		t.Fatalf("second pass (-want +got):\n%s", d)
	}
}

func TestDAGEvents(t *testing.T) {
	p := dag.Plan{
		Delete: []dag.DeleteJob{{Flow: "b", Name: "wf-b", Reason: dag.Reason{Code: dag.ReasonRetry, Message: "flow b failed and is retried"}}},
		Create: []dag.CreateJob{
			{Flow: "a", Name: "wf-a", Reason: dag.Reason{Code: dag.ReasonDependenciesMet, Message: "the dependencies of flow a are satisfied"}},
			{Flow: "c", Name: "wf-c", Reason: dag.Reason{Code: dag.ReasonDependenciesMet, Message: "the dependencies of flow c are satisfied"}},
			{Flow: "d", Name: "wf-d", Reason: dag.Reason{Code: dag.ReasonDependenciesMet, Message: "the dependencies of flow d are satisfied"}},
		},
		Blocked: []dag.Blocked{
			{Flow: "e", Reasons: []dag.Reason{{Code: dag.ReasonDependency, Message: "a is Pending"}, {Code: dag.ReasonDependency, Message: "c is Pending"}}},
			{Flow: "f", Reasons: []dag.Reason{{Code: dag.ReasonNameConflict, Message: `wf-f owned by "other"`}}},
		},
	}
	rep := &dag.Report{Actions: []dag.ActionResult{
		{Kind: dag.ActionDelete, Name: "wf-b"},
		{Kind: dag.ActionCreate, Name: "wf-a"},
		{Kind: dag.ActionCreate, Name: "wf-c", Err: errors.New("forbidden")},
		{Kind: dag.ActionCreate, Name: "wf-d", Skipped: true},
	}}
	want := []kube.Event{
		{Type: "Normal", Reason: "Retry", Message: "job wf-b: flow b failed and is retried"},
		{Type: "Normal", Reason: "DependenciesMet", Message: "job wf-a: the dependencies of flow a are satisfied"},
		{Type: "Warning", Reason: "DependenciesMet", Message: "job wf-c: the dependencies of flow c are satisfied (Create wf-c failed: forbidden)"},
		{Type: "Warning", Reason: "NameConflict", Message: `flow f: wf-f owned by "other"`},
	}
	if d := cmp.Diff(want, kube.DAGEvents(p, rep)); d != "" {
		t.Fatalf("DAGEvents (-want +got):\n%s", d)
	}
	if got := kube.DAGEvents(p, nil); len(got) != 4+1 || got[3].Type != "Normal" || got[3].Message != "job wf-d: the dependencies of flow d are satisfied" {
		t.Fatalf("dry run events: %+v", got)
	}
	// A report out of step with the plan (another plan's) lists nothing.
	if got := kube.DAGEvents(p, &dag.Report{Actions: []dag.ActionResult{{Kind: dag.ActionCreate, Name: "wf-b"}}}); len(got) != 1 {
		t.Fatalf("events with a mismatched report: %+v", got)
	}
}

func TestEmitMisuse(t *testing.T) {
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo"}}
	ev := []kube.Event{{Type: "Normal", Reason: "ScaleUp", Message: "m"}}
	if err := kube.Emit(nil, obj, ev); !errors.Is(err, kube.ErrNilRecorder) {
		t.Fatalf("nil recorder: %v", err)
	}
	var typedNil *record.FakeRecorder
	if err := kube.Emit(typedNil, obj, ev); !errors.Is(err, kube.ErrNilRecorder) {
		t.Fatalf("typed nil recorder: %v", err)
	}
	rec := record.NewFakeRecorder(10)
	var nilPod *corev1.Pod
	if err := kube.Emit(rec, nilPod, ev); !errors.Is(err, kube.ErrNilEventObject) {
		t.Fatalf("nil object: %v", err)
	}
	bad := []kube.Event{{Type: "Info", Reason: "X", Message: "m"}, {Type: "Normal", Reason: "", Message: "m"}, ev[0]}
	err := kube.Emit(rec, obj, bad)
	if !errors.Is(err, kube.ErrBadEvent) {
		t.Fatalf("bad events: %v", err)
	}
	if d := cmp.Diff([]string{"Normal ScaleUp m"}, drain(rec)); d != "" {
		t.Fatalf("recorded (-want +got):\n%s", d)
	}
}

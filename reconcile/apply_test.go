package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/plancore/plancore/expectations"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/reconcile"
)

var podsGR = schema.GroupResource{Resource: "pods"}

func statuses(r reconcile.Report) []reconcile.CallStatus {
	var out []reconcile.CallStatus
	for _, a := range r.Results {
		out = append(out, a.Status)
	}
	return out
}

type applyEnv struct {
	w       *fake.World
	store   *fake.PodStore
	exec    *fake.ReconcileExecutor
	tracker *expectations.Tracker
}

func newApplyEnv(t *testing.T) *applyEnv {
	t.Helper()
	w := fake.NewWorld(3, t0)
	store := fake.NewPodStore(w, fake.PodStoreOptions{})
	tr, err := expectations.NewTracker(expectations.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &applyEnv{w: w, store: store, exec: fake.NewReconcileExecutor(store), tracker: tr}
}

func (e *applyEnv) apply(p reconcile.Plan, keepGoing bool) reconcile.Report {
	ap := reconcile.Applier{Expectations: e.tracker, Clock: e.w.Clock, KeepGoing: keepGoing, TokenPrefix: "t-"}
	// The tests read the report; Apply's error is rep.Err() when the
	// plan's expectation drops apply cleanly, as they do here.
	rep, _ := ap.Apply(context.Background(), p, e.exec)
	return rep
}

func mustDecide(t *testing.T, s reconcile.Snapshot, o reconcile.Options) reconcile.Plan {
	t.Helper()
	p, err := reconcile.Decide(s, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestApplyStopsAtFirstFailure(t *testing.T) {
	e := newApplyEnv(t)
	p := mustDecide(t, snap(cluster(group("small", 3)), head("h")), opts())
	e.exec.Quota = 1 // room for one worker: the second create exceeds it
	rep := e.apply(p, false)
	want := []reconcile.CallStatus{reconcile.CallDone, reconcile.CallFailed, reconcile.CallSkipped}
	if diff := cmp.Diff(want, statuses(rep)); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
	err := rep.Err()
	if !reconcile.IsFailure(err, reconcile.FailedCreateWorkerPod) || !apierrors.IsForbidden(err) {
		t.Fatalf("Err = %v, want FailedCreateWorkerPod joined with the quota error", err)
	}
	if !rep.Stopped {
		t.Error("report not marked stopped")
	}
	// The failed create was rolled back; the successful one is expected.
	if n := e.tracker.Len(); n != 1 {
		t.Errorf("tracker holds %d items, want 1", n)
	}
	e.exec.Quota = 0
	if rep := e.apply(p, true); !cmp.Equal(statuses(rep), []reconcile.CallStatus{reconcile.CallDone, reconcile.CallDone, reconcile.CallDone}) {
		t.Errorf("KeepGoing statuses %v", statuses(rep))
	}
}

func TestApplyToleratesNotFoundAndAlreadyExists(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	// A derived-name create that already exists is success.
	o := opts()
	o.NameMode = reconcile.NameModeDerived
	p := mustDecide(t, snap(cluster(group("small", 1)), head("h")), o)
	if _, err := e.store.CreatePod(ctx, *p.Actions[0].Create.Pod); err != nil {
		t.Fatal(err)
	}
	rep := e.apply(p, false)
	if got := statuses(rep); !cmp.Equal(got, []reconcile.CallStatus{reconcile.CallAlreadyDone}) {
		t.Fatalf("statuses %v, want already-done", got)
	}
	if rep.Err() != nil {
		t.Fatal(rep.Err())
	}

	// A scale-down delete of a pod that is gone is success; KubeRay's strict
	// unhealthy-pod delete reports it.
	gone := worker("gone", "small")
	del := mustDecide(t, snap(cluster(group("small", 0)), head("h"), gone), opts())
	if got := statuses(e.apply(del, false)); !cmp.Equal(got, []reconcile.CallStatus{reconcile.CallAlreadyDone}) {
		t.Fatalf("scale-down of a missing pod: %v", got)
	}
	failed := worker("failed", "small", phase(corev1.PodFailed))
	strict := mustDecide(t, snap(cluster(group("small", 1)), head("h"), failed), compat())
	rep = e.apply(strict, false)
	if got := statuses(rep); !cmp.Equal(got, []reconcile.CallStatus{reconcile.CallFailed}) || !apierrors.IsNotFound(rep.Err()) ||
		!reconcile.IsFailure(rep.Err(), reconcile.FailedDeleteWorkerPod) {
		t.Fatalf("strict NotFound: %v %v", got, rep.Err())
	}
}

func TestApplyUIDPreconditionProtectsARecreatedPod(t *testing.T) {
	e := newApplyEnv(t)
	ctx := context.Background()
	live, err := e.store.CreatePod(ctx, worker("w1", "small"))
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot shows an earlier pod of the same name (another UID).
	stale := worker("w1", "small")
	stale.UID = "uid-of-the-old-w1"
	p := mustDecide(t, snap(cluster(group("small", 0)), head("h"), stale), opts())
	rep := e.apply(p, false)
	if got := statuses(rep); !cmp.Equal(got, []reconcile.CallStatus{reconcile.CallAlreadyDone}) {
		t.Fatalf("statuses %v", got)
	}
	for _, pod := range e.store.Pods("ns") {
		if pod.Name == "w1" && (pod.UID != live.UID || pod.DeletionTimestamp != nil) {
			t.Fatal("the recreated pod was deleted")
		}
	}
}

func TestApplyAmbiguousCreateIsFoundByItsToken(t *testing.T) {
	e := newApplyEnv(t)
	p := mustDecide(t, snap(cluster(group("small", 1)), head("h")), opts())
	e.w.Faults.LoseResponseNext(fake.KindPodCreate, 1, apierrors.NewServerTimeout(podsGR, "create", 1))
	rep := e.apply(p, false)
	if got := statuses(rep); !cmp.Equal(got, []reconcile.CallStatus{reconcile.CallAmbiguous}) {
		t.Fatalf("statuses %v", got)
	}
	pods := e.store.Pods("ns")
	if len(pods) != 1 || pods[0].Annotations[expectations.TokenAnnotation] == "" {
		t.Fatalf("the created pod carries no token: %+v", pods)
	}
	owner := expectations.Owner{Namespace: "ns", Name: "rc", UID: "uid-rc"}
	if res, _ := e.tracker.Check(t0, owner, "small", expectations.NewView(nil)); res.Satisfied {
		t.Fatal("an ambiguous create must keep the group pending until the pod is seen")
	}
	if res, _ := e.tracker.Check(t0, owner, "small", expectations.NewView(pods)); !res.Satisfied {
		t.Fatalf("the pod carrying the token did not settle the create: %s", res)
	}
}

func TestApplyExpectationOps(t *testing.T) {
	e := newApplyEnv(t)
	owner := expectations.Owner{Namespace: "ns", Name: "rc", UID: "uid-rc"}
	if _, err := e.tracker.Record(t0, expectations.Record{Owner: owner, Group: "small", Action: expectations.Create, Pod: "w1"}); err != nil {
		t.Fatal(err)
	}
	// The snapshot shows w1: Decide settles the create and asks Apply to drop it.
	s := snap(cluster(group("small", 1)), head("h"), worker("w1", "small"))
	s.Expectations = e.tracker.Snapshot()
	p := mustDecide(t, s, opts())
	if len(p.ExpectationOps.Drop) != 1 || p.ExpectationOps.Drop[0].Pod != "w1" {
		t.Fatalf("Drop = %+v", p.ExpectationOps.Drop)
	}
	e.apply(p, false)
	if n := e.tracker.Len(); n != 0 {
		t.Fatalf("tracker holds %d items after the drop", n)
	}
	// Recreate clears the cluster's records, then records the deletion of
	// the pods its DeleteAllOf removes.
	if _, err := e.tracker.Record(t0, expectations.Record{Owner: owner, Group: "small", Action: expectations.Create, Pod: "w2"}); err != nil {
		t.Fatal(err)
	}
	h := head("h", annotate(reconcile.AnnotationRecreateHash, "OLD"))
	rc := snap(recreateCluster(), h)
	e.apply(mustDecide(t, rc, opts()), false)
	if n := e.tracker.Len(); n != 1 {
		t.Fatalf("tracker holds %d items after Recreate, want the head's delete", n)
	}
	res, _ := e.tracker.Check(t0, owner, reconcile.HeadGroupKey, expectations.NewView([]corev1.Pod{h}))
	if res.Satisfied || len(res.Pending) != 1 || res.Pending[0].Pod != "h" || res.Pending[0].Action != expectations.Delete {
		t.Fatalf("after Recreate: %s", res)
	}
	// A lagging informer still shows the head: the next pass waits instead of
	// sending the DeleteAllOf again.
	rc.Expectations = e.tracker.Snapshot()
	if p := mustDecide(t, rc, opts()); len(p.Actions) != 0 || p.ExpectationOps.ClearCluster {
		t.Fatalf("second pass over a lagging informer: %v, clear %t", p.Actions, p.ExpectationOps.ClearCluster)
	}
}

func TestApplyPatchFailureDoesNotStop(t *testing.T) {
	e := newApplyEnv(t)
	s := snap(recreateCluster(), head("h", annotate(reconcile.AnnotationKubeRayVersion, "v1.6.0")))
	p := mustDecide(t, s, opts())
	// The head in the snapshot is not in the store: the patch fails (NotFound).
	rep := e.apply(p, false)
	if got := statuses(rep); len(got) != 2 || got[0] != reconcile.CallFailed || got[1] != reconcile.CallDone {
		t.Fatalf("statuses %v: the patch failure must not stop the plan", got)
	}
	if rep.Err() != nil {
		t.Fatalf("a patch failure is only logged, got Err %v", rep.Err())
	}
}

func TestApplyRejectsMalformedActions(t *testing.T) {
	e := newApplyEnv(t)
	rep := e.apply(reconcile.Plan{Cluster: "ns/rc", ClusterUID: "uid-rc", Actions: []reconcile.Action{{Kind: reconcile.ActionDeletePod}}}, false)
	if !errors.Is(rep.Err(), reconcile.ErrInvalidPlan) {
		t.Fatalf("Err = %v, want ErrInvalidPlan", rep.Err())
	}
}

// TestQuotaThrash is KubeRay #4540 (KubeRay #4540): a quota leaves room for one host of
// a second replica group. KubeRay deletes the partial group and creates it
// again on every pass; plancore keeps it, retries only the missing host with
// backoff, and deletes it once GroupFormationTimeout passes.
func TestQuotaThrash(t *testing.T) {
	run := func(o reconcile.Options) (deletes, creates int, forming []reconcile.FormingGroup) {
		w := fake.NewWorld(5, t0)
		loop, err := fake.NewRayClusterLoop(w, fake.PodStoreOptions{}, expectations.Options{}, cluster(mhGroup("tpu", 2, 2)), o)
		if err != nil {
			t.Fatal(err)
		}
		loop.Exec.Quota = 4 // head + 3 workers: the second replica can get one host
		for range 30 {
			w.Clock.Advance(time.Second)
			if _, _, err := loop.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		return w.Calls.Count(fake.KindPodDelete), w.Calls.Count(fake.KindPodCreate), loop.Forming
	}
	d, c, _ := run(compat())
	t.Logf("KubeRay v1.7.0: %d deletes, %d creates in 30 passes", d, c)
	if d < 5 || c < 10 {
		t.Errorf("compat: %d deletes and %d creates in 30 passes; KubeRay thrashes", d, c)
	}
	d, c, forming := run(opts())
	t.Logf("plancore: %d deletes, %d creates in 30 passes, forming %+v", d, c, forming)
	if d != 0 || c > 10 {
		t.Errorf("default: %d deletes and %d creates in 30 passes; want no deletes and a few backed-off retries", d, c)
	}
	if len(forming) != 1 || !cmp.Equal(forming[0].Missing, []int{1}) {
		t.Errorf("forming = %+v, want one group missing host 1", forming)
	}
	o := opts()
	o.GroupFormationTimeout = 10 * time.Second
	if d, _, _ := run(o); d == 0 {
		t.Error("a group that cannot form within GroupFormationTimeout must be deleted")
	}
}

// TestPlanRuns: consecutive creates or deletes of one group form one run;
// a DeleteAllOf, a patch, or a change of group or kind starts a new one.
func TestPlanRuns(t *testing.T) {
	a := func(k reconcile.ActionKind, g string) reconcile.Action { return reconcile.Action{Kind: k, Group: g} }
	p := reconcile.Plan{Actions: []reconcile.Action{
		a(reconcile.ActionPatchPodAnnotations, ""), a(reconcile.ActionDeleteAllOf, ""),
		a(reconcile.ActionCreatePod, "headgroup"),
		a(reconcile.ActionDeletePod, "g"), a(reconcile.ActionDeletePod, "g"),
		a(reconcile.ActionCreatePod, "g"), a(reconcile.ActionCreatePod, "g"), a(reconcile.ActionCreatePod, "g"),
		a(reconcile.ActionCreatePod, "h"),
		a(reconcile.ActionCreateReplicaGroup, "tpu"), a(reconcile.ActionCreateReplicaGroup, "tpu"),
	}}
	want := []reconcile.Run{{0, 1}, {1, 2}, {2, 3}, {3, 5}, {5, 8}, {8, 9}, {9, 11}}
	if diff := cmp.Diff(want, p.Runs()); diff != "" {
		t.Errorf("Runs (-want +got):\n%s", diff)
	}
}

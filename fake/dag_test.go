package fake

import (
	"context"
	"errors"
	"testing"

	"github.com/plancore/plancore/dag"
)

func TestDAGRunnerExecutorContract(t *testing.T) {
	w := NewWorld(1, t0)
	r := NewDAGRunner(w)
	ctx := context.Background()
	c := dag.CreateJob{Name: "jf-a", Namespace: "ns", Labels: map[string]string{dag.LabelCreatedByJobFlow: "ns.jf"}}
	if err := r.CreateJob(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := r.CreateJob(ctx, c); !errors.Is(err, dag.ErrAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	jobs := r.Jobs("ns")
	if len(jobs) != 1 || jobs[0].Phase != dag.JobPhaseNone || jobs[0].UID == "" || !jobs[0].CreationTime.Equal(t0) {
		t.Fatalf("jobs = %+v", jobs)
	}
	if err := r.DeleteJob(ctx, dag.DeleteJob{Name: "jf-a", Namespace: "ns", UID: "wrong"}); err == nil || errors.Is(err, dag.ErrNotFound) {
		t.Fatalf("uid precondition: %v", err)
	}
	if err := r.DeleteJob(ctx, dag.DeleteJob{Name: "jf-a", Namespace: "ns", UID: jobs[0].UID}); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteJob(ctx, dag.DeleteJob{Name: "jf-a", Namespace: "ns"}); !errors.Is(err, dag.ErrNotFound) {
		t.Fatalf("delete of a missing job: %v", err)
	}
	st := dag.Status{State: dag.State{Phase: dag.PhaseRunning}}
	if err := r.UpdateStatus(ctx, "ns", "jf", st); err != nil || r.Status("ns", "jf").State.Phase != dag.PhaseRunning {
		t.Fatalf("status: %v", err)
	}
	if n := w.Calls.Count(KindDAGCreate); n != 2 {
		t.Fatalf("recorded %d creates", n)
	}
	w.Faults.FailNext(KindDAGCreate, 1, errors.New("down"))
	if err := r.CreateJob(ctx, c); err == nil || len(r.Jobs("ns")) != 0 {
		t.Fatalf("injected failure must not create: %v", err)
	}
}

func TestDAGRunnerAdvancesToScriptedEnds(t *testing.T) {
	w := NewWorld(3, t0)
	r := NewDAGRunner(w)
	r.Script = map[string][]dag.JobPhase{"jf-a": {dag.JobPhaseFailed, dag.JobPhaseCompleted}}
	ctx := context.Background()
	create := func() {
		if err := r.CreateJob(ctx, dag.CreateJob{Name: "jf-a", Namespace: "ns"}); err != nil {
			t.Fatal(err)
		}
	}
	create()
	seen := []dag.JobPhase{}
	for range 10 {
		r.Step()
		seen = append(seen, r.Jobs("ns")[0].Phase)
	}
	if last := seen[len(seen)-1]; last != dag.JobPhaseFailed {
		t.Fatalf("first attempt ended %s (%v)", last, seen)
	}
	if j := r.Jobs("ns")[0]; j.RunningDuration == nil {
		t.Fatal("a finished job reports no running duration")
	}
	_ = r.DeleteJob(ctx, dag.DeleteJob{Name: "jf-a", Namespace: "ns"})
	create()
	r.Finish()
	if p := r.Jobs("ns")[0].Phase; p != dag.JobPhaseCompleted {
		t.Fatalf("second attempt ended %s", p)
	}
}

func TestDAGRunnerInformerLag(t *testing.T) {
	w := NewWorld(5, t0)
	r := NewDAGRunner(w)
	r.Lag = 1 // always the previous view once one exists
	wf := dag.Workflow{Name: "jf", Namespace: "ns", UID: "uid-jf"}
	if s := r.Snapshot(wf); len(s.Jobs) != 0 {
		t.Fatal("first view not empty")
	}
	_ = r.CreateJob(context.Background(), dag.CreateJob{Name: "jf-a", Namespace: "ns"})
	if s := r.Snapshot(wf); len(s.Jobs) != 0 {
		t.Fatalf("lagging view shows %d jobs", len(s.Jobs))
	}
	r.Lag = 0
	if s := r.Snapshot(wf); len(s.Jobs) != 1 || !s.Now.Equal(t0) {
		t.Fatalf("fresh view: %+v", s)
	}
}

// TestDAGRunnerSetTasks checks that a job reports the task counts set on it
// and that callers get copies: changing a returned job changes nothing.
func TestDAGRunnerSetTasks(t *testing.T) {
	r := NewDAGRunner(NewWorld(1, t0))
	if err := r.CreateJob(context.Background(), dag.CreateJob{Name: "jf-ps", Namespace: "ns"}); err != nil {
		t.Fatal(err)
	}
	if r.SetTasks("ns", "missing", nil) || !r.SetTasks("ns", "jf-ps", map[string]map[string]int32{"ps": {"Running": 1}}) {
		t.Fatal("SetTasks found the wrong jobs")
	}
	got := r.Jobs("ns")[0].TaskStatusCount
	if got["ps"].Phase["Running"] != 1 {
		t.Fatalf("task counts = %v", got)
	}
	got["ps"].Phase["Running"] = 9
	got["x"] = dag.TaskState{}
	if again := r.Jobs("ns")[0].TaskStatusCount; again["ps"].Phase["Running"] != 1 || len(again) != 1 {
		t.Fatalf("a caller's change leaked into the runner: %v", again)
	}
}

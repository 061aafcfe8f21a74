package dag_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plancore/plancore/dag"
)

// TestReasonFacts: every fact a reason's message states is a typed field
// of the reason, on the waiting record (Plan.Blocked) and on the actions
// (Plan.Create, Plan.Delete), so that a controller never parses Message.
// Leaving a field unset where its reason is built (the fact only in the
// message, as before) makes that row fail.
func TestReasonFacts(t *testing.T) {
	C, R, F := dag.JobPhaseCompleted, dag.JobPhaseRunning, dag.JobPhaseFailed
	failedAt := t0.Add(-5 * time.Second)
	failed := job("a", F)
	failed.CreationTime = failedAt.Add(-time.Minute)
	ran := time.Minute
	failed.RunningDuration = &ran // ends at failedAt
	retried := wf(dag.Flow{Name: "a", Retry: &dag.Retry{Limit: 2, Backoff: dag.Backoff{Duration: 10 * time.Second}}})
	retried.Status.State.Phase = dag.PhaseRunning
	capped := wf(fl("a"), fl("b"), fl("c"))
	capped.Spec.Parallelism = 2
	final := wf(fl("a"))
	final.Spec.Finally = []dag.Flow{fl("notify")}
	tasks := job("ps", R)
	tasks.TaskStatusCount = map[string]dag.TaskState{"ps": {Phase: map[string]int32{"Running": 1}}}
	probe := wf(fl("ps"), probed("workers", dag.Probe{TaskStatus: []dag.TaskStatusProbe{{Task: "ps", Phase: "Running", Min: 3}}}, "ps"))

	blocked := func(p dag.Plan, flow string) []dag.Reason {
		for _, b := range p.Blocked {
			if b.Flow == flow {
				return b.Reasons
			}
		}
		return nil
	}
	rows := []struct {
		name string
		wf   dag.Workflow
		jobs []dag.Job
		opt  dag.Options
		got  func(dag.Plan) []dag.Reason
		want []dag.Reason
	}{
		{"dependency: target, awaited result and its state", wf(fl("a"), fl("b", "a")), []dag.Job{job("a", R)}, dag.Default(),
			func(p dag.Plan) []dag.Reason { return blocked(p, "b") },
			[]dag.Reason{{Code: dag.ReasonDependency, Facts: dag.ReasonFacts{Target: "a", Result: "Succeeded", State: "Running"}}}},
		{"dependency in VolcanoCompat: target and its job's state", wf(fl("a"), fl("b", "a")), nil, dag.VolcanoCompat(),
			func(p dag.Plan) []dag.Reason { return blocked(p, "b") },
			[]dag.Reason{{Code: dag.ReasonDependency, Facts: dag.ReasonFacts{Target: "a", State: "NotCreated"}}}},
		{"backoff: its deadline", retried, []dag.Job{failed}, dag.Default(),
			func(p dag.Plan) []dag.Reason { return blocked(p, "a") },
			[]dag.Reason{{Code: dag.ReasonBackoff, Facts: dag.ReasonFacts{Until: failedAt.Add(10 * time.Second)}}}},
		{"parallelism: active jobs and the limit", capped, nil, dag.Default(),
			func(p dag.Plan) []dag.Reason { return blocked(p, "c") },
			[]dag.Reason{{Code: dag.ReasonParallelism, Facts: dag.ReasonFacts{Active: 2, Limit: 2}}}},
		{"main not final: how many", final, []dag.Job{job("a", R)}, dag.Default(),
			func(p dag.Plan) []dag.Reason { return blocked(p, "notify") },
			[]dag.Reason{{Code: dag.ReasonMainNotFinal, Facts: dag.ReasonFacts{Count: 1}}}},
		{"name conflict: the job and its owner", wf(fl("a")), []dag.Job{foreign("a", R)}, dag.Default(),
			func(p dag.Plan) []dag.Reason { return blocked(p, "a") },
			[]dag.Reason{{Code: dag.ReasonNameConflict, Facts: dag.ReasonFacts{Job: "jf-a", Owner: "ns.other"}}}},
		{"cycle: its size and the issue's field", wf(fl("a", "b"), fl("b", "a")), nil, dag.Default(),
			func(p dag.Plan) []dag.Reason { return blocked(p, "b") },
			[]dag.Reason{{Code: dag.ReasonCycle, Facts: dag.ReasonFacts{Count: 2, Field: "flows[0].dependsOn"}}}},
		{"unknown target: the name and the reference", wf(fl("a", "zz")), nil, dag.Default(),
			func(p dag.Plan) []dag.Reason { return blocked(p, "a") },
			[]dag.Reason{{Code: dag.ReasonUnknownTarget, Facts: dag.ReasonFacts{Target: "zz", Field: "flows[0].dependsOn.targets[0]"}}}},
		{"probe: the entry and what it saw", probe, []dag.Job{tasks}, dag.Default(),
			func(p dag.Plan) []dag.Reason { return blocked(p, "workers") },
			[]dag.Reason{{Code: dag.ReasonProbe, Facts: dag.ReasonFacts{Target: "ps", Job: "jf-ps", Probe: &dag.ProbeFacts{Kind: "taskStatus", Entry: 0,
				State: dag.ProbeBelowMinimum, Task: "ps", TaskPhase: "Running", Tasks: 1, MinTasks: 3}}}}},
		{"create: the flow whose dependencies are met", wf(fl("a"), fl("b", "a")), []dag.Job{job("a", C)}, dag.Default(),
			func(p dag.Plan) []dag.Reason { return []dag.Reason{p.Create[0].Reason} },
			[]dag.Reason{{Code: dag.ReasonDependenciesMet, Facts: dag.ReasonFacts{Flow: "b"}}}},
		{"finally create: the main part's outcome", final, []dag.Job{job("a", C)}, dag.Default(),
			func(p dag.Plan) []dag.Reason { return []dag.Reason{p.Create[0].Reason} },
			[]dag.Reason{{Code: dag.ReasonFinally, Facts: dag.ReasonFacts{Outcome: "Succeeded"}}}},
		{"retry delete: the flow", retried, []dag.Job{failed}, dag.Default(),
			func(p dag.Plan) []dag.Reason { return []dag.Reason{p.Delete[0].Reason, blocked(p, "a")[0]} },
			[]dag.Reason{{Code: dag.ReasonRetry, Facts: dag.ReasonFacts{Flow: "a"}}, {Code: dag.ReasonRetrying, Facts: dag.ReasonFacts{Job: "jf-a"}}}},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			if tc.name == "retry delete: the flow" {
				now = failedAt.Add(10 * time.Second)
			}
			p, err := dag.Decide(dag.Snapshot{Flow: tc.wf, Jobs: tc.jobs, Now: now}, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			got := tc.got(p)
			if d := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(dag.Reason{}, "Message"), cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("reasons (-want +got):\n%s\nplan:\n%s", d, p)
			}
			for _, r := range got {
				if r.Message == "" {
					t.Errorf("%s: no message", r.Code)
				}
			}
		})
	}
	t.Run("retry create: the flow and the attempt", func(t *testing.T) {
		due := failedAt.Add(10 * time.Second)
		p, err := dag.Decide(dag.Snapshot{Flow: retried, Jobs: []dag.Job{failed}, Now: due}, dag.Default())
		if err != nil {
			t.Fatal(err)
		}
		w := retried
		w.Status = p.Status
		if p, err = dag.Decide(dag.Snapshot{Flow: w, Now: due}, dag.Default()); err != nil || len(p.Create) != 1 {
			t.Fatalf("%v\n%s", err, p)
		}
		want := dag.Reason{Code: dag.ReasonRetry, Facts: dag.ReasonFacts{Flow: "a", Attempt: 2}}
		if d := cmp.Diff(want, p.Create[0].Reason, cmpopts.IgnoreFields(dag.Reason{}, "Message")); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
}

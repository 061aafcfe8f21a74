package dag_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/dag"
)

// TestCheckPlanCatchesBrokenPlans breaks a valid plan in one way at a time and
// checks that CheckPlan names the break.
func TestCheckPlanCatchesBrokenPlans(t *testing.T) {
	wf := dag.Workflow{Name: "jf", Namespace: "ns", UID: "uid-jf", Spec: dag.Spec{
		Flows:   []dag.Flow{{Name: "a"}, {Name: "b", DependsOn: &dag.DependsOn{Targets: []string{"a"}}}, {Name: "c"}},
		Finally: []dag.Flow{{Name: "fin"}}, Parallelism: 2,
	}}
	in := dag.Snapshot{Flow: wf, Now: t0}
	first, err := dag.Decide(in, dag.Default())
	if err != nil {
		t.Fatal(err)
	}
	// Apply the first plan: a runs, c is pending.
	in.Flow.Status = first.Status
	for _, cr := range first.Create {
		in.Jobs = append(in.Jobs, dag.Job{Name: cr.Name, UID: types.UID("uid-" + cr.Name), Labels: cr.Labels, Phase: dag.JobPhaseRunning, CreationTime: t0})
	}
	in.Now = t0.Add(1)
	plan, err := dag.Decide(in, dag.Default())
	if err != nil {
		t.Fatal(err)
	}
	if err := dag.CheckPlan(in, dag.Default(), plan); err != nil {
		t.Fatalf("the valid plan fails the check: %v\n%s", err, plan)
	}
	job := in.Jobs[0].Name
	for _, b := range []struct {
		name, want string
		brk        func(p *dag.Plan)
	}{
		{"an observed job created again", "created, but it is observed", func(p *dag.Plan) {
			p.Create = append(p.Create, dag.CreateJob{Flow: "a", Name: job})
		}},
		{"more jobs than the parallelism", "exceed parallelism 2", func(p *dag.Plan) {
			p.Create = append(p.Create, dag.CreateJob{Flow: "b", Name: "jf-b"})
		}},
		{"the finally flow before the main flows", "finally flow fin created before main flow", func(p *dag.Plan) {
			p.Create = append(p.Create, dag.CreateJob{Flow: "fin", Name: "jf-fin"})
		}},
		{"a job in two lists", "is in 2 status lists", func(p *dag.Plan) {
			p.Status.FailedJobs = append(p.Status.FailedJobs, job)
		}},
		{"a success never observed", "Succeeded, but its job", func(p *dag.Plan) {
			p.Status.JobStatusList[0].Outcome = dag.OutcomeSucceeded
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			p := plan
			p.Create = append([]dag.CreateJob(nil), plan.Create...)
			p.Status.FailedJobs = append([]string(nil), plan.Status.FailedJobs...)
			p.Status.JobStatusList = append([]dag.JobStatus(nil), plan.Status.JobStatusList...)
			b.brk(&p)
			if err := dag.CheckPlan(in, dag.Default(), p); err == nil || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("CheckPlan = %v, want an error containing %q", err, b.want)
			}
		})
	}
}

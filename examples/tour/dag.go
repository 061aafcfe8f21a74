package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/fake"
)

func init() {
	register(3, "dag", "a workflow of Jobs with dependencies and retries (Volcano's JobFlow)", runDAG)
}

// mlPipeline is the seed's ML pipeline: preprocessing, then training and
// feature engineering in parallel, then evaluation, then deployment, with a
// finally flow that reports the outcome.
func mlPipeline() dag.Workflow {
	dep := func(name string, targets ...string) dag.Flow {
		f := dag.Flow{Name: name}
		if len(targets) > 0 {
			f.DependsOn = &dag.DependsOn{Targets: targets}
		}
		return f
	}
	training := dep("model-training", "data-preprocess")
	training.Retry = &dag.Retry{Limit: 2, Backoff: dag.Backoff{Duration: 30 * time.Second, Factor: 2, Cap: 5 * time.Minute}}
	training.Patch = []byte(`{"jobSpec":{"tasks":[{"name":"trainer","replicas":4}]}}`)
	return dag.Workflow{Name: "ml-pipeline", Namespace: "default", UID: "uid-ml-pipeline", Spec: dag.Spec{
		Flows: []dag.Flow{
			dep("data-preprocess"),
			training,
			dep("feature-engineering", "data-preprocess"),
			dep("model-evaluation", "model-training", "feature-engineering"),
			dep("model-deploy", "model-evaluation"),
		},
		Finally:         []dag.Flow{{Name: "notify"}},
		JobRetainPolicy: dag.RetainPolicyRetain,
	}}
}

func runDAG(w *page) error {
	wf := mlPipeline()
	if err := dag.Check(wf, dag.Default()); err != nil {
		return err
	}
	broken := wf
	broken.Spec.Flows = append([]dag.Flow{}, wf.Spec.Flows...)
	broken.Spec.Flows[0] = dag.Flow{Name: "data-preprocess", DependsOn: &dag.DependsOn{Targets: []string{"model-deploy", "labels"}}}
	w.term("JobFlow")
	fmt.Fprintln(w, "An ML pipeline: preprocess, then train and engineer features in parallel, then")
	fmt.Fprintln(w, "evaluate, then deploy, with a finally flow that always runs at the end. Checking")
	fmt.Fprintln(w, "an edit that adds a cycle and names a missing flow reports every offender at")
	fmt.Fprintln(w, "once, each with its field path and value:")
	w.calls(`err := dag.Check(broken, dag.Default())
for _, e := range inv.Errors {`)
	var inv *plancore.InvalidError
	err := dag.Check(broken, dag.Default())
	if !errors.As(err, &inv) || !errors.Is(err, dag.ErrInvalidInput) {
		return fmt.Errorf("the broken edit passed Check: %v", err)
	}
	for _, e := range inv.Errors {
		fmt.Fprintf(w, "  %s\n", e)
	}

	world := fake.NewWorld(42, time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	runner := fake.NewDAGRunner(world)
	// Training fails once, then succeeds on its retry.
	runner.Script = map[string][]dag.JobPhase{"ml-pipeline-model-training": {dag.JobPhaseFailed, dag.JobPhaseCompleted}}
	fmt.Fprintln(w, "\nRunning it against the fake job runner (training fails once and is retried), one")
	fmt.Fprintln(w, "plan per minute: the plan lists the Jobs to create and delete and the new status:")
	w.calls(`s := runner.Snapshot(wf)
res, err := dag.Decide(s, dag.Default())
if _, err := dag.Apply(ctx, res, runner); err != nil {`)
	ctx := context.Background()
	for round := 1; round <= 30; round++ {
		s := runner.Snapshot(wf)
		res, err := dag.Decide(s, dag.Default())
		if err != nil {
			return err
		}
		var acts []string
		for _, d := range res.Delete {
			acts = append(acts, fmt.Sprintf("delete %s (%s)", d.Name, d.Reason.Code))
		}
		for _, c := range res.Create {
			acts = append(acts, fmt.Sprintf("create %s (attempt %d)", c.Name, c.Attempt))
		}
		if res.RequeueAfter > 0 {
			acts = append(acts, fmt.Sprintf("requeue after %v", res.RequeueAfter))
		}
		if len(acts) == 0 {
			acts = append(acts, "nothing to do")
		}
		fmt.Fprintf(w, "  %s  %-9s %s\n", s.Now.Format("15:04:05"), res.Status.State.Phase, strings.Join(acts, "; "))
		if _, err := dag.Apply(ctx, res, runner); err != nil {
			return err
		}
		if p := res.Status.State.Phase; p == dag.PhaseSucceed || p == dag.PhaseFailed {
			break
		}
		runner.Step()
		runner.Step()
		world.Clock.Advance(time.Minute)
	}
	wf.Status = runner.Status(wf.Namespace, wf.Name)
	fmt.Fprintln(w, "\nThe finished workflow as a Mermaid diagram (paste it into a Markdown file):")
	w.calls(`fmt.Fprint(w, dag.RenderMermaid(wf))`)
	fmt.Fprint(w, dag.RenderMermaid(wf))
	fmt.Fprintf(w, "Calls made: %d creates, %d deletes, %d status writes.\n",
		world.Calls.Count(fake.KindDAGCreate), world.Calls.Count(fake.KindDAGDelete), world.Calls.Count(fake.KindDAGStatus))
	return nil
}

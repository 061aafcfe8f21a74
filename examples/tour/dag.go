package main

import (
	"fmt"
	"io"

	"github.com/plancore/plancore/dag"
)

func init() { register(3, "dag: the ML pipeline as a JobFlow", runDAG) }

// mlPipeline is the seed's ML pipeline: preprocess, then training and feature
// engineering in parallel, then evaluation, then deployment.
func mlPipeline() dag.Workflow {
	dep := func(name string, targets ...string) dag.Flow {
		f := dag.Flow{Name: name}
		if len(targets) > 0 {
			f.DependsOn = &dag.DependsOn{Targets: targets}
		}
		return f
	}
	return dag.Workflow{Name: "ml-pipeline", Namespace: "default", UID: "uid-ml-pipeline", Spec: dag.Spec{
		Flows: []dag.Flow{
			dep("data-preprocess"),
			dep("model-training", "data-preprocess"),
			dep("feature-engineering", "data-preprocess"),
			dep("model-evaluation", "model-training", "feature-engineering"),
			dep("model-deploy", "model-evaluation"),
		},
		JobRetainPolicy: dag.RetainPolicyRetain,
	}}
}

func runDAG(w io.Writer) error {
	wf := mlPipeline()
	order, err := dag.Topo(wf, dag.Default())
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "Validation is O(V+E) (Kahn's algorithm); the planner reuses its order:")
	for k, i := range order {
		fmt.Fprintf(w, "  %d. %s\n", k+1, wf.Spec.Flows[i].Name)
	}
	broken := wf
	broken.Spec.Flows = append([]dag.Flow{}, wf.Spec.Flows...)
	broken.Spec.Flows[0] = dag.Flow{Name: "data-preprocess", DependsOn: &dag.DependsOn{Targets: []string{"model-deploy", "labels"}}}
	fmt.Fprintln(w, "A broken edit (preprocess waits for deploy and for an unknown flow) is rejected with every offender:")
	for _, is := range dag.Validate(broken, dag.Default()) {
		fmt.Fprintf(w, "  %s\n", is)
	}
	return nil
}

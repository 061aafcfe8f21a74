package dag_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/fake"
	"github.com/plancore/plancore/internal/golden"
)

// goldenInput is one transcript's input: a JobFlow run against the fake
// runner (fake.NewWorld(7, t0)) for Rounds rounds; each round reads a
// snapshot, plans, applies the plan and then moves the jobs on.
type goldenInput struct {
	// JobFlow is the workflow, a JobFlow object as dag.DecodeJobFlow reads it.
	JobFlow map[string]any `json:"jobFlow"`
	// Options is default or VolcanoCompat.
	Options string `json:"options"`
	Rounds  int    `json:"rounds"`
	// Script fixes the end phase of each job's attempts, in order.
	Script map[string][]dag.JobPhase `json:"script"`
	// Setup prepares the runner before the first round.
	Setup []goldenOp `json:"setup"`
	// After says how the jobs move on after round k; a round it does not
	// list runs Otherwise, and without Otherwise every job ends (Finish).
	After     map[int][]goldenOp `json:"after"`
	Otherwise *[]goldenOp        `json:"otherwise"`
	// Probes are the probe results the executor reports before round k.
	Probes map[int][]goldenProbe `json:"probes"`
	// Render appends the Mermaid and DOT pictures of the final state.
	Render bool `json:"render"`
}

// goldenOp is one change of the fake runner, exactly one of its fields.
type goldenOp struct {
	// Finish ends every running job with its scripted phase; Step moves
	// every job one phase on.
	Finish bool `json:"finish"`
	Step   bool `json:"step"`
	// SetPhase sets job Job's phase; SetTasks its tasks' pod counts by phase.
	SetPhase *struct {
		Job   string       `json:"job"`
		Phase dag.JobPhase `json:"phase"`
	} `json:"setPhase"`
	SetTasks *struct {
		Job   string                      `json:"job"`
		Tasks map[string]map[string]int32 `json:"tasks"`
	} `json:"setTasks"`
	// CreateJob creates a job directly, as another controller could.
	CreateJob *struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"createJob"`
	// Lag is the share of status reads the runner answers from a stale view.
	Lag *float64 `json:"lag"`
	// Fault fails (Fail) or loses the answer of (Lose) the next call of Kind.
	Fault *struct {
		Kind string `json:"kind"`
		Fail string `json:"fail"`
		Lose string `json:"lose"`
	} `json:"fault"`
}

// goldenProbe is a probe result, taken Age before the round's snapshot.
type goldenProbe struct {
	Flow  string          `json:"flow"`
	Entry int             `json:"entry"`
	OK    bool            `json:"ok"`
	Age   golden.Duration `json:"age"`
}

func (op goldenOp) apply(w *fake.World, r *fake.DAGRunner) error {
	switch {
	case op.Finish:
		r.Finish()
	case op.Step:
		r.Step()
	case op.SetPhase != nil:
		r.SetPhase("ns", op.SetPhase.Job, op.SetPhase.Phase)
	case op.SetTasks != nil:
		r.SetTasks("ns", op.SetTasks.Job, op.SetTasks.Tasks)
	case op.CreateJob != nil:
		return r.CreateJob(context.Background(), dag.CreateJob{Name: op.CreateJob.Name, Namespace: "ns", Labels: op.CreateJob.Labels})
	case op.Lag != nil:
		r.Lag = *op.Lag
	case op.Fault != nil && op.Fault.Fail != "":
		w.Faults.FailNext(op.Fault.Kind, 1, errors.New(op.Fault.Fail))
	case op.Fault != nil && op.Fault.Lose != "":
		w.Faults.LoseResponseNext(op.Fault.Kind, 1, errors.New(op.Fault.Lose))
	default:
		return errors.New("the operation does nothing")
	}
	return nil
}

// TestGolden runs each testdata/*.txt; go test -run TestGolden -update
// rewrites their outputs.
func TestGolden(t *testing.T) {
	golden.Run(t, "testdata", func(t *testing.T, input []byte) string {
		in := golden.Decode[goldenInput](t, input)
		doc, err := yaml.Marshal(in.JobFlow)
		if err != nil {
			t.Fatal(err)
		}
		w, err := dag.DecodeJobFlow(doc)
		if err != nil {
			t.Fatal(err)
		}
		var opt dag.Options
		switch in.Options {
		case "", "default":
		case "VolcanoCompat":
			opt = dag.VolcanoCompat()
		default:
			t.Fatalf("unknown options %q (default or VolcanoCompat)", in.Options)
		}
		return runScenario(t, path.Base(t.Name()), in, w, opt)
	})
}

func runScenario(t *testing.T, name string, in goldenInput, w dag.Workflow, opt dag.Options) string {
	world := fake.NewWorld(7, t0)
	r := fake.NewDAGRunner(world)
	r.Script = in.Script
	ops := func(what string, ops []goldenOp) {
		for _, op := range ops {
			if err := op.apply(world, r); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}
	ops("setup", in.Setup)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", name)
	for k := 1; k <= in.Rounds; k++ {
		s := r.Snapshot(w)
		for _, p := range in.Probes[k] {
			s.ProbeResults = append(s.ProbeResults, dag.ProbeResult{Flow: p.Flow, Entry: p.Entry, OK: p.OK, Time: s.Now.Add(-p.Age.D())})
		}
		res, err := dag.Decide(s, opt)
		if err != nil {
			t.Fatalf("round %d: %v", k, err)
		}
		fmt.Fprintf(&b, "\n== round %d at %s, %d jobs observed\n", k, s.Now.Format("15:04:05"), len(s.Jobs))
		for _, pr := range s.ProbeResults {
			fmt.Fprintf(&b, "probe result %s[%d] ok=%v at %s\n", pr.Flow, pr.Entry, pr.OK, pr.Time.Format("15:04:05"))
		}
		b.WriteString(res.String())
		b.WriteString(res.Status.String())
		rep, err := dag.Apply(context.Background(), res, r)
		for _, a := range rep.Actions {
			switch {
			case a.Skipped:
				fmt.Fprintf(&b, "apply %s %s: skipped\n", a.Kind, a.Name)
			case a.Err != nil:
				fmt.Fprintf(&b, "apply %s %s: %v\n", a.Kind, a.Name, a.Err)
			}
		}
		if err != nil {
			fmt.Fprintf(&b, "apply failed: %v\n", err)
		}
		switch after, ok := in.After[k]; {
		case ok:
			ops(fmt.Sprintf("after round %d", k), after)
		case in.Otherwise != nil:
			ops(fmt.Sprintf("after round %d", k), *in.Otherwise)
		default:
			r.Finish()
		}
		world.Clock.Advance(time.Minute)
	}
	if in.Render {
		w.Status = r.Status(w.Namespace, w.Name)
		b.WriteString("\n== mermaid\n")
		b.WriteString(dag.RenderMermaid(w))
		b.WriteString("\n== dot\n")
		b.WriteString(dag.RenderDOT(w))
	}
	return b.String()
}

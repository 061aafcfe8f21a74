package dag_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/fake"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/")

// scenario is one golden transcript: a workflow run against the fake runner
// for a number of rounds; each round plans, applies and advances the jobs.
type scenario struct {
	name   string
	wf     dag.Workflow
	opt    dag.Options
	rounds int
	// script fixes the end phase of each job's attempts.
	script map[string][]dag.JobPhase
	// setup prepares the runner (extra jobs, lag, faults).
	setup func(w *fake.World, r *fake.DAGRunner)
	// step advances the jobs after round k (default: every job to its end).
	step func(r *fake.DAGRunner, k int)
	// render appends the Mermaid picture of the final state.
	render bool
	// probes returns the probe results the executor reports before round k.
	probes func(k int, now time.Time) []dag.ProbeResult
}

func failFast(w dag.Workflow, on bool) dag.Workflow {
	w.Spec.FailFast = &on
	return w
}

func scenarios() []scenario {
	chain := wf(fl("a"), fl("b", "a"), fl("c", "b"))
	diamond := wf(fl("a"), fl("b", "a"), fl("c", "a"), fl("d", "b", "c"))
	F, C := dag.JobPhaseFailed, dag.JobPhaseCompleted
	retrying := wf(dag.Flow{Name: "a", Retry: &dag.Retry{Limit: 2, Backoff: dag.Backoff{Duration: 90 * time.Second, Factor: 2}}}, fl("b", "a"))
	withFinally := wf(fl("a"), fl("b", "a"))
	withFinally.Spec.Finally = []dag.Flow{fl("cleanup"), dep("alert", "a.Failed || b.Failed")}
	parallel := wf(fl("a"), fl("b"), fl("c"), fl("d"), fl("e"))
	parallel.Spec.Parallelism = 2
	return []scenario{
		{name: "chain_default", wf: chain, rounds: 4},
		{name: "chain_compat", wf: chain, opt: dag.VolcanoCompat(), rounds: 5},
		{name: "diamond_default", wf: diamond, rounds: 4, render: true},
		{name: "diamond_compat", wf: diamond, opt: dag.VolcanoCompat(), rounds: 5},
		{name: "failure_failfast_default", wf: diamond, rounds: 5, script: map[string][]dag.JobPhase{"jf-b": {F}}, step: func(r *fake.DAGRunner, k int) {
			switch k {
			case 2:
				r.SetPhase("ns", "jf-b", F) // b fails while c still runs
				r.SetPhase("ns", "jf-c", dag.JobPhaseRunning)
			case 3:
				r.SetPhase("ns", "jf-c", C)
			default:
				r.Finish()
			}
		}, render: true},
		{name: "failure_failfast_off_default", wf: failFast(wf(fl("a"), fl("b", "a"), fl("c"), fl("d", "c")), false), rounds: 4, script: map[string][]dag.JobPhase{"jf-a": {F}}, render: true},
		{name: "failure_compat", wf: diamond, opt: dag.VolcanoCompat(), rounds: 4, script: map[string][]dag.JobPhase{"jf-b": {dag.JobPhaseTerminated}}},
		{name: "retry_backoff_default", wf: retrying, rounds: 9, script: map[string][]dag.JobPhase{"jf-a": {F, F, C}}},
		{name: "retry_exhausted_default", wf: retrying, rounds: 9, script: map[string][]dag.JobPhase{"jf-a": {F, F, F}}},
		{name: "retain_delete_default", wf: withRetain(chain, dag.RetainPolicyDelete), rounds: 5},
		{name: "retain_delete_compat", wf: withRetain(chain, dag.RetainPolicyDelete), opt: dag.VolcanoCompat(), rounds: 6},
		{name: "duplicates_default", wf: wf(fl("a"), fl("b", "a"), fl("a")), rounds: 2},
		{name: "duplicates_compat", wf: wf(fl("a"), fl("b", "a"), fl("a")), opt: dag.VolcanoCompat(), rounds: 4},
		{name: "cycle_default", wf: wf(fl("a"), fl("b", "c"), fl("c", "b"), fl("d", "c")), rounds: 2, render: true},
		{name: "cycle_compat", wf: wf(fl("a"), fl("b", "c"), fl("c", "b"), fl("d", "c")), opt: dag.VolcanoCompat(), rounds: 3},
		{name: "depends_example4", wf: wf(fl("train"), dep("notify", "train.Failed"), fl("publish", "train")), rounds: 3,
			script: map[string][]dag.JobPhase{"jf-train": {F}}, render: true},
		{name: "finally_after_failure", wf: withFinally, rounds: 4, script: map[string][]dag.JobPhase{"jf-b": {F}}, render: true},
		{name: "parallelism", wf: parallel, rounds: 5},
		{name: "aborted_compat_waits", wf: wf(fl("a"), fl("b", "a")), opt: dag.VolcanoCompat(), rounds: 4, script: map[string][]dag.JobPhase{"jf-b": {dag.JobPhaseAborted}}},
		{name: "aborted_default_fails", wf: wf(fl("a"), fl("b", "a")), rounds: 3, script: map[string][]dag.JobPhase{"jf-b": {dag.JobPhaseAborted}}},
		{name: "name_conflict_default", wf: wf(fl("a"), fl("b")), rounds: 2, setup: func(w *fake.World, r *fake.DAGRunner) {
			_ = r.CreateJob(context.Background(), dag.CreateJob{Name: "jf-a", Namespace: "ns", Labels: map[string]string{dag.LabelCreatedByJobFlow: "ns.other"}})
		}},
		{name: "informer_lag_and_faults", wf: chain, rounds: 7, setup: func(w *fake.World, r *fake.DAGRunner) {
			r.Lag = 0.5
			w.Faults.FailNext(fake.KindDAGCreate, 1, errors.New("apiserver unavailable"))
			w.Faults.LoseResponseNext(fake.KindDAGStatus, 1, errors.New("timeout"))
		}},
		{name: "probe_ps_workers", wf: wf(fl("ps"), dag.Flow{Name: "workers", DependsOn: &dag.DependsOn{Targets: []string{"ps"}, Probe: &dag.Probe{
			HTTPGet:    []dag.HTTPGetProbe{{Task: "ps", Path: "/healthz", Port: 8080}},
			TaskStatus: []dag.TaskStatusProbe{{Task: "ps", Phase: "Running", Min: 1}},
		}}}), rounds: 6, step: func(r *fake.DAGRunner, k int) {
			switch k {
			case 1: // the ps pod is scheduled but not running yet
				r.SetPhase("ns", "jf-ps", dag.JobPhaseRunning)
				r.SetTasks("ns", "jf-ps", map[string]map[string]int32{"ps": {"Pending": 1}})
			case 2:
				r.SetTasks("ns", "jf-ps", map[string]map[string]int32{"ps": {"Running": 1}})
			case 4: // workers created: they run and finish
				r.Finish()
			case 5: // then the parameter server ends
				r.SetTasks("ns", "jf-ps", map[string]map[string]int32{"ps": {"Succeeded": 1}})
				r.SetPhase("ns", "jf-ps", dag.JobPhaseCompleted)
			}
		}, probes: func(k int, now time.Time) []dag.ProbeResult {
			switch k {
			case 3: // /healthz not answering yet
				return []dag.ProbeResult{{Flow: "workers", Entry: 0, OK: false, Time: now.Add(-5 * time.Second)}}
			case 4:
				return []dag.ProbeResult{{Flow: "workers", Entry: 0, OK: true, Time: now.Add(-5 * time.Second)}}
			}
			return nil
		}, render: true},
		{name: "ml_pipeline_steps", wf: func() dag.Workflow {
			w := wf(fl("data-preprocess"), fl("model-training", "data-preprocess"), fl("feature-engineering", "data-preprocess"),
				fl("model-evaluation", "model-training", "feature-engineering"), fl("model-deploy", "model-evaluation"))
			return w
		}(), rounds: 8, step: func(r *fake.DAGRunner, k int) { r.Step(); r.Step() }, render: true},
	}
}

func runScenario(t *testing.T, sc scenario) string {
	world := fake.NewWorld(7, t0)
	r := fake.NewDAGRunner(world)
	r.Script = sc.script
	if sc.setup != nil {
		sc.setup(world, r)
	}
	var b strings.Builder
	w := sc.wf
	fmt.Fprintf(&b, "# %s\n", sc.name)
	for k := 1; k <= sc.rounds; k++ {
		s := r.Snapshot(w)
		if sc.probes != nil {
			s.ProbeResults = sc.probes(k, s.Now)
		}
		res, err := dag.Decide(s, sc.opt)
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
		if sc.step != nil {
			sc.step(r, k)
		} else {
			r.Finish()
		}
		world.Clock.Advance(time.Minute)
	}
	if sc.render {
		w.Status = r.Status(w.Namespace, w.Name)
		b.WriteString("\n== mermaid\n")
		b.WriteString(dag.RenderMermaid(w))
		b.WriteString("\n== dot\n")
		b.WriteString(dag.RenderDOT(w))
	}
	return b.String()
}

// TestGolden compares each scenario's transcript with testdata/<name>.txt;
// run with -update to rewrite them.
func TestGolden(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			got := runScenario(t, sc)
			if again := runScenario(t, sc); again != got {
				t.Fatal("transcript differs between two runs")
			}
			path := filepath.Join("testdata", sc.name+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("transcript differs from %s (run with -update after checking):\n%s", path, lineDiff(string(want), got))
			}
		})
	}
}

func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, a, b)
		}
	}
	return ""
}

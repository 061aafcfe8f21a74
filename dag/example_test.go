package dag_test

import (
	"errors"
	"fmt"
	"github.com/plancore/plancore"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/dag"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func labelled(jf, flow string, phase dag.JobPhase) dag.Job {
	return dag.Job{Name: jf + "-" + flow, UID: types.UID("uid-" + flow), Phase: phase, CreationTime: t0,
		Labels: map[string]string{dag.LabelCreatedByJobFlow: "ns." + jf, dag.LabelCreatedByJobTemplate: "ns." + flow}}
}

// Example_chain plans a three-flow chain in one step: the first job has
// completed, so the second is created and the third waits.
func Example_chain() {
	w := dag.Workflow{Name: "jf", Namespace: "ns", UID: "u1", Spec: dag.Spec{Flows: []dag.Flow{
		{Name: "a"},
		{Name: "b", DependsOn: &dag.DependsOn{Targets: []string{"a"}}},
		{Name: "c", DependsOn: &dag.DependsOn{Targets: []string{"b"}}},
	}}}
	res, err := dag.Decide(dag.Snapshot{Flow: w, Jobs: []dag.Job{labelled("jf", "a", dag.JobPhaseCompleted)}, Now: t0}, dag.Default())
	if err != nil {
		panic(err)
	}
	fmt.Print(res)
	// Output:
	// phase "" -> Running, write status, 539 status bytes
	// create jf-b flow=b template=ns/b attempt=1
	// blocked c: Dependency: b.Succeeded is NotCreated
}

// Example_dependsOnFailure: notify runs because
// train failed, publish is omitted, and the workflow fails because nothing
// handles publish's omission.
func Example_dependsOnFailure() {
	w := dag.Workflow{Name: "jf", Namespace: "ns", UID: "u1", Spec: dag.Spec{Flows: []dag.Flow{
		{Name: "train"},
		{Name: "notify", DependsOn: &dag.DependsOn{Depends: "train.Failed"}},
		{Name: "publish", DependsOn: &dag.DependsOn{Targets: []string{"train"}}},
	}}}
	res, _ := dag.Decide(dag.Snapshot{Flow: w, Jobs: []dag.Job{labelled("jf", "train", dag.JobPhaseFailed)}, Now: t0}, dag.Default())
	fmt.Print(res)
	w.Status = res.Status
	res, _ = dag.Decide(dag.Snapshot{Flow: w, Now: t0.Add(time.Minute), Jobs: []dag.Job{
		labelled("jf", "train", dag.JobPhaseFailed), labelled("jf", "notify", dag.JobPhaseRunning)}}, dag.Default())
	w.Status = res.Status
	fmt.Print(dag.RenderMermaid(w))
	// Output:
	// phase "" -> Running, write status, 571 status bytes
	// create jf-notify flow=notify template=ns/notify attempt=1
	// flowchart TD
	//   f0["train<br/>Failed"]:::failed -->|Failed| f1["notify<br/>Running"]:::running
	//   f0 --> f2["publish<br/>Omitted"]:::omitted
	//   classDef succeeded fill:#c8e6c9,stroke:#2e7d32
	//   classDef failed fill:#ffcdd2,stroke:#c62828
	//   classDef running fill:#bbdefb,stroke:#1565c0
	//   classDef pending fill:#fff9c4,stroke:#f9a825
	//   classDef waiting fill:#eeeeee,stroke:#757575
	//   classDef omitted fill:#f5f5f5,stroke:#bdbdbd,stroke-dasharray:3
	//   classDef unknown fill:#ffffff,stroke:#9e9e9e
}

// ExampleCheck shows one error listing every offender of a bad spec.
func ExampleCheck() {
	w := dag.Workflow{Name: "jf", Namespace: "ns", UID: "u1", Spec: dag.Spec{Flows: []dag.Flow{
		{Name: "a", DependsOn: &dag.DependsOn{Targets: []string{"c"}}},
		{Name: "b", DependsOn: &dag.DependsOn{Depends: "a.Failed ||"}},
		{Name: "c", DependsOn: &dag.DependsOn{Targets: []string{"a", "ghost"}}},
		{Name: "a"},
	}}}
	err := dag.Check(w, dag.Default())
	var inv *plancore.InvalidError
	if errors.As(err, &inv) && errors.Is(err, dag.ErrInvalidInput) {
		for _, e := range inv.Errors {
			fmt.Println(e)
		}
	}
	// Output:
	// spec.flows[0].dependsOn: Invalid value: "a": Cycle: cycle: a -> c -> a
	// spec.flows[1].dependsOn.plancoreDepends: Invalid value: "a.Failed ||": ExpressionSyntax: flow "b": unexpected end of expression, want a name, "!" or "(" at byte 11
	// spec.flows[2].dependsOn.targets[1]: Not found: "ghost": UnknownTarget: flow "c": no flow named "ghost"
	// spec.flows[3].name: Duplicate value: "a": DuplicateFlow: flow name already used by flows[0]
}

// ExampleRenderDOT draws a diamond whose first flow has completed.
func ExampleRenderDOT() {
	w := dag.Workflow{Name: "jf", Namespace: "ns", UID: "u1", Spec: dag.Spec{Flows: []dag.Flow{
		{Name: "a"},
		{Name: "b", DependsOn: &dag.DependsOn{Targets: []string{"a"}}},
		{Name: "c", DependsOn: &dag.DependsOn{Depends: "a || !b.Failed"}},
	}}}
	res, _ := dag.Decide(dag.Snapshot{Flow: w, Jobs: []dag.Job{labelled("jf", "a", dag.JobPhaseRunning)}, Now: t0}, dag.Default())
	w.Status = res.Status
	fmt.Print(dag.RenderDOT(w))
	// Output:
	// digraph "ns/jf" {
	//   rankdir=TB;
	//   node [shape=box, style="rounded,filled"];
	//   f0 [label="a\nRunning", class="running", fillcolor="#bbdefb"];
	//   f1 [label="b\nwaiting: Dependency: a.Succeeded is Running", class="waiting", fillcolor="#eeeeee"];
	//   f2 [label="c\nwaiting: Dependency: a.Succeeded is Running", class="waiting", fillcolor="#eeeeee"];
	//   f0 -> f1;
	//   f0 -> f2 [style=dashed];
	//   f1 -> f2 [label="Failed", style=dashed];
	// }
}

// Example_volcanoCompat shows the anchor's two-step success: with
// every job Completed, a Pending workflow first moves to Running.
func Example_volcanoCompat() {
	w := dag.Workflow{Name: "jf", Namespace: "ns", UID: "u1", Spec: dag.Spec{Flows: []dag.Flow{
		{Name: "a"}, {Name: "b", DependsOn: &dag.DependsOn{Targets: []string{"a"}}},
	}}}
	jobs := []dag.Job{labelled("jf", "a", dag.JobPhaseCompleted), labelled("jf", "b", dag.JobPhaseCompleted)}
	for range 2 {
		res, _ := dag.Decide(dag.Snapshot{Flow: w, Jobs: jobs, Now: t0}, dag.VolcanoCompat())
		fmt.Println(res.Status.State.Phase)
		w.Status = res.Status
	}
	res, _ := dag.Decide(dag.Snapshot{Flow: dag.Workflow{Name: "jf", Namespace: "ns", UID: "u1", Spec: w.Spec}, Jobs: jobs, Now: t0}, dag.Default())
	fmt.Println("Default:", res.Status.State.Phase)
	// Output:
	// Running
	// Succeed
	// Default: Succeed
}

// Example_probe is BoCloud/JobFlow #21's parameter-server workflow:
// the workers need the ps job's ps task running, not finished, and its
// health endpoint answering. The core checks the task count; the executor
// runs the httpGet entry the Probe reason names and reports the result.
func Example_probe() {
	w := dag.Workflow{Name: "jf", Namespace: "ns", UID: "u1", Spec: dag.Spec{Flows: []dag.Flow{
		{Name: "ps"},
		{Name: "workers", DependsOn: &dag.DependsOn{Targets: []string{"ps"}, Probe: &dag.Probe{
			HTTPGet:    []dag.HTTPGetProbe{{Task: "ps", Path: "/healthz", Port: 8080}},
			TaskStatus: []dag.TaskStatusProbe{{Task: "ps", Phase: "Running", Min: 1}},
		}}},
	}}}
	ps := labelled("jf", "ps", dag.JobPhaseRunning)
	ps.TaskStatusCount = map[string]dag.TaskState{"ps": {Phase: map[string]int32{"Pending": 1}}}
	res, _ := dag.Decide(dag.Snapshot{Flow: w, Jobs: []dag.Job{ps}, Now: t0}, dag.Default())
	fmt.Print(res)

	// The ps pod runs; the executor probed /healthz at t0+10s and got 200.
	ps.TaskStatusCount = map[string]dag.TaskState{"ps": {Phase: map[string]int32{"Running": 1}}}
	w.Status = res.Status
	res, _ = dag.Decide(dag.Snapshot{Flow: w, Jobs: []dag.Job{ps}, Now: t0.Add(12 * time.Second),
		ProbeResults: []dag.ProbeResult{{Flow: "workers", Entry: 0, OK: true, Time: t0.Add(10 * time.Second)}}}, dag.Default())
	fmt.Print(res)
	// Output:
	// phase "" -> Running, write status, 616 status bytes
	// blocked workers: Probe: ps[0] on jf-ps: httpGet no result; Probe: ps[1] on jf-ps: task ps Running 0/1
	// requeue after 10s
	// phase Running, write status, 480 status bytes
	// create jf-workers flow=workers template=ns/workers attempt=1
}

// ExampleSnapshot_Validate shows every problem of an unusable snapshot at
// once, each with its field path: Decide refuses exactly these.
func ExampleSnapshot_Validate() {
	w := dag.Workflow{Name: "jf", Namespace: "ns", Spec: dag.Spec{Flows: []dag.Flow{{Name: "a"}}}}
	jobs := []dag.Job{labelled("jf", "a", dag.JobPhaseRunning), labelled("jf", "a", dag.JobPhaseRunning)}
	err := dag.Snapshot{Flow: w, Jobs: jobs}.Validate() // no Now, no uid
	var inv *plancore.InvalidError
	if errors.As(err, &inv) && errors.Is(err, dag.ErrInvalidInput) {
		fmt.Println(inv.Fields())
	}
	_, err = dag.Decide(dag.Snapshot{Flow: w, Jobs: jobs}, dag.Options{})
	fmt.Println(err)
	// Output:
	// [now flow.uid jobs[1].name]
	// dag: invalid input: now: Required value: the planning time must be set; flow.uid: Required value: the owner reference of every job created names the workflow's uid; jobs[1].name: Duplicate value: "jf-a"
}

package dag_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plancore/plancore/dag"
)

// dense returns n flows, each depending on every earlier flow.
func dense(n int) dag.Workflow {
	flows := make([]dag.Flow, n)
	for i := range flows {
		flows[i].Name = fmt.Sprintf("f%d", i)
		if i > 0 {
			ts := make([]string, i)
			for j := range i {
				ts[j] = fmt.Sprintf("f%d", j)
			}
			flows[i].DependsOn = &dag.DependsOn{Targets: ts}
		}
	}
	return wf(flows...)
}

// backEdge makes the first flow depend on the last, closing a cycle.
func backEdge(w dag.Workflow) dag.Workflow {
	flows := append([]dag.Flow{}, w.Spec.Flows...)
	last := flows[len(flows)-1].Name
	flows[0] = dag.Flow{Name: flows[0].Name, DependsOn: &dag.DependsOn{Targets: []string{last}}}
	w.Spec.Flows = flows
	return w
}

// wide returns the benchmark's generator: flow i ≥ 1 draws min(5, i) distinct earlier
// targets (49,985 edges for 10,000 flows).
func wide(n int) dag.Workflow {
	rng := rand.New(rand.NewPCG(1, 2))
	flows := make([]dag.Flow, n)
	for i := range flows {
		flows[i].Name = fmt.Sprintf("flow-%05d", i)
		k := min(5, i)
		if k == 0 {
			continue
		}
		seen := map[int]bool{}
		ts := make([]string, 0, k)
		for len(ts) < k {
			j := rng.IntN(i)
			if !seen[j] {
				seen[j] = true
				ts = append(ts, flows[j].Name)
			}
		}
		flows[i].DependsOn = &dag.DependsOn{Targets: ts}
	}
	w := wf(flows...)
	w.Name = "wf"
	return w
}

// tekton is Tekton's regression shape (#5420): 5 branches of 101 tasks, each
// depending on every earlier task of its branch.
func tekton() dag.Workflow {
	var flows []dag.Flow
	for b := range 5 {
		for i := range 101 {
			f := dag.Flow{Name: fmt.Sprintf("b%d-t%d", b, i)}
			if i > 0 {
				ts := make([]string, i)
				for j := range i {
					ts[j] = fmt.Sprintf("b%d-t%d", b, j)
				}
				f.DependsOn = &dag.DependsOn{Targets: ts}
			}
			flows = append(flows, f)
		}
	}
	return wf(flows...)
}

func benchValidate(b *testing.B, w dag.Workflow, wantErr bool) {
	b.ReportAllocs()
	for b.Loop() {
		if is := dag.Lint(w, dag.Options{}); dag.HasErrors(is) != wantErr {
			b.Fatalf("errors = %v, want %v", dag.HasErrors(is), wantErr)
		}
	}
}

// BenchmarkValidateDense27 is the graph that takes the anchor's webhook
// 11.1 s (target < 1 ms).
func BenchmarkValidateDense27(b *testing.B) {
	b.Run("acyclic", func(b *testing.B) { benchValidate(b, dense(27), false) })
	b.Run("backedge", func(b *testing.B) { benchValidate(b, backEdge(dense(27)), true) })
}

// chain returns n flows, each depending on the one before.
func chain(n int) dag.Workflow {
	flows := make([]dag.Flow, n)
	for i := range flows {
		flows[i].Name = fmt.Sprintf("c%d", i)
		if i > 0 {
			flows[i].DependsOn = &dag.DependsOn{Targets: []string{flows[i-1].Name}}
		}
	}
	return wf(flows...)
}

// BenchmarkValidateChain1k is a 1,000-flow chain, whose paths the anchor's
// webhook walks one by one.
func BenchmarkValidateChain1k(b *testing.B) {
	b.Run("acyclic", func(b *testing.B) { benchValidate(b, chain(1000), false) })
	b.Run("backedge", func(b *testing.B) { benchValidate(b, backEdge(chain(1000)), true) })
}

// status5k is 5,000 independent flows, each with its observed job.
func status5k() dag.Snapshot {
	flows := make([]dag.Flow, 5000)
	jobs := make([]dag.Job, len(flows))
	for i := range flows {
		flows[i].Name = fmt.Sprintf("s%d", i)
		d := time.Duration(i%600) * time.Second
		jobs[i] = dag.Job{Name: "jf-" + flows[i].Name, UID: "u", Phase: allPhases[i%len(allPhases)], CreationTime: t0, RunningDuration: &d,
			Labels: map[string]string{dag.LabelCreatedByJobFlow: "ns.jf", dag.LabelCreatedByJobTemplate: "ns." + flows[i].Name}}
	}
	w := wf(flows...)
	w.Status.State.Phase = dag.PhaseRunning
	return dag.Snapshot{Flow: w, Jobs: jobs, Now: t0.Add(time.Hour)}
}

// BenchmarkStatus5k computes the status of 5,000 observed jobs of 5,000
// independent flows (the anchor's getAllJobStatus work).
func BenchmarkStatus5k(b *testing.B) {
	s := status5k()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dag.Decide(s, dag.Default()); err != nil {
			b.Fatal(err)
		}
	}
}

// TestValidateAllocatesNoPathOnValidInput: Snapshot.Validate builds a field
// path only when a check fails, so on 5,000 valid jobs it allocates only its
// table of job names, once (the one-contract rework had built two paths per
// job, 15,000 allocations per Decide; a map of the names was 17 more), and
// Options.Validate allocates nothing. Breaking it: build any path eagerly
// again (field.NewPath outside an error branch), or go back to a map.
func TestValidateAllocatesNoPathOnValidInput(t *testing.T) {
	s := status5k()
	o := dag.Default()
	got := testing.AllocsPerRun(20, func() {
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
	})
	if got != 1 {
		t.Errorf("Snapshot.Validate + Options.Validate allocate %v times on 5,000 valid jobs, want 1 (the name table)", got)
	}
}

// BenchmarkValidateTekton is 5 × 101 tasks, 25,250 edges (target ≤ 10 ms).
func BenchmarkValidateTekton(b *testing.B) { benchValidate(b, tekton(), false) }

// BenchmarkValidate10k is 10,000 flows and 49,985 edges (target ≤ 10 ms).
func BenchmarkValidate10k(b *testing.B) {
	b.Run("acyclic", func(b *testing.B) { benchValidate(b, wide(10000), false) })
	b.Run("backedge", func(b *testing.B) { benchValidate(b, backEdge(wide(10000)), true) })
}

// BenchmarkValidateVolcano10k runs the Volcano webhook's check on the graphs
// of BenchmarkValidate10k (target ≤ 1.3 × BenchmarkValidate10k).
func BenchmarkValidateVolcano10k(b *testing.B) {
	bench := func(b *testing.B, w dag.Workflow, wantErr bool) {
		b.ReportAllocs()
		for b.Loop() {
			if err := dag.ValidateVolcano(w.Spec); (err != nil) != wantErr {
				b.Fatalf("err = %v, want error %v", err, wantErr)
			}
		}
	}
	b.Run("acyclic", func(b *testing.B) { bench(b, wide(10000), false) })
	b.Run("backedge", func(b *testing.B) { bench(b, backEdge(wide(10000)), true) })
}

var allPhases = []dag.JobPhase{"", "Pending", "Running", "Restarting", "Completing", "Completed", "Terminating", "Terminated", "Failed", "Aborting", "Aborted"}

// plan10k is the large benchmark's Decide input: 10,000 flows, 10,000 observed jobs with
// phases cycled, and a previous status with 4 history entries per job.
func plan10k() dag.Snapshot {
	w := wide(10000)
	w.Status.State.Phase = dag.PhaseRunning
	now := t0.Add(time.Hour)
	jobs := make([]dag.Job, len(w.Spec.Flows))
	w.Status.JobStatusList = make([]dag.JobStatus, len(jobs))
	for i, f := range w.Spec.Flows {
		name := w.Name + "-" + f.Name
		d := time.Duration(i%600) * time.Second
		jobs[i] = dag.Job{Name: name, UID: "u", Phase: allPhases[i%len(allPhases)], CreationTime: t0, RunningDuration: &d,
			Labels:          map[string]string{dag.LabelCreatedByJobFlow: "ns.wf", dag.LabelCreatedByJobTemplate: "ns." + f.Name},
			TaskStatusCount: map[string]dag.TaskState{"worker": {Phase: map[string]int32{"Running": 1}}}}
		h := make([]dag.RunningHistory, 4)
		for k := range h {
			h[k] = dag.RunningHistory{StartTimestamp: metav1.NewTime(t0.Add(time.Duration(k) * time.Minute)), State: allPhases[(i+k)%len(allPhases)]}
			if k < 3 {
				h[k].EndTimestamp = metav1.NewTime(t0.Add(time.Duration(k+1) * time.Minute))
			}
		}
		w.Status.JobStatusList[i] = dag.JobStatus{Name: name, State: jobs[i].Phase, StartTimestamp: metav1.NewTime(t0), RunningHistories: h, Flow: f.Name, Attempt: 1}
	}
	// Shuffle the observation order, as an informer would.
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	return dag.Snapshot{Flow: w, Jobs: jobs, Now: now}
}

// BenchmarkPlan10k plans 10,000 flows with 10,000 observed jobs, the status
// and its size included. Compare it with BenchmarkBaselineScan10k: a planner
// whose passes were fused to keep each job in cache stayed under 5 × that scan;
// the planner now walks the workflow step by step, at about 6 ×, which buys code
// that reads in the workflow's order.
func BenchmarkPlan10k(b *testing.B) {
	s := plan10k()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := dag.Decide(s, dag.Default()); err != nil {
			b.Fatal(err)
		}
	}
}

// baselineScan is the benchmark's reference: one pass that inserts every flow into a
// name→index map, looks up every target, buckets every job with one map
// lookup, and copies the previous job status list.
func baselineScan(s dag.Snapshot) int {
	idx := make(map[string]int, len(s.Flow.Spec.Flows))
	for i, f := range s.Flow.Spec.Flows {
		idx[f.Name] = i
	}
	found := 0
	for _, f := range s.Flow.Spec.Flows {
		if f.DependsOn != nil {
			for _, t := range f.DependsOn.Targets {
				if _, ok := idx[t]; ok {
					found++
				}
			}
		}
	}
	buckets := make(map[dag.JobPhase][]string, 12)
	for _, j := range s.Jobs {
		buckets[j.Phase] = append(buckets[j.Phase], j.Name)
	}
	list := make([]dag.JobStatus, len(s.Flow.Status.JobStatusList))
	copy(list, s.Flow.Status.JobStatusList)
	return found + len(buckets) + len(list)
}

var sink int

// BenchmarkBaselineScan10k is the reference for BenchmarkPlan10k.
func BenchmarkBaselineScan10k(b *testing.B) {
	s := plan10k()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		sink += baselineScan(s)
	}
}

package dag_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/plancore/plancore"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plancore/plancore/dag"
)

// job returns a job of workflow jf for flow with the workflow's label.
func job(flow string, phase dag.JobPhase) dag.Job {
	return labelled("jf", flow, phase)
}

// foreign returns a same-named job labelled for another workflow.
func foreign(flow string, phase dag.JobPhase) dag.Job {
	j := job(flow, phase)
	j.Labels = map[string]string{dag.LabelCreatedByJobFlow: "ns.other"}
	return j
}

// unlabelled returns a job named like flow's with no labels.
func unlabelled(flow string, phase dag.JobPhase) dag.Job {
	j := job(flow, phase)
	j.Labels = nil
	return j
}

type summary struct {
	Phase   dag.Phase
	Write   bool
	Create  []string
	Delete  []string
	Blocked []string
}

func summarize2(r dag.Plan) summary {
	s := summary{Phase: r.Status.State.Phase, Write: r.WriteStatus}
	for _, c := range r.Create {
		s.Create = append(s.Create, c.Name)
	}
	for _, d := range r.Delete {
		s.Delete = append(s.Delete, d.Name+":"+string(d.Reason.Code))
	}
	for _, b := range r.Blocked {
		var rs []string
		for _, x := range b.Reasons {
			rs = append(rs, x.String())
		}
		s.Blocked = append(s.Blocked, b.Flow+": "+strings.Join(rs, "; "))
	}
	return s
}

func plan(t *testing.T, w dag.Workflow, jobs []dag.Job, opt dag.Options) dag.Plan {
	t.Helper()
	res, err := dag.Decide(dag.Snapshot{Flow: w, Jobs: jobs, Now: t0.Add(time.Hour)}, opt)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if b, _ := json.Marshal(res.Status); len(b) != res.StatusBytes {
		t.Fatalf("StatusBytes = %d, json is %d", res.StatusBytes, len(b))
	}
	return res
}

func withPhase(w dag.Workflow, p dag.Phase) dag.Workflow {
	w.Status.State.Phase = p
	return w
}

func withRetain(w dag.Workflow, p dag.RetainPolicy) dag.Workflow {
	w.Spec.JobRetainPolicy = p
	return w
}

type planCase struct {
	name string
	wf   dag.Workflow
	jobs []dag.Job
	want summary
}

func runPlanCases(t *testing.T, opt dag.Options, cases []planCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize2(plan(t, tc.wf, tc.jobs, opt))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompatDeployAndPhase covers Volcano's deploy rule and phase table in
// the Volcano preset.
func TestCompatDeployAndPhase(t *testing.T) {
	chain := wf(fl("a"), fl("b", "a"), fl("c", "b"))
	pending := withPhase(chain, dag.PhasePending)
	running := withPhase(chain, dag.PhaseRunning)
	C, R := dag.JobPhaseCompleted, dag.JobPhaseRunning
	runPlanCases(t, dag.VolcanoCompat(), []planCase{
		{"new: no dependencies are created", chain, nil, summary{Phase: "Pending", Write: true, Create: []string{"jf-a"},
			Blocked: []string{"b: Dependency: a is NotCreated", "c: Dependency: b is NotCreated"}}},
		{"nil and empty targets count as none", wf(dag.Flow{Name: "a", DependsOn: &dag.DependsOn{}}, dag.Flow{Name: "b", DependsOn: &dag.DependsOn{Targets: []string{}}}), nil,
			summary{Phase: "Pending", Write: true, Create: []string{"jf-a", "jf-b"}}},
		{"target Completed: create", pending, []dag.Job{job("a", C)}, summary{Phase: "Running", Write: true, Create: []string{"jf-b"},
			Blocked: []string{"c: Dependency: b is NotCreated"}}},
		{"Completing does not satisfy", pending, []dag.Job{job("a", dag.JobPhaseCompleting)}, summary{Phase: "Pending", Write: true,
			Blocked: []string{"b: Dependency: a is Completing", "c: Dependency: b is NotCreated"}}},
		{"Failed target: Pending fails", pending, []dag.Job{job("a", dag.JobPhaseFailed)}, summary{Phase: "Failed", Write: true,
			Blocked: []string{"b: Dependency: a is Failed", "c: Dependency: b is NotCreated"}}},
		{"Terminated target: Pending fails (#4442)", pending, []dag.Job{job("a", dag.JobPhaseTerminated)}, summary{Phase: "Failed", Write: true,
			Blocked: []string{"b: Dependency: a is Terminated", "c: Dependency: b is NotCreated"}}},
		{"Aborted never satisfies and never fails", running, []dag.Job{job("a", C), job("b", dag.JobPhaseAborted)}, summary{Phase: "Running", Write: true,
			Blocked: []string{"c: Dependency: b is Aborted"}}},
		{"one wave per call: a completed chain moves to Running, not Succeed", pending, []dag.Job{job("a", C), job("b", C), job("c", C)}, summary{Phase: "Running", Write: true}},
		{"a completed chain, next sync: Succeed", running, []dag.Job{job("a", C), job("b", C), job("c", C)}, summary{Phase: "Succeed", Write: true}},
		{"Running + Failed job: Failed (#4134)", running, []dag.Job{job("a", C), job("b", dag.JobPhaseFailed)}, summary{Phase: "Failed", Write: true,
			Blocked: []string{"c: Dependency: b is Failed"}}},
		{"Running + Terminated job: Failed (#5672)", running, []dag.Job{job("a", C), job("b", dag.JobPhaseTerminated)}, summary{Phase: "Failed", Write: true,
			Blocked: []string{"c: Dependency: b is Terminated"}}},
		{"Pending with Running and Terminated moves to Running", wf(fl("a"), fl("b")), []dag.Job{job("a", R), job("b", dag.JobPhaseTerminated)}, summary{Phase: "Running", Write: true}},
		{"Pending stays Pending while jobs are Pending", pending, []dag.Job{job("a", dag.JobPhasePending)}, summary{Phase: "Pending", Write: true,
			Blocked: []string{"b: Dependency: a is Pending", "c: Dependency: b is NotCreated"}}},
		{"Running stays Running; status written anyway", running, []dag.Job{job("a", C), job("b", R)}, summary{Phase: "Running", Write: true,
			Blocked: []string{"c: Dependency: b is Running"}}},
		{"existing jobs are never re-created, whatever the phase", running, []dag.Job{job("a", dag.JobPhaseFailed), job("b", dag.JobPhaseAborted), job("c", "")}, summary{Phase: "Failed", Write: true}},
		{"existence by name only: an unlabelled job blocks the create", wf(fl("a")), []dag.Job{unlabelled("a", R)}, summary{Phase: "Pending", Write: true}},
		{"targets by name only: an unlabelled Completed target satisfies", wf(fl("a"), fl("b", "a")), []dag.Job{unlabelled("a", C)}, summary{Phase: "Pending", Write: true, Create: []string{"jf-b"}}},
		{"unknown target waits forever", wf(fl("a", "zz")), nil, summary{Phase: "Pending", Write: true, Blocked: []string{`a: UnknownTarget: no flow named "zz"`}}},
		{"cycle waits forever", wf(fl("a", "b"), fl("b", "a")), nil, summary{Phase: "Pending", Write: true,
			Blocked: []string{"a: Dependency: b is NotCreated; Cycle: flow is on a dependency cycle", "b: Dependency: a is NotCreated; Cycle: flow is on a dependency cycle"}}},
		{"duplicate targets are harmless", wf(fl("a"), fl("b", "a", "a")), []dag.Job{job("a", C)}, summary{Phase: "Running", Write: true, Create: []string{"jf-b"}}},
		{"duplicate flows: one create; count rule never succeeds", withPhase(wf(fl("a"), fl("a")), dag.PhaseRunning), []dag.Job{job("a", C)}, summary{Phase: "Running", Write: true}},
		{"zero flows: Pending stays Pending", wf(), nil, summary{Phase: "Pending", Write: true}},
		{"zero flows: Running moves to Succeed", withPhase(wf(), dag.PhaseRunning), nil, summary{Phase: "Succeed", Write: true}},
		{"extra labelled job breaks the count", running, []dag.Job{job("a", C), job("b", C), job("c", C), job("gone", C)}, summary{Phase: "Running", Write: true}},
		{"Succeed + retain re-creates a removed job", withPhase(chain, dag.PhaseSucceed), []dag.Job{job("a", C), job("c", C)}, summary{Phase: "Succeed", Write: true, Create: []string{"jf-b"}}},
		{"Succeed + delete: retention only, spec order then by name, no write", withRetain(withPhase(chain, dag.PhaseSucceed), dag.RetainPolicyDelete),
			[]dag.Job{job("zz", C), job("c", C), job("a", C), job("b", C), foreign("x", C)}, summary{Phase: "Succeed",
				Delete: []string{"jf-a:Retention", "jf-b:Retention", "jf-c:Retention", "jf-zz:Retention"}}},
		{"the call deciding Succeed plans no deletes", withRetain(running, dag.RetainPolicyDelete), []dag.Job{job("a", C), job("b", C), job("c", C)}, summary{Phase: "Succeed", Write: true}},
		{"Failed does nothing", withPhase(chain, dag.PhaseFailed), []dag.Job{job("a", C)}, summary{Phase: "Failed"}},
		{"Terminating does nothing", withPhase(chain, dag.PhaseTerminating), nil, summary{Phase: "Terminating"}},
	})
}

func TestInvalidPhaseIsAnError(t *testing.T) {
	for _, opt := range []dag.Options{dag.Default(), dag.VolcanoCompat()} {
		_, err := dag.Decide(dag.Snapshot{Flow: withPhase(wf(fl("a")), "Paused"), Now: t0}, opt)
		if !errors.Is(err, dag.ErrInvalidInput) || !strings.Contains(err.Error(), `flow.status.state.phase: Unsupported value: "Paused"`) {
			t.Fatalf("err = %v", err)
		}
	}
	_, err := dag.Decide(dag.Snapshot{Flow: wf(fl("a")), Jobs: []dag.Job{job("a", ""), job("a", "")}, Now: t0}, dag.Default())
	if !errors.Is(err, dag.ErrInvalidInput) || !strings.Contains(err.Error(), "jobs[1].name: Duplicate value") {
		t.Fatalf("duplicate job names: err = %v", err)
	}
	_, err = dag.Decide(dag.Snapshot{Flow: wf(fl("a")), Now: t0}, dag.Options{HistoryLimit: -1})
	if !errors.Is(err, dag.ErrInvalidOptions) || !strings.Contains(err.Error(), "historyLimit") {
		t.Fatalf("bad options: err = %v", err)
	}
}

// TestDuplicateJobNames covers the snapshot check: two observed jobs with
// one name are an error naming every second occurrence, the earliest first,
// whether the name is a flow's job, an orphan's or a stranger's.
func TestDuplicateJobNames(t *testing.T) {
	other := func(name string) dag.Job { return dag.Job{Name: name} }
	for _, tc := range []struct {
		name string
		jobs []dag.Job
		want string // "" for no error
	}{
		{"distinct", []dag.Job{job("a", ""), job("zz", ""), other("x"), other("jf-"), other("y")}, ""},
		{"a flow's job twice", []dag.Job{job("a", ""), other("x"), job("a", "Running")}, "jf-a"},
		{"an orphan twice", []dag.Job{job("zz", ""), job("a", ""), job("zz", "")}, "jf-zz"},
		{"a stranger twice", []dag.Job{other("x"), other("y"), other("x")}, "x"},
		{"the earliest second occurrence wins", []dag.Job{other("x"), job("a", ""), job("a", ""), other("x")}, "jf-a"},
		{"an orphan's second occurrence first", []dag.Job{job("a", ""), other("x"), other("x"), job("a", "")}, "x"},
	} {
		for _, opt := range []dag.Options{dag.Default(), dag.VolcanoCompat()} {
			_, err := dag.Decide(dag.Snapshot{Flow: wf(fl("a"), fl("b", "a")), Jobs: tc.jobs, Now: t0}, opt)
			var inv *plancore.InvalidError
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s: err = %v", tc.name, err)
			case tc.want != "" && (!errors.Is(err, dag.ErrInvalidInput) || !errors.As(err, &inv) || inv.Errors[0].BadValue != tc.want):
				t.Errorf("%s: err = %v, want ErrInvalidInput naming %s first", tc.name, err, tc.want)
			}
		}
	}
}

// TestCreateIdentity covers the created job's identity: names, template, labels, annotations and
// the owner reference, in both presets.
func TestCreateIdentity(t *testing.T) {
	yes := true
	meta := map[string]string{dag.LabelCreatedByJobTemplate: "default.data-preprocess", dag.LabelCreatedByJobFlow: "default.ml-pipeline"}
	want := dag.CreateJob{Flow: "data-preprocess", Name: "ml-pipeline-data-preprocess", Namespace: "default",
		Template: dag.TemplateRef{Namespace: "default", Name: "data-preprocess"}, Labels: meta, Annotations: meta,
		Owner: metav1.OwnerReference{APIVersion: "flow.volcano.sh/v1alpha1", Kind: "JobFlow", Name: "ml-pipeline", UID: "uid-ml",
			Controller: &yes, BlockOwnerDeletion: &yes}, Attempt: 1,
		Reason: dag.Reason{Code: dag.ReasonDependenciesMet, Message: "the dependencies of flow data-preprocess are satisfied", Facts: dag.ReasonFacts{Flow: "data-preprocess"}}}
	// The patch is Volcano's type: its jobSpec reaches the executor as the
	// template's spec.
	w := dag.Workflow{Name: "ml-pipeline", Namespace: "default", UID: "uid-ml", Spec: dag.Spec{Flows: []dag.Flow{{Name: "data-preprocess", Patch: []byte(`{"jobSpec": {"minAvailable": 2}}`)}}}}
	for _, opt := range []dag.Options{dag.VolcanoCompat(), dag.Default()} {
		res := plan(t, w, nil, opt)
		if len(res.Create) != 1 {
			t.Fatalf("creates: %v", res.Create)
		}
		c := res.Create[0]
		wantPatch := json.RawMessage(nil)
		if !opt.SkipValidation { // Default carries the patch; Volcano ignores it
			wantPatch = json.RawMessage(`{"spec":{"minAvailable":2}}`)
		}
		w2 := want
		w2.Patch = wantPatch
		if diff := cmp.Diff(w2, c); diff != "" {
			t.Fatalf("create (-want +got):\n%s", diff)
		}
		c.Labels["x"] = "y"
		if _, ok := c.Annotations["x"]; ok {
			t.Fatal("labels and annotations share one map")
		}
	}
	// The name is not injective: jobflow a + flow b-c = jobflow a-b + flow c.
	x := plan(t, dag.Workflow{Name: "a", Namespace: "ns", UID: "u1", Spec: dag.Spec{Flows: []dag.Flow{{Name: "b-c"}}}}, nil, dag.VolcanoCompat())
	y := plan(t, dag.Workflow{Name: "a-b", Namespace: "ns", UID: "u2", Spec: dag.Spec{Flows: []dag.Flow{{Name: "c"}}}}, nil, dag.VolcanoCompat())
	if x.Create[0].Name != "a-b-c" || y.Create[0].Name != "a-b-c" {
		t.Fatalf("names %s, %s", x.Create[0].Name, y.Create[0].Name)
	}
}

// TestBuckets covers every job phase's list in both presets.
func TestBuckets(t *testing.T) {
	phases := []dag.JobPhase{"", "Pending", "Aborting", "Aborted", "Running", "Restarting", "Completing", "Completed", "Terminating", "Terminated", "Failed", "Weird"}
	var flows []dag.Flow
	var jobs []dag.Job
	for i, p := range phases {
		name := fmt.Sprintf("f%02d", i)
		flows = append(flows, fl(name))
		jobs = append(jobs, job(name, p))
	}
	w := withPhase(wf(flows...), dag.PhaseRunning)
	lists := func(s dag.Status) map[string][]string {
		return map[string][]string{"pending": s.PendingJobs, "running": s.RunningJobs, "completing": s.CompletingJobs,
			"completed": s.CompletedJobs, "failed": s.FailedJobs, "terminating": s.TerminatingJobs, "terminated": s.TerminatedJobs,
			"aborted": s.AbortedJobs, "unknown": s.UnknownJobs}
	}
	compat := plan(t, w, jobs, dag.VolcanoCompat()).Status
	if diff := cmp.Diff(map[string][]string{
		"pending": {"jf-f01"}, "running": {"jf-f04"}, "completing": nil, "completed": {"jf-f07"}, "failed": {"jf-f10"},
		"terminating": nil, "terminated": {"jf-f09"}, "aborted": nil,
		"unknown": {"jf-f00", "jf-f02", "jf-f03", "jf-f05", "jf-f11"},
	}, lists(compat)); diff != "" {
		t.Errorf("compat lists (-want +got):\n%s", diff)
	}
	if len(compat.Conditions) != len(phases) {
		t.Errorf("compat conditions: %d, want one per labelled job (%d)", len(compat.Conditions), len(phases))
	}
	empty := plan(t, wf(fl("a")), nil, dag.VolcanoCompat()).Status
	for name, l := range map[string][]string{"pending": empty.PendingJobs, "running": empty.RunningJobs, "completed": empty.CompletedJobs,
		"failed": empty.FailedJobs, "terminated": empty.TerminatedJobs, "unknown": empty.UnknownJobs} {
		if l == nil {
			t.Errorf("compat %s list is nil, want empty", name)
		}
	}
	def := plan(t, w, jobs, dag.Default())
	if diff := cmp.Diff(map[string][]string{
		"pending": {"jf-f00", "jf-f01"}, "running": {"jf-f04", "jf-f05"}, "completing": {"jf-f06"}, "completed": {"jf-f07"},
		"failed": {"jf-f10"}, "terminating": {"jf-f02", "jf-f08"}, "terminated": {"jf-f09"}, "aborted": {"jf-f03"},
		"unknown": {"jf-f11"},
	}, lists(def.Status)); diff != "" {
		t.Errorf("default lists (-want +got):\n%s", diff)
	}
	found := false
	for _, is := range def.Issues {
		found = found || is.Kind == dag.IssueUnknownJobPhase && is.Value == "Weird"
	}
	if !found {
		t.Errorf("no UnknownJobPhase warning in %v", def.Issues)
	}
}

func hist(p dag.JobPhase, start time.Time, end time.Time) dag.RunningHistory {
	h := dag.RunningHistory{StartTimestamp: metav1.NewTime(start), State: p}
	if !end.IsZero() {
		h.EndTimestamp = metav1.NewTime(end)
	}
	return h
}

// TestHistories covers running histories and their quirks in both presets.
func TestHistories(t *testing.T) {
	now := t0.Add(time.Hour)
	t1 := t0.Add(time.Minute)
	prevWith := func(h []dag.RunningHistory) dag.Workflow {
		w := withPhase(wf(fl("a")), dag.PhaseRunning)
		w.Status.JobStatusList = []dag.JobStatus{{Name: "jf-a", RunningHistories: h}}
		return w
	}
	cases := []struct {
		name   string
		w      dag.Workflow
		phase  dag.JobPhase
		compat []dag.RunningHistory
		def    []dag.RunningHistory
	}{
		{"same phase: unchanged", prevWith([]dag.RunningHistory{hist("Running", t1, time.Time{})}), "Running",
			[]dag.RunningHistory{hist("Running", t1, time.Time{})}, []dag.RunningHistory{hist("Running", t1, time.Time{})}},
		{"new phase: close and append", prevWith([]dag.RunningHistory{hist("Pending", t1, time.Time{})}), "Running",
			[]dag.RunningHistory{hist("Pending", t1, now), hist("Running", now, time.Time{})}, []dag.RunningHistory{hist("Pending", t1, now), hist("Running", now, time.Time{})}},
		{"non-nil empty: stays empty in compat, seeded in Default", prevWith([]dag.RunningHistory{}), "Running",
			[]dag.RunningHistory{}, []dag.RunningHistory{hist("Running", now, time.Time{})}},
		{"no previous entry: seeded", withPhase(wf(fl("a")), dag.PhaseRunning), "Pending",
			[]dag.RunningHistory{hist("Pending", now, time.Time{})}, []dag.RunningHistory{hist("Pending", now, time.Time{})}},
		{`phase "": no history`, withPhase(wf(fl("a")), dag.PhaseRunning), "", nil, nil},
		{"nil previous history: seeded", prevWith(nil), "Completed",
			[]dag.RunningHistory{hist("Completed", now, time.Time{})}, []dag.RunningHistory{hist("Completed", now, time.Time{})}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range []struct {
				opt  dag.Options
				want []dag.RunningHistory
			}{{dag.VolcanoCompat(), tc.compat}, {dag.Default(), tc.def}} {
				got := plan(t, tc.w, []dag.Job{job("a", tc.phase)}, m.opt).Status.JobStatusList[0].RunningHistories
				if diff := cmp.Diff(m.want, got); diff != "" {
					t.Errorf("volcano=%v (-want +got):\n%s", m.opt.SkipValidation, diff)
				}
			}
		})
	}
}

// TestStatusEntries covers the entry fields, stale entries and the end
// timestamp.
func TestStatusEntries(t *testing.T) {
	d := 90 * time.Second
	j := job("a", dag.JobPhaseCompleted)
	j.RunningDuration, j.RetryCount = &d, 2
	j.TaskStatusCount = map[string]dag.TaskState{"worker": {Phase: map[string]int32{"Succeeded": 2}}}
	w := withPhase(wf(fl("a")), dag.PhaseRunning)
	w.Status.JobStatusList = []dag.JobStatus{{Name: "jf-gone", State: "Running"}}
	compat := plan(t, w, []dag.Job{j}, dag.VolcanoCompat()).Status
	wantEntry := dag.JobStatus{Name: "jf-a", State: "Completed", StartTimestamp: metav1.NewTime(t0), EndTimestamp: metav1.NewTime(t0.Add(d)),
		RestartCount: 2, RunningHistories: []dag.RunningHistory{hist("Completed", t0.Add(time.Hour), time.Time{})}}
	if diff := cmp.Diff([]dag.JobStatus{{Name: "jf-gone", State: "Running"}, wantEntry}, compat.JobStatusList); diff != "" {
		t.Errorf("compat keeps stale entries first (-want +got):\n%s", diff)
	}
	wantCond := dag.Condition{Phase: "Completed", CreateTimestamp: metav1.NewTime(t0), RunningDuration: &metav1.Duration{Duration: d}, TaskStatusCount: j.TaskStatusCount}
	if diff := cmp.Diff(map[string]dag.Condition{"jf-a": wantCond}, compat.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	def := plan(t, w, []dag.Job{j}, dag.Default()).Status
	wantEntry.Flow, wantEntry.Outcome, wantEntry.Attempt, wantEntry.Started = "a", dag.OutcomeSucceeded, 1, true
	if diff := cmp.Diff([]dag.JobStatus{wantEntry}, def.JobStatusList); diff != "" {
		t.Errorf("default drops stale entries (-want +got):\n%s", diff)
	}
}

// TestDefaultRules covers the Default phase rules and what Default changes from Volcano.
func TestDefaultRules(t *testing.T) {
	chain := wf(fl("a"), fl("b", "a"), fl("c", "b"))
	C, R := dag.JobPhaseCompleted, dag.JobPhaseRunning
	succeeded := withPhase(chain, dag.PhaseSucceed)
	runPlanCases(t, dag.Default(), []planCase{
		{"a completed chain succeeds in one call", withPhase(chain, dag.PhasePending), []dag.Job{job("a", C), job("b", C), job("c", C)}, summary{Phase: "Succeed", Write: true}},
		{"one step: a Completed job releases its dependents at once", chain, []dag.Job{job("a", C)}, summary{Phase: "Running", Write: true, Create: []string{"jf-b"},
			Blocked: []string{"c: Dependency: b.Succeeded is NotCreated"}}},
		{"a cycle fails the workflow, no creates", wf(fl("a", "b"), fl("b", "a"), fl("c")), nil, summary{Phase: "Failed", Write: true,
			Blocked: []string{"a: Cycle: on the 2-flow cycle of flows[0].dependsOn", "b: Cycle: on the 2-flow cycle of flows[0].dependsOn", "c: InvalidSpec: the workflow spec is invalid"}}},
		{"unknown target", wf(fl("a", "zz")), nil, summary{Phase: "Failed", Write: true, Blocked: []string{`a: UnknownTarget: no flow named "zz"`}}},
		{"zero flows succeed in the first plan", wf(), nil, summary{Phase: "Succeed", Write: true}},
		{"extra labelled jobs are orphans, never counted", withPhase(chain, dag.PhaseRunning), []dag.Job{job("a", C), job("b", C), job("c", C), job("old", dag.JobPhaseFailed)}, summary{Phase: "Succeed", Write: true}},
		{"Aborted fails the workflow", withPhase(wf(fl("a"), fl("b", "a")), dag.PhaseRunning), []dag.Job{job("a", C), job("b", dag.JobPhaseAborted)}, summary{Phase: "Failed", Write: true}},
		{"Succeed + retain never re-creates", succeeded, []dag.Job{job("a", C)}, summary{Phase: "Succeed", Write: true}},
		{"Succeed + delete re-plans deletes of jobs still observed", withRetain(succeeded, dag.RetainPolicyDelete), []dag.Job{job("b", C), job("zz", R)}, summary{Phase: "Succeed", Write: true,
			Delete: []string{"jf-b:Retention", "jf-zz:Retention"}}},
		{"retention deletes in the call that enters Succeed", withRetain(withPhase(chain, dag.PhaseRunning), dag.RetainPolicyDelete), []dag.Job{job("a", C), job("b", C), job("c", C)}, summary{Phase: "Succeed", Write: true,
			Delete: []string{"jf-a:Retention", "jf-b:Retention", "jf-c:Retention"}}},
		{"a same-named job of another workflow blocks the flow", wf(fl("a"), fl("b")), []dag.Job{foreign("a", R)}, summary{Phase: "Pending", Write: true, Create: []string{"jf-b"},
			Blocked: []string{`a: NameConflict: jf-a owned by "ns.other"`}}},
		{"Failed is absorbing: no creates", withPhase(chain, dag.PhaseFailed), []dag.Job{job("a", C)}, summary{Phase: "Failed", Write: true}},
		{"Terminating: empty plan", withPhase(chain, dag.PhaseTerminating), []dag.Job{job("a", C)}, summary{Phase: "Terminating"}},
		{"Pending while every job is Pending", chain, []dag.Job{job("a", dag.JobPhasePending)}, summary{Phase: "Pending", Write: true,
			Blocked: []string{"b: Dependency: a.Succeeded is Pending", "c: Dependency: b.Succeeded is NotCreated"}}},
		{"failure fails the workflow once everything is final", wf(fl("a"), fl("b", "a")), []dag.Job{job("a", dag.JobPhaseFailed)}, summary{Phase: "Failed", Write: true}},
		{"failFast: siblings without a job are omitted, running ones run on", wf(fl("a"), fl("b"), fl("c"), fl("d", "b")), []dag.Job{job("a", dag.JobPhaseFailed), job("b", R)}, summary{Phase: "Running", Write: true}},
		{"failFast off: independent branches go on", func() dag.Workflow {
			w := wf(fl("a"), fl("b", "a"), fl("c"), fl("d", "c"))
			no := false
			w.Spec.FailFast = &no
			return w
		}(), []dag.Job{job("a", dag.JobPhaseFailed), job("c", C)}, summary{Phase: "Running", Write: true, Create: []string{"jf-d"}}},
		{"parallelism caps creates in spec order", func() dag.Workflow {
			w := wf(fl("a"), fl("b"), fl("c"), fl("d"))
			w.Spec.Parallelism = 3
			return w
		}(), []dag.Job{job("a", R)}, summary{Phase: "Running", Write: true, Create: []string{"jf-b", "jf-c"}, Blocked: []string{"d: Parallelism: 3/3 active"}}},
		{"parallelism already exceeded: nothing is created", func() dag.Workflow {
			w := wf(fl("a"), fl("b"), fl("c"))
			w.Spec.Parallelism = 1
			return w
		}(), []dag.Job{job("a", R), job("b", "")}, summary{Phase: "Running", Write: true, Blocked: []string{"c: Parallelism: 2/1 active"}}},
	})
}

// TestDependsEvaluation covers depends expressions: atoms, Kleene logic, short-circuit,
// omission propagated in one call, and the main-part outcome.
func TestDependsEvaluation(t *testing.T) {
	C, F, R := dag.JobPhaseCompleted, dag.JobPhaseFailed, dag.JobPhaseRunning
	noFF := func(w dag.Workflow) dag.Workflow { no := false; w.Spec.FailFast = &no; return w }
	runPlanCases(t, dag.Default(), []planCase{
		{"train fails: notify runs on failure, publish omitted", wf(fl("train"), dep("notify", "train.Failed"), fl("publish", "train")), []dag.Job{job("train", F)},
			summary{Phase: "Running", Write: true, Create: []string{"jf-notify"}}},
		{"train failed and notify done: ends Failed, publish's omission is unhandled", wf(fl("train"), dep("notify", "train.Failed"), fl("publish", "train")), []dag.Job{job("train", F), job("notify", C)},
			summary{Phase: "Failed", Write: true}},
		{"a handled omission succeeds", wf(fl("train"), dep("notify", "train.Failed"), fl("publish", "train"), dep("report", "publish.Done")), []dag.Job{job("train", F), job("notify", C), job("report", C)},
			summary{Phase: "Succeed", Write: true}},
		// Argo's dag-depends e2e shape: P passes, F fails; only the leaves
		// decide, and the omitted should-not-execute is no leaf. Breaking
		// the leaf rule (counting every tainted flow) makes both rows fail.
		{"leaf rule: an omitted flow someone depends on does not fail the workflow", wf(fl("p"), fl("f"),
			dep("should-execute-1", "p && (f.Succeeded || f.Failed)"), dep("should-execute-2", "p || f"), dep("should-not-execute", "p && f"),
			dep("should-execute-3", "should-execute-2.Succeeded || should-not-execute")),
			[]dag.Job{job("p", C), job("f", F), job("should-execute-1", C), job("should-execute-2", C), job("should-execute-3", C)},
			summary{Phase: "Succeed", Write: true}},
		{"leaf rule: a failure absorbed by an or that ran", noFF(wf(fl("a"), fl("b"), dep("c", "a || b"))), []dag.Job{job("a", F), job("b", C), job("c", C)},
			summary{Phase: "Succeed", Write: true}},
		{"leaf rule: a failed leaf fails the workflow", noFF(wf(fl("a"), fl("b"), dep("c", "a || b"))), []dag.Job{job("a", C), job("b", C), job("c", F)},
			summary{Phase: "Failed", Write: true}},
		{"short-circuit: a || b starts once a succeeds", wf(fl("a"), fl("b"), dep("c", "a || b")), []dag.Job{job("a", C), job("b", R)},
			summary{Phase: "Running", Write: true, Create: []string{"jf-c"}}},
		{"undecided atoms are listed", wf(fl("a"), fl("b"), dep("c", "a.Failed || b")), []dag.Job{job("a", R), job("b", "")},
			summary{Phase: "Running", Write: true, Blocked: []string{"c: Dependency: a.Failed is Running; Dependency: b.Succeeded is Created"}}},
		{"omission propagates through the graph in one call", noFF(wf(fl("a"), fl("b", "a"), fl("c", "b"), dep("d", "c.Omitted"))), []dag.Job{job("a", F)},
			summary{Phase: "Running", Write: true, Create: []string{"jf-d"}}},
		{"Started: satisfied by a running target", wf(fl("a"), dep("b", "a.Started")), []dag.Job{job("a", R)},
			summary{Phase: "Running", Write: true, Create: []string{"jf-b"}}},
		{"Started: not yet for a Pending target", wf(fl("a"), dep("b", "a.Started")), []dag.Job{job("a", dag.JobPhasePending)},
			summary{Phase: "Pending", Write: true, Blocked: []string{"b: Dependency: a.Started is Pending"}}},
		{"not: !a.Failed after success", wf(fl("a"), dep("b", "!a.Failed")), []dag.Job{job("a", C)},
			summary{Phase: "Running", Write: true, Create: []string{"jf-b"}}},
		{"Done: waits for any outcome", noFF(wf(fl("a"), dep("b", "a.Done"))), []dag.Job{job("a", F)},
			summary{Phase: "Running", Write: true, Create: []string{"jf-b"}}},
		{"structured form: targetsWithStatus", wf(fl("a"), dag.Flow{Name: "b", DependsOn: &dag.DependsOn{TargetsWithStatus: []dag.TargetStatus{{Name: "a", Phase: "Failed"}}}}), []dag.Job{job("a", C)},
			summary{Phase: "Succeed", Write: true}}, // b is Omitted, not tainted
	})
}

// TestRetries covers retries with capped exponential backoff.
func TestRetries(t *testing.T) {
	r := &dag.Retry{Limit: 4, Backoff: dag.Backoff{Duration: 10 * time.Second, Factor: 2, Cap: 60 * time.Second}}
	base := wf(dag.Flow{Name: "a", Retry: r}, fl("b", "a"))
	failedAt := t0.Add(12 * time.Hour)
	failed := func(uid types.UID) dag.Job {
		j := job("a", dag.JobPhaseFailed)
		j.UID = uid
		j.CreationTime = failedAt.Add(-time.Minute)
		d := time.Minute
		j.RunningDuration = &d // ends at failedAt
		return j
	}
	step := func(w dag.Workflow, jobs []dag.Job, now time.Time) dag.Plan {
		t.Helper()
		res, err := dag.Decide(dag.Snapshot{Flow: w, Jobs: jobs, Now: now}, dag.Default())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	w := base
	var waits []time.Duration
	for attempt := 1; attempt <= 5; attempt++ {
		uid := types.UID(fmt.Sprintf("u%d", attempt))
		res := step(w, []dag.Job{failed(uid)}, failedAt)
		if attempt == 5 {
			if res.Status.State.Phase != dag.PhaseFailed || len(res.Delete) != 0 {
				t.Fatalf("limit exhausted: %s", res)
			}
			break
		}
		if len(res.Delete) != 0 || res.RequeueAfter == 0 || res.Status.State.Phase != dag.PhaseRunning {
			t.Fatalf("attempt %d before due: %s", attempt, res)
		}
		waits = append(waits, res.RequeueAfter)
		w.Status = res.Status
		res = step(w, []dag.Job{failed(uid)}, failedAt.Add(res.RequeueAfter-time.Nanosecond))
		if len(res.Delete) != 0 {
			t.Fatalf("deleted before due: %s", res)
		}
		res = step(w, []dag.Job{failed(uid)}, failedAt.Add(waits[len(waits)-1]))
		if diff := cmp.Diff([]dag.DeleteJob{{Flow: "a", Name: "jf-a", Namespace: "ns", UID: uid, Reason: dag.Reason{Code: dag.ReasonRetry, Message: "flow a failed and is retried", Facts: dag.ReasonFacts{Flow: "a"}}}}, res.Delete); diff != "" {
			t.Fatalf("attempt %d due: (-want +got)\n%s", attempt, diff)
		}
		w.Status = res.Status
		res = step(w, nil, failedAt.Add(waits[len(waits)-1]))
		if len(res.Create) != 1 || res.Create[0].Attempt != attempt+1 || res.Create[0].Annotations["plancore.io/attempt"] != fmt.Sprint(attempt+1) {
			t.Fatalf("attempt %d re-create: %s", attempt, res)
		}
		w.Status = res.Status
	}
	if diff := cmp.Diff([]time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 60 * time.Second}, waits); diff != "" {
		t.Fatalf("waits (-want +got):\n%s", diff)
	}

	// A phase outside `on` is not retried.
	j := failed("u1")
	j.Phase = dag.JobPhaseTerminated
	if res := step(base, []dag.Job{j}, failedAt); res.Status.State.Phase != dag.PhaseFailed {
		t.Fatalf("Terminated with on=[Failed]: %s", res)
	}
	// With no retry left for a sibling failure, failFast stops retries.
	ff := wf(dag.Flow{Name: "a", Retry: r}, fl("x"))
	jx := job("x", dag.JobPhaseFailed)
	if res := step(ff, []dag.Job{failed("u1"), jx}, failedAt); res.Status.State.Phase != dag.PhaseFailed || len(res.Delete) != 0 {
		t.Fatalf("failFast must stop retries: %s", res)
	}
}

// TestFinally covers finally flows.
func TestFinally(t *testing.T) {
	C, F, R := dag.JobPhaseCompleted, dag.JobPhaseFailed, dag.JobPhaseRunning
	mk := func(finally ...dag.Flow) dag.Workflow {
		w := wf(fl("a"), fl("b", "a"))
		w.Spec.Finally = finally
		return w
	}
	runPlanCases(t, dag.Default(), []planCase{
		{"finally waits for the main part", mk(fl("cleanup")), []dag.Job{job("a", R)}, summary{Phase: "Running", Write: true,
			Blocked: []string{"b: Dependency: a.Succeeded is Running", "cleanup: MainNotFinal: 2 main flows not final"}}},
		{"finally runs once every main flow is final", mk(fl("cleanup")), []dag.Job{job("a", C), job("b", C)}, summary{Phase: "Running", Write: true, Create: []string{"jf-cleanup"}}},
		{"finally runs after a failure too (not stopped by failFast)", mk(fl("cleanup")), []dag.Job{job("a", F)}, summary{Phase: "Running", Write: true, Create: []string{"jf-cleanup"}}},
		{"a finally condition false: Omitted", mk(dep("on-fail", "a.Failed")), []dag.Job{job("a", C), job("b", C)}, summary{Phase: "Succeed", Write: true}},
		{"a failed finally flow fails the workflow", mk(fl("cleanup")), []dag.Job{job("a", C), job("b", C), job("cleanup", F)}, summary{Phase: "Failed", Write: true}},
		{"all final and succeeded", mk(fl("cleanup")), []dag.Job{job("a", C), job("b", C), job("cleanup", C)}, summary{Phase: "Succeed", Write: true}},
	})
	// With validation skipped, main flows on a cycle are never decided,
	// yet they are not final: finally flows keep waiting for them.
	cyclic := wf(fl("a", "b"), fl("b", "a"), fl("c"))
	cyclic.Spec.Finally = []dag.Flow{fl("cleanup")}
	skip := dag.Default()
	skip.SkipValidation = true
	runPlanCases(t, skip, []planCase{
		{"finally waits for main flows on a cycle", cyclic, []dag.Job{job("c", C)}, summary{Phase: "Running", Write: true,
			Blocked: []string{"cleanup: MainNotFinal: 2 main flows not final"}}},
	})
	res := plan(t, mk(fl("cleanup")), []dag.Job{job("a", F)}, dag.Default())
	if got := res.Create[0].Annotations["plancore.io/workflow-outcome"]; got != "Failed" || !res.Create[0].Finally {
		t.Fatalf("outcome annotation %q", got)
	}
}

// TestWriteStatusOnlyOnChange covers the write-on-change rule and the fixpoint.
func TestWriteStatusOnlyOnChange(t *testing.T) {
	w := wf(fl("a"), fl("b", "a"))
	jobs := []dag.Job{job("a", dag.JobPhaseRunning)}
	for _, opt := range []dag.Options{dag.Default(), dag.VolcanoCompat()} {
		first := plan(t, w, jobs, opt)
		w2 := w
		w2.Status = first.Status
		second := plan(t, w2, jobs, opt)
		if second.WriteStatus != opt.AlwaysWrite {
			t.Errorf("AlwaysWrite=%v: second WriteStatus = %v", opt.AlwaysWrite, second.WriteStatus)
		}
		if diff := cmp.Diff(first.Status, second.Status); diff != "" {
			t.Errorf("not a fixpoint (-first +second):\n%s", diff)
		}
	}
}

// TestStatusSizeAndHistoryLimit covers the status size warning and the history limit.
func TestStatusSizeAndHistoryLimit(t *testing.T) {
	w := withPhase(wf(fl("a")), dag.PhaseRunning)
	var h []dag.RunningHistory
	for i, p := range []dag.JobPhase{"Pending", "Running", "Restarting", "Running"} {
		h = append(h, hist(p, t0.Add(time.Duration(i)*time.Minute), t0.Add(time.Duration(i+1)*time.Minute)))
	}
	h[3].EndTimestamp = metav1.Time{}
	w.Status.JobStatusList = []dag.JobStatus{{Name: "jf-a", RunningHistories: h}}
	res := plan(t, w, []dag.Job{job("a", dag.JobPhaseCompleted)}, dag.Options{HistoryLimit: 3, StatusSizeWarn: 100})
	got := res.Status.JobStatusList[0]
	if len(got.RunningHistories) != 3 || got.DroppedHistories != 2 || got.RunningHistories[0].State != "Pending" || got.RunningHistories[2].State != "Completed" {
		t.Fatalf("history limit: %+v", got)
	}
	warned := false
	for _, is := range res.Issues {
		warned = warned || is.Kind == dag.IssueStatusTooLarge
	}
	if !warned {
		t.Fatalf("no StatusTooLarge with %d bytes over a 100-byte threshold", res.StatusBytes)
	}
}

// TestSpecChanged covers the report of a mid-run spec edit.
func TestSpecChanged(t *testing.T) {
	w := wf(fl("a"), fl("b", "a"))
	first := plan(t, w, []dag.Job{job("a", dag.JobPhaseRunning)}, dag.Default())
	edited := wf(fl("a"), fl("c", "a"))
	edited.Status = first.Status
	res := plan(t, edited, []dag.Job{job("a", dag.JobPhaseCompleted), job("b", dag.JobPhaseRunning)}, dag.Default())
	if res.Status.SpecChange == nil || res.Status.SpecChange.Old != first.Status.SpecHash {
		t.Fatalf("no spec change recorded: %+v", res.Status.SpecChange)
	}
	if len(res.Create) != 1 || res.Create[0].Name != "jf-c" || len(res.Status.OrphanJobs) != 1 || res.Status.OrphanJobs[0] != "jf-b" {
		t.Fatalf("plan against the new spec: %s %v", res, res.Status.OrphanJobs)
	}
	found := false
	for _, is := range res.Issues {
		found = found || is.Kind == dag.IssueSpecChanged
	}
	if !found {
		t.Fatal("no SpecChanged issue")
	}
	if lazy := plan(t, edited, nil, dag.Options{SpecChange: dag.SpecChangeLazy}); lazy.Status.SpecChange != nil || lazy.Status.SpecHash != "" {
		t.Fatal("Lazy must not record spec hashes")
	}
}

// TestStatusBytesEscapedNames checks StatusBytes against encoding/json
// when job and flow names need escaping (possible only in an invalid spec,
// or with validation off): the planner sizes each name once and must fall
// back to sizing the flow name on its own.
func TestStatusBytesEscapedNames(t *testing.T) {
	for _, name := range []string{"a<b", "a&b", "é", "a\"b"} {
		w := wf(fl(name), fl("ok", name))
		jobs := []dag.Job{job(name, dag.JobPhaseRunning), job("ok", dag.JobPhasePending)}
		for _, opt := range []dag.Options{dag.Default(), {SkipValidation: true}, dag.VolcanoCompat()} {
			plan(t, w, jobs, opt) // plan checks StatusBytes against json.Marshal
		}
	}
}

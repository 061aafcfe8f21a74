package dag_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/dag"
)

// withTasks sets a job's task status counts: task → phase → count.
func withTasks(j dag.Job, counts map[string]map[string]int32) dag.Job {
	j.TaskStatusCount = map[string]dag.TaskState{}
	for task, ph := range counts {
		j.TaskStatusCount[task] = dag.TaskState{Phase: ph}
	}
	return j
}

// probed builds flow name depending on targets through a probe.
func probed(name string, pr dag.Probe, targets ...string) dag.Flow {
	return dag.Flow{Name: name, DependsOn: &dag.DependsOn{Targets: targets, Probe: &pr}}
}

// TestProbe covers probes in Default: a probe replaces "target Succeeded"
// with "target job exists and every entry passes".
func TestProbe(t *testing.T) {
	now := t0.Add(time.Hour)
	psUp := dag.Probe{TaskStatus: []dag.TaskStatusProbe{{Task: "ps", Phase: "Running"}}}
	httpUp := dag.Probe{HTTPGet: []dag.HTTPGetProbe{{Task: "ps", Path: "/healthz", Port: 8080}}, Period: 5 * time.Second}
	both := dag.Probe{TCPSocket: []dag.TCPSocketProbe{{Target: "a", Port: 6379}},
		TaskStatus: []dag.TaskStatusProbe{{Target: "b", Task: "w", Phase: "Succeeded", Min: 2}}}
	ps := func(phase dag.JobPhase, running int32) dag.Job {
		return withTasks(job("ps", phase), map[string]map[string]int32{"ps": {"Running": running}, "worker": {"Pending": 2}})
	}
	ok := func(flow string, entry int, at time.Duration, pass bool) dag.ProbeResult {
		return dag.ProbeResult{Flow: flow, Entry: entry, OK: pass, Time: now.Add(-at)}
	}
	type want struct {
		Phase   dag.Phase
		Create  []string
		Blocked []string
		Requeue time.Duration
	}
	for _, tc := range []struct {
		name    string
		flows   []dag.Flow
		jobs    []dag.Job
		results []dag.ProbeResult
		want    want
	}{
		{"no target job yet", []dag.Flow{fl("ps"), probed("workers", psUp, "ps")}, nil, nil,
			want{Phase: "Pending", Create: []string{"jf-ps"}, Blocked: []string{"workers: Dependency: ps.Probe is NotCreated"}}},
		{"task count below min waits and requeues", []dag.Flow{fl("ps"), probed("workers", psUp, "ps")}, []dag.Job{ps("Running", 0)}, nil,
			want{Phase: "Running", Blocked: []string{"workers: Probe: ps[0] on jf-ps: task ps Running 0/1"}, Requeue: dag.DefaultProbePeriod}},
		{"task count reached: created while the target runs", []dag.Flow{fl("ps"), probed("workers", psUp, "ps")}, []dag.Job{ps("Running", 1)}, nil,
			want{Phase: "Running", Create: []string{"jf-workers"}}},
		{"target completed with the count: still created", []dag.Flow{fl("ps"), probed("workers", psUp, "ps")}, []dag.Job{ps("Completed", 3)}, nil,
			want{Phase: "Running", Create: []string{"jf-workers"}}},
		{"target completed below the count: omitted, workflow fails", []dag.Flow{fl("ps"), probed("workers", psUp, "ps")}, []dag.Job{ps("Completed", 0)}, nil,
			want{Phase: "Failed"}},
		{"target failed: omitted", []dag.Flow{fl("ps"), probed("workers", psUp, "ps")}, []dag.Job{ps("Failed", 1)}, nil,
			want{Phase: "Failed"}},
		{"httpGet without a result waits one period", []dag.Flow{fl("ps"), probed("workers", httpUp, "ps")}, []dag.Job{ps("Running", 1)}, nil,
			want{Phase: "Running", Blocked: []string{"workers: Probe: ps[0] on jf-ps: httpGet no result"}, Requeue: 5 * time.Second}},
		{"httpGet failed", []dag.Flow{fl("ps"), probed("workers", httpUp, "ps")}, []dag.Job{ps("Running", 1)},
			[]dag.ProbeResult{ok("workers", 0, time.Second, false)},
			want{Phase: "Running", Blocked: []string{"workers: Probe: ps[0] on jf-ps: httpGet failed at 2026-01-01T12:59:59Z"}, Requeue: 5 * time.Second}},
		{"httpGet passed", []dag.Flow{fl("ps"), probed("workers", httpUp, "ps")}, []dag.Job{ps("Running", 1)},
			[]dag.ProbeResult{ok("workers", 0, time.Second, true)}, want{Phase: "Running", Create: []string{"jf-workers"}}},
		{"httpGet pass older than 3 periods is stale", []dag.Flow{fl("ps"), probed("workers", httpUp, "ps")}, []dag.Job{ps("Running", 1)},
			[]dag.ProbeResult{ok("workers", 0, 16*time.Second, true)},
			want{Phase: "Running", Blocked: []string{"workers: Probe: ps[0] on jf-ps: httpGet result from 2026-01-01T12:59:44Z is stale"}, Requeue: 5 * time.Second}},
		{"a pass exactly three periods old still counts", []dag.Flow{fl("ps"), probed("workers", httpUp, "ps")}, []dag.Job{ps("Running", 1)},
			[]dag.ProbeResult{ok("workers", 0, 15*time.Second, true)}, want{Phase: "Running", Create: []string{"jf-workers"}}},
		{"the latest result counts", []dag.Flow{fl("ps"), probed("workers", httpUp, "ps")}, []dag.Job{ps("Running", 1)},
			[]dag.ProbeResult{ok("workers", 0, time.Second, true), ok("workers", 0, 2*time.Second, false)}, want{Phase: "Running", Create: []string{"jf-workers"}}},
		{"a failure wins a tie", []dag.Flow{fl("ps"), probed("workers", httpUp, "ps")}, []dag.Job{ps("Running", 1)},
			[]dag.ProbeResult{ok("workers", 0, time.Second, true), ok("workers", 0, time.Second, false)},
			want{Phase: "Running", Blocked: []string{"workers: Probe: ps[0] on jf-ps: httpGet failed at 2026-01-01T12:59:59Z"}, Requeue: 5 * time.Second}},
		{"results of other flows and entries are ignored", []dag.Flow{fl("ps"), probed("workers", httpUp, "ps")}, []dag.Job{ps("Running", 1)},
			[]dag.ProbeResult{ok("ps", 0, 0, true), ok("workers", 1, 0, true)},
			want{Phase: "Running", Blocked: []string{"workers: Probe: ps[0] on jf-ps: httpGet no result"}, Requeue: 5 * time.Second}},
		{"two targets, entries per target, one pending", []dag.Flow{fl("a"), fl("b"), probed("c", both, "a", "b")},
			[]dag.Job{job("a", "Running"), withTasks(job("b", "Running"), map[string]map[string]int32{"w": {"Succeeded": 1}})},
			[]dag.ProbeResult{ok("c", 0, 0, true)},
			want{Phase: "Running", Blocked: []string{"c: Probe: b[1] on jf-b: task w Succeeded 1/2"}, Requeue: dag.DefaultProbePeriod}},
		{"two targets, every entry passes", []dag.Flow{fl("a"), fl("b"), probed("c", both, "a", "b")},
			[]dag.Job{job("a", "Running"), withTasks(job("b", "Running"), map[string]map[string]int32{"w": {"Succeeded": 2}})},
			[]dag.ProbeResult{ok("c", 0, 0, true)}, want{Phase: "Running", Create: []string{"jf-c"}}},
		{"one target missing: its dependency and the other's probe", []dag.Flow{fl("a"), fl("b", "a"), probed("c", both, "a", "b")},
			[]dag.Job{job("a", "Running")}, nil,
			want{Phase: "Running", Blocked: []string{"b: Dependency: a.Succeeded is Running",
				"c: Dependency: b.Probe is NotCreated; Probe: a[0] on jf-a: tcpSocket no result"}, Requeue: dag.DefaultProbePeriod}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := wf(tc.flows...)
			res, err := dag.Decide(dag.Snapshot{Flow: w, Jobs: tc.jobs, Now: now, ProbeResults: tc.results}, dag.Default())
			if err != nil {
				t.Fatal(err)
			}
			got := want{Phase: res.Status.State.Phase, Requeue: res.RequeueAfter}
			for _, c := range res.Create {
				got.Create = append(got.Create, c.Name)
			}
			for _, b := range res.Blocked {
				var rs []string
				for _, r := range b.Reasons {
					rs = append(rs, r.String())
				}
				got.Blocked = append(got.Blocked, b.Flow+": "+strings.Join(rs, "; "))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("plan (-want +got):\n%s\n%s", d, res)
			}
		})
	}
}

// TestProbeCompatIgnored checks that VolcanoCompat ignores the probe, so
// the target must be Completed, and says so with a warning.
func TestProbeCompatIgnored(t *testing.T) {
	w := wf(fl("ps"), probed("workers", dag.Probe{TaskStatus: []dag.TaskStatusProbe{{Task: "ps", Phase: "Running"}}}, "ps"))
	w.Status.State.Phase = dag.PhaseRunning
	j := withTasks(job("ps", "Running"), map[string]map[string]int32{"ps": {"Running": 1}})
	res, err := dag.Decide(dag.Snapshot{Flow: w, Jobs: []dag.Job{j}, Now: t0}, dag.VolcanoCompat())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Create) != 0 {
		t.Fatalf("compat created %v on a Running target", res.Create)
	}
	if got := summarize(res.Issues); !slices.Contains(got, "Warning NeedsPlancoreStateMachine@1 flows[1].dependsOn.probe") {
		t.Fatalf("issues = %v", got)
	}
	j.Phase = dag.JobPhaseCompleted
	res, _ = dag.Decide(dag.Snapshot{Flow: w, Jobs: []dag.Job{j}, Now: t0}, dag.VolcanoCompat())
	if len(res.Create) != 1 || res.Create[0].Name != "jf-workers" {
		t.Fatalf("compat create on Completed = %v", res.Create)
	}
}

// TestProbeValidation checks every probe issue, each reported.
func TestProbeValidation(t *testing.T) {
	bad := dag.Probe{
		HTTPGet:    []dag.HTTPGetProbe{{Target: "a", Path: "healthz", Port: 0, Headers: []dag.HTTPHeader{{Value: "x"}}}},
		TCPSocket:  []dag.TCPSocketProbe{{Port: 70000}},
		TaskStatus: []dag.TaskStatusProbe{{Target: "zz", Min: -1}},
		Period:     -time.Second,
	}
	flows := []dag.Flow{fl("a"), fl("b"), probed("c", bad, "a", "b"),
		{Name: "d", DependsOn: &dag.DependsOn{Depends: "a", Probe: &dag.Probe{}}}}
	got := summarize(dag.Lint(wf(flows...), dag.Options{}))
	want := []string{ // by (flow, kind, entry), then field
		"Error ProbeInvalid@2 flows[2].dependsOn.probe.plancorePeriod=-1s",
		"Error ProbeInvalid@2 flows[2].dependsOn.probe.httpGetList[0].path=healthz",
		"Error ProbeInvalid@2 flows[2].dependsOn.probe.httpGetList[0].plancoreHeaders[0].name",
		"Error ProbeInvalid@2 flows[2].dependsOn.probe.httpGetList[0].port=0",
		"Error ProbeInvalid@2 flows[2].dependsOn.probe.tcpSocketList[0].plancoreTarget",
		"Error ProbeInvalid@2 flows[2].dependsOn.probe.tcpSocketList[0].port=70000",
		"Error ProbeInvalid@2 flows[2].dependsOn.probe.taskStatusList[0].phase",
		"Error ProbeInvalid@2 flows[2].dependsOn.probe.taskStatusList[0].plancoreMin=-1",
		"Error ProbeInvalid@2 flows[2].dependsOn.probe.taskStatusList[0].plancoreTarget=zz",
		"Error ProbeInvalid@2 flows[2].dependsOn.probe.taskStatusList[0].taskName",
		"Error MixedDependencyForms@3 flows[3].dependsOn.probe",
		"Error ProbeInvalid@3 flows[3].dependsOn.probe",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("issues (-want +got):\n%s", d)
	}
	if _, err := dag.Decide(dag.Snapshot{Flow: wf(fl("a")), Now: t0}, dag.Options{ProbeTTL: -1}); !errors.Is(err, dag.ErrInvalidOptions) || !strings.Contains(err.Error(), "probeTTL") {
		t.Fatalf("negative ProbeTTL: err = %v", err)
	}
}

// TestProbeSpecHash checks that a probe is part of the spec hash and that
// specs without one keep theirs.
func TestProbeSpecHash(t *testing.T) {
	plain := wf(fl("a"), fl("b", "a")).Spec
	with := wf(fl("a"), probed("b", dag.Probe{TCPSocket: []dag.TCPSocketProbe{{Port: 1}}}, "a")).Spec
	other := wf(fl("a"), probed("b", dag.Probe{TCPSocket: []dag.TCPSocketProbe{{Port: 2}}}, "a")).Spec
	if h := dag.SpecHash(plain); h != dag.SpecHash(wf(fl("a"), fl("b", "a")).Spec) || h == dag.SpecHash(with) || dag.SpecHash(with) == dag.SpecHash(other) {
		t.Fatalf("hashes: plain %s, with %s, other %s", h, dag.SpecHash(with), dag.SpecHash(other))
	}
}

// TestProbeProperty checks the probe rule against a direct reading of the rule on
// random snapshots: flow p is created iff every target's job is observed
// and every entry passes (task count ≥ max(min, 1); the latest fresh
// result OK, a failure winning a tie); otherwise it is blocked, and with a
// target job observed RequeueAfter is within the period.
func TestProbeProperty(t *testing.T) {
	now := t0.Add(time.Hour)
	rapid.Check(t, func(t *rapid.T) {
		names, pr := drawProbe(t)
		flows := make([]dag.Flow, 0, len(names)+1)
		for _, n := range names {
			flows = append(flows, fl(n))
		}
		flows = append(flows, probed("p", pr, names...))
		jobs := drawProbeJobs(t, names)
		results := drawProbeResults(t, pr, now)
		period := pr.Period
		if period == 0 {
			period = dag.DefaultProbePeriod
		}
		ready, pending := probeReference(names, pr, jobs, results, now, period)
		var list []dag.Job
		for _, n := range names {
			if j, ok := jobs[n]; ok {
				list = append(list, j)
			}
		}
		res, err := dag.Decide(dag.Snapshot{Flow: wf(flows...), Jobs: list, Now: now, ProbeResults: results}, dag.Default())
		if err != nil {
			t.Fatal(err)
		}
		if issues := dag.Lint(wf(flows...), dag.Options{}); dag.HasErrors(issues) {
			t.Fatalf("generated an invalid spec: %v", issues)
		}
		created := slices.ContainsFunc(res.Create, func(c dag.CreateJob) bool { return c.Flow == "p" })
		blocked := slices.ContainsFunc(res.Blocked, func(b dag.Blocked) bool { return b.Flow == "p" })
		if created != ready || blocked == ready {
			t.Fatalf("ready = %v, created = %v, blocked = %v\n%s", ready, created, blocked, res)
		}
		if pending && (res.RequeueAfter <= 0 || res.RequeueAfter > period) || !pending && res.RequeueAfter != 0 {
			t.Fatalf("pending = %v, RequeueAfter = %v, period %v\n%s", pending, res.RequeueAfter, period, res)
		}
	})
}

// drawProbe draws one to three target flows and a probe over them.
func drawProbe(t *rapid.T) ([]string, dag.Probe) {
	nt := rapid.IntRange(1, 3).Draw(t, "targets")
	var names []string
	for k := range nt {
		names = append(names, fmt.Sprintf("t%d", k))
	}
	target := func(label string) string {
		if nt == 1 && rapid.Bool().Draw(t, label+"-empty") {
			return ""
		}
		return rapid.SampledFrom(names).Draw(t, label)
	}
	var pr dag.Probe
	pr.Period = time.Duration(rapid.IntRange(0, 20).Draw(t, "period")) * time.Second
	for k := range rapid.IntRange(0, 2).Draw(t, "http") {
		pr.HTTPGet = append(pr.HTTPGet, dag.HTTPGetProbe{Target: target(fmt.Sprintf("h%d", k)), Port: 80})
	}
	for k := range rapid.IntRange(0, 2).Draw(t, "tcp") {
		pr.TCPSocket = append(pr.TCPSocket, dag.TCPSocketProbe{Target: target(fmt.Sprintf("c%d", k)), Port: 80})
	}
	for k := range rapid.IntRange(0, 2).Draw(t, "task") {
		pr.TaskStatus = append(pr.TaskStatus, dag.TaskStatusProbe{Target: target(fmt.Sprintf("s%d", k)), Task: "w", Phase: "Running",
			Min: int32(rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("min%d", k)))})
	}
	return names, pr
}

// drawProbeJobs draws, for each target, maybe a job with some running pods.
func drawProbeJobs(t *rapid.T, names []string) map[string]dag.Job {
	jobs := map[string]dag.Job{}
	for _, n := range names {
		if rapid.IntRange(0, 3).Draw(t, n+"-exists") > 0 {
			j := withTasks(job(n, rapid.SampledFrom([]dag.JobPhase{"", "Pending", "Running"}).Draw(t, n+"-phase")),
				map[string]map[string]int32{"w": {"Running": int32(rapid.IntRange(0, 4).Draw(t, n+"-running"))}})
			jobs[n] = j
		}
	}
	return jobs
}

// drawProbeResults draws results for p's entries (and some for another flow).
func drawProbeResults(t *rapid.T, pr dag.Probe, now time.Time) []dag.ProbeResult {
	var results []dag.ProbeResult
	for range rapid.IntRange(0, 6).Draw(t, "results") {
		results = append(results, dag.ProbeResult{Flow: rapid.SampledFrom([]string{"p", "t0"}).Draw(t, "rflow"),
			Entry: rapid.IntRange(0, len(pr.Entries())).Draw(t, "rentry"), OK: rapid.Bool().Draw(t, "rok"),
			Time: now.Add(-time.Duration(rapid.IntRange(0, 70).Draw(t, "rage")) * time.Second)})
	}
	return results
}

// probeReference is the rule read directly: ready iff every target's job is
// observed and every entry passes; pending iff some entry of an observed job
// does not pass yet.
func probeReference(names []string, pr dag.Probe, jobs map[string]dag.Job, results []dag.ProbeResult, now time.Time, period time.Duration) (ready, pending bool) {
	targetOf := func(e dag.ProbeEntry) string {
		if e.Target() == "" {
			return names[0]
		}
		return e.Target()
	}
	ready = true
	for _, n := range names {
		_, ok := jobs[n]
		ready = ready && ok
	}
	for _, e := range pr.Entries() {
		j, ok := jobs[targetOf(e)]
		if !ok {
			continue
		}
		var pass bool
		if e.TaskStatus != nil {
			pass = j.TaskStatusCount["w"].Phase["Running"] >= max(e.TaskStatus.Min, 1)
		} else {
			latest := latestResult(results, e.Index)
			pass = latest != nil && latest.OK && now.Sub(latest.Time) <= 3*period
		}
		ready, pending = ready && pass, pending || !pass
	}
	return ready, pending
}

// latestResult is p's latest result for an entry, a failure winning a tie.
func latestResult(results []dag.ProbeResult, entry int) *dag.ProbeResult {
	var latest *dag.ProbeResult
	for k := range results {
		r := &results[k]
		if r.Flow != "p" || r.Entry != entry {
			continue
		}
		if latest == nil || r.Time.After(latest.Time) || r.Time.Equal(latest.Time) && !r.OK {
			latest = r
		}
	}
	return latest
}

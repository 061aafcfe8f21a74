package dag_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/plancore/plancore/internal/invalidtest"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/dag"
)

// TestBadInput feeds the bad input a user would try through the public API.
// Each row either names the sentinel and the exact field paths of the error,
// or (kind nil) is legal input whose plan must be checked by the row itself.
func TestBadInput(t *testing.T) {
	neg := -time.Second
	decide := func(s dag.Snapshot, o dag.Options) func() error {
		return func() error { _, err := dag.Decide(s, o); return err }
	}
	check := func(w dag.Workflow) func() error { return func() error { return dag.Check(w, dag.Default()) } }
	retry := func(r dag.Retry) dag.Workflow { return wf(dag.Flow{Name: "a", Retry: &r}) }
	rows := []struct {
		name   string
		call   func() error
		kind   error
		fields []string
	}{
		{"zero now", decide(dag.Snapshot{Flow: wf(fl("a"))}, dag.Default()), dag.ErrInvalidInput, []string{"now"}},
		{"unknown previous phase", decide(dag.Snapshot{Flow: withPhase(wf(fl("a")), "Paused"), Now: t0}, dag.VolcanoCompat()),
			dag.ErrInvalidInput, []string{"flow.status.state.phase"}},
		{"duplicate job names", decide(dag.Snapshot{Flow: wf(fl("a")), Jobs: []dag.Job{job("a", ""), job("a", "")}, Now: t0}, dag.Default()),
			dag.ErrInvalidInput, []string{"jobs[1].name"}},
		{"empty job name and negative running duration", decide(dag.Snapshot{Flow: wf(fl("a")), Jobs: []dag.Job{{RunningDuration: &neg}}, Now: t0}, dag.Default()),
			dag.ErrInvalidInput, []string{"jobs[0].name", "jobs[0].runningDuration"}},
		// Dropping the uid check makes these two fail: the plan created
		// jf-a with an owner reference the API server refuses (no uid).
		{"a workflow without a uid", decide(dag.Snapshot{Flow: func() dag.Workflow { w := wf(fl("a")); w.UID = ""; return w }(), Now: t0}, dag.VolcanoCompat()),
			dag.ErrInvalidInput, []string{"flow.uid"}},
		{"every snapshot problem at once", decide(dag.Snapshot{Flow: func() dag.Workflow { w := withPhase(wf(fl("a")), "Paused"); w.UID = ""; return w }(), Jobs: []dag.Job{job("a", ""), job("a", "")}}, dag.Default()),
			dag.ErrInvalidInput, []string{"now", "flow.uid", "flow.status.state.phase", "jobs[1].name"}},
		{"previous attempt out of range", decide(dag.Snapshot{Flow: func() dag.Workflow {
			w := wf(fl("a"))
			w.Status.JobStatusList = []dag.JobStatus{{Name: "jf-a", Attempt: math.MaxInt}, {Name: "jf-b", Attempt: -1}}
			return w
		}(), Now: t0}, dag.Default()), dag.ErrInvalidInput, []string{"flow.status.jobStatusList[0].attempt", "flow.status.jobStatusList[1].attempt"}},
		{"every bad option at once", decide(dag.Snapshot{Flow: wf(fl("a")), Now: t0}, dag.Options{SuccessRule: "x", StateMachine: "x", Buckets: "x",
			AbortedPolicy: "x", SpecChange: "x", HistoryLimit: -1, ProbeTTL: -1, StatusSizeWarn: math.MinInt}),
			dag.ErrInvalidOptions, []string{"successRule", "stateMachine", "buckets", "abortedPolicy", "specChange", "historyLimit", "probeTTL", "statusSizeWarn"}},
		{"nil executor", func() error {
			_, err := dag.Apply(context.Background(), dag.Plan{}, nil)
			if !errors.Is(err, dag.ErrNilExecutor) {
				return errors.New("want ErrNilExecutor")
			}
			return err
		}, dag.ErrInvalidInput, nil},
		{"check: empty flow name", check(wf(fl(""))), dag.ErrInvalidInput, []string{"spec.flows[0].name"}},
		{"check: duplicate flow", check(wf(fl("a"), fl("a"))), dag.ErrInvalidInput, []string{"spec.flows[1].name"}},
		{"check: flow name no Job may carry", check(wf(fl("a"), fl("Train_A"))), dag.ErrInvalidInput, []string{"spec.flows[1].name"}},
		{"check: empty workflow name", check(dag.Workflow{Namespace: "ns", Spec: dag.Spec{Flows: []dag.Flow{fl("a")}}}), dag.ErrInvalidInput, []string{"metadata.name"}},
		{"legal: VolcanoCompat plans a flow name the API server will refuse, as Volcano does", func() error {
			p, err := dag.Decide(dag.Snapshot{Flow: wf(fl("Train_A")), Now: t0}, dag.VolcanoCompat())
			if err == nil && (len(p.Create) != 1 || p.Create[0].Name != "jf-Train_A") {
				return errors.New("want jf-Train_A created: " + p.String())
			}
			return err
		}, nil, nil},
		{"check: unknown target", check(wf(fl("a", "ghost"))), dag.ErrInvalidInput, []string{"spec.flows[0].dependsOn.targets[0]"}},
		{"check: cycle", check(wf(fl("a", "b"), fl("b", "a"))), dag.ErrInvalidInput, []string{"spec.flows[0].dependsOn"}},
		{"check: negative retry limit and backoff", check(retry(dag.Retry{Limit: math.MinInt, Backoff: dag.Backoff{Duration: math.MinInt64, Factor: math.NaN(), Cap: -1}})),
			dag.ErrInvalidInput, []string{"spec.flows[0].plancoreRetry.backoff.cap", "spec.flows[0].plancoreRetry.backoff.duration", "spec.flows[0].plancoreRetry.backoff.factor", "spec.flows[0].plancoreRetry.limit"}},
		{"check: MaxInt retry limit", check(retry(dag.Retry{Limit: math.MaxInt})), dag.ErrInvalidInput, []string{"spec.flows[0].plancoreRetry.limit"}},
		{"check: negative parallelism", check(func() dag.Workflow { w := wf(fl("a")); w.Spec.Parallelism = math.MinInt; return w }()),
			dag.ErrInvalidInput, []string{"spec.plancoreParallelism"}},
		{"topo of a cycle", func() error { _, err := dag.Topo(wf(fl("a", "a")), dag.Default()); return err },
			dag.ErrInvalidInput, []string{"spec.flows[0].dependsOn"}},
		{"volcano webhook: unknown vertex", func() error { return dag.ValidateVolcano(wf(fl("a", "q")).Spec) }, dag.ErrInvalidInput,
			[]string{"spec.flows[0].dependsOn.targets[0]"}},
		{"legal: an invalid spec is a plan outcome, not an error", func() error {
			p, err := dag.Decide(dag.Snapshot{Flow: wf(fl("a", "ghost")), Now: t0}, dag.Default())
			if err == nil && (p.Status.State.Phase != dag.PhaseFailed || p.Status.State.Reason != string(dag.ReasonInvalidSpec)) {
				return errors.New("want Failed (InvalidSpec): " + p.String())
			}
			return err
		}, nil, nil},
		{"legal: MaxInt parallelism and history limit", func() error {
			w := wf(fl("a"), fl("b"))
			w.Spec.Parallelism = math.MaxInt
			p, err := dag.Decide(dag.Snapshot{Flow: w, Now: t0}, dag.Options{HistoryLimit: math.MaxInt, StatusSizeWarn: math.MaxInt})
			if err == nil && len(p.Create) != 2 {
				return errors.New("want both jobs created: " + p.String())
			}
			return err
		}, nil, nil},
		{"legal: MaxInt64 backoff waits, never a negative wait", func() error {
			w := retry(dag.Retry{Limit: 1, Backoff: dag.Backoff{Duration: math.MaxInt64}})
			p, err := dag.Decide(dag.Snapshot{Flow: w, Jobs: []dag.Job{job("a", dag.JobPhaseFailed)}, Now: t0}, dag.Default())
			if err == nil && (len(p.Delete) != 0 || p.RequeueAfter <= 0) {
				return errors.New("want a wait: " + p.String())
			}
			return err
		}, nil, nil},
		{"legal: nil jobs, flows and maps", decide(dag.Snapshot{Flow: dag.Workflow{Name: "jf", UID: "u"}, Now: t0}, dag.Default()), nil, nil},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			invalidtest.Check(t, r.call(), r.kind, r.fields)
		})
	}
}

// TestPropertyHostileBackoff: whatever duration, factor, cap and attempt a
// retry carries, Decide never panics and never turns a positive backoff into
// an immediate retry or a negative wake-up: a valid positive backoff blocks
// the flow with Backoff and a positive RequeueAfter; an invalid one fails
// the workflow (InvalidSpec). (Restoring the unsaturated float-to-Duration
// conversion in Backoff.wait makes it fail: a MaxInt64 duration waits a
// negative time and the job is deleted at once.)
func TestPropertyHostileBackoff(t *testing.T) {
	durs := []time.Duration{0, -1, 1, time.Second, math.MaxInt64 / 2, math.MaxInt64, math.MinInt64}
	factors := []float64{0, -1, 0.5, 1, 2, 1e308, math.Inf(1), math.NaN(), math.MaxFloat64}
	rapid.Check(t, func(t *rapid.T) {
		b := dag.Backoff{Duration: rapid.SampledFrom(durs).Draw(t, "duration"), Factor: rapid.SampledFrom(factors).Draw(t, "factor"),
			Cap: rapid.SampledFrom(durs).Draw(t, "cap")}
		attempt := rapid.SampledFrom([]int{1, 2, 3, 63, 64, 1000, math.MaxInt32}).Draw(t, "attempt")
		w := wf(dag.Flow{Name: "a", Retry: &dag.Retry{Limit: math.MaxInt32, Backoff: b}})
		w.Status.JobStatusList = []dag.JobStatus{{Name: "jf-a", Flow: "a", Attempt: attempt}}
		w.Status.State.Phase = dag.PhaseRunning
		p, err := dag.Decide(dag.Snapshot{Flow: w, Jobs: []dag.Job{job("a", dag.JobPhaseFailed)}, Now: t0}, dag.Default())
		if err != nil {
			t.Fatal(err)
		}
		if p.RequeueAfter < 0 {
			t.Fatalf("negative RequeueAfter %v: %s", p.RequeueAfter, p)
		}
		valid := dag.Check(w, dag.Default()) == nil
		if !valid {
			if p.Status.State.Phase != dag.PhaseFailed {
				t.Fatalf("invalid backoff %+v planned: %s", b, p)
			}
			return
		}
		if b.Duration > 0 && (b.Cap == 0 || b.Cap > 0) && (len(p.Delete) != 0 || p.RequeueAfter <= 0) {
			t.Fatalf("backoff %+v, attempt %d: retried without waiting: %s", b, attempt, p)
		}
	})
}

// TestPropertyDecideRefusesWhatValidateRefuses: on snapshots and options
// with random defects, Decide fails exactly when Options.Validate or
// Snapshot.Validate does, with the same error. (Making Decide skip a check
// either runs makes it fail.)
func TestPropertyDecideRefusesWhatValidateRefuses(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := wf(fl("a"), fl("b", "a"))
		s := dag.Snapshot{Flow: w, Now: t0}
		if rapid.Bool().Draw(t, "zero now") {
			s.Now = time.Time{}
		}
		s.Flow.Status.State.Phase = rapid.SampledFrom([]dag.Phase{"", dag.PhaseRunning, "Paused"}).Draw(t, "phase")
		for range rapid.IntRange(0, 3).Draw(t, "jobs") {
			j := job(rapid.SampledFrom([]string{"a", "b", "zz"}).Draw(t, "job"), dag.JobPhaseRunning)
			if rapid.IntRange(0, 4).Draw(t, "empty name") == 0 {
				j.Name = ""
			}
			s.Jobs = append(s.Jobs, j)
		}
		o := rapid.SampledFrom([]dag.Options{dag.Default(), dag.VolcanoCompat(), {HistoryLimit: -1}}).Draw(t, "options")
		_, derr := dag.Decide(s, o)
		verr := o.Validate()
		if verr == nil {
			verr = s.Validate()
		}
		if (derr == nil) != (verr == nil) || derr != nil && derr.Error() != verr.Error() {
			t.Fatalf("Decide: %v\nValidate: %v", derr, verr)
		}
	})
}

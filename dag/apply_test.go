package dag_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/fake"
)

// recorder is an executor that logs calls and fails on demand.
type recorder struct {
	calls []string
	fail  map[string]error
}

func (r *recorder) do(call string) error {
	r.calls = append(r.calls, call)
	return r.fail[call]
}

func (r *recorder) CreateJob(_ context.Context, c dag.CreateJob) error {
	return r.do("create " + c.Name)
}
func (r *recorder) DeleteJob(_ context.Context, d dag.DeleteJob) error {
	return r.do("delete " + d.Name)
}
func (r *recorder) UpdateStatus(_ context.Context, ns, name string, _ dag.Status) error {
	return r.do("status " + ns + "/" + name)
}

func TestApply(t *testing.T) {
	plan := dag.Plan{Namespace: "ns", Name: "jf", WriteStatus: true,
		Delete: []dag.DeleteJob{{Name: "jf-x", Reason: dag.Reason{Code: dag.ReasonRetry}}},
		Create: []dag.CreateJob{{Name: "jf-a"}, {Name: "jf-b"}}}
	boom := errors.New("boom")
	cases := []struct {
		name    string
		plan    dag.Plan
		fail    map[string]error
		calls   []string
		wantErr error
		skipped int
	}{
		{"deletes, creates, then the status", plan, nil, []string{"delete jf-x", "create jf-a", "create jf-b", "status ns/jf"}, nil, 0},
		{"already exists counts as created", plan, map[string]error{"create jf-a": fmt.Errorf("x: %w", dag.ErrAlreadyExists)},
			[]string{"delete jf-x", "create jf-a", "create jf-b", "status ns/jf"}, nil, 0},
		{"not found counts as deleted", plan, map[string]error{"delete jf-x": dag.ErrNotFound},
			[]string{"delete jf-x", "create jf-a", "create jf-b", "status ns/jf"}, nil, 0},
		{"the first error stops the rest and the status write", plan, map[string]error{"create jf-a": boom},
			[]string{"delete jf-x", "create jf-a"}, boom, 2},
		{"strict retention delete aborts on not found (Volcano)", dag.Plan{StrictDelete: true, Delete: []dag.DeleteJob{{Name: "jf-a", Reason: dag.Reason{Code: dag.ReasonRetention}}, {Name: "jf-b", Reason: dag.Reason{Code: dag.ReasonRetention}}}},
			map[string]error{"delete jf-a": dag.ErrNotFound}, []string{"delete jf-a"}, dag.ErrNotFound, 1},
		{"no write when the plan says so", dag.Plan{Create: []dag.CreateJob{{Name: "jf-a"}}}, nil, []string{"create jf-a"}, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{fail: tc.fail}
			rep, err := dag.Apply(context.Background(), tc.plan, r)
			if diff := cmp.Diff(tc.calls, r.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			skipped := 0
			for _, a := range rep.Actions {
				if a.Skipped {
					skipped++
				}
			}
			if skipped != tc.skipped {
				t.Errorf("skipped %d, want %d: %+v", skipped, tc.skipped, rep.Actions)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &recorder{}
	if _, err := dag.Apply(ctx, plan, r); !errors.Is(err, context.Canceled) || len(r.calls) != 0 {
		t.Fatalf("cancelled context: err %v, calls %v", err, r.calls)
	}
}

// TestFakeRunnerFaultsConverge runs random workflows with informer lag and
// failing calls: every run still ends Succeed or Failed, and no job is ever
// created twice while its previous attempt exists.
func TestFakeRunnerFaultsConverge(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		w := fake.NewWorld(seed, t0)
		r := fake.NewDAGRunner(w)
		r.Lag = 0.3
		r.Ends = map[dag.JobPhase]int{dag.JobPhaseCompleted: 6, dag.JobPhaseFailed: 1}
		w.Faults.SetRates(fake.KindDAGCreate, 0.2, 0.1, errors.New("apiserver unavailable"))
		w.Faults.SetRates(fake.KindDAGStatus, 0.1, 0.1, errors.New("conflict"))
		wf := wf(dag.Flow{Name: "a", Retry: &dag.Retry{Limit: 3}}, fl("b", "a"), fl("c", "a"), fl("d", "b", "c"))
		var phase dag.Phase
		for round := 0; round < 80 && phase != dag.PhaseSucceed && phase != dag.PhaseFailed; round++ {
			res, err := dag.Decide(r.Snapshot(wf), dag.Default())
			if err != nil {
				t.Fatal(err)
			}
			_, _ = dag.Apply(context.Background(), res, r)
			phase = r.Status("ns", "jf").State.Phase
			r.Step()
			w.Clock.Advance(30 * time.Second)
		}
		if phase != dag.PhaseSucceed && phase != dag.PhaseFailed {
			t.Fatalf("seed %d: phase %q after 80 rounds", seed, phase)
		}
		if n := w.Calls.Count(fake.KindDAGCreate, fake.OutcomeOK, fake.OutcomeLostResponse); n > 4+3 {
			t.Fatalf("seed %d: %d successful creates for 4 flows with 3 retries", seed, n)
		}
	}
}

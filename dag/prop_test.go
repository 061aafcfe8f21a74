package dag_test

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/plancore/plancore/dag"
	"github.com/plancore/plancore/dag/dagtest"
	"github.com/plancore/plancore/fake"
)

// bound is the termination bound: D + 2R + 1, or N + 2ΣR + 1 with
// parallelism, where finally flows sit one level below every main flow.
func bound(w dag.Workflow) int {
	limit := func(f dag.Flow) int {
		switch {
		case f.Retry != nil:
			return f.Retry.Limit
		case w.Spec.Retry != nil:
			return w.Spec.Retry.Limit
		}
		return 0
	}
	idx := map[string]int{}
	for i, f := range w.Spec.Flows {
		idx[f.Name] = i
	}
	depth := make([]int, len(w.Spec.Flows))
	rsum := make([]int, len(w.Spec.Flows))
	D, R, total := 0, 0, 0
	// Flows may be listed out of dependency order: each is sized after its
	// references (the spec is acyclic).
	done := make([]bool, len(w.Spec.Flows))
	var visit func(i int)
	visit = func(i int) {
		if done[i] {
			return
		}
		done[i] = true
		f := w.Spec.Flows[i]
		depth[i], rsum[i] = 1, limit(f)
		var refs []string
		if f.DependsOn != nil {
			refs = append(refs, f.DependsOn.Targets...)
			for _, ts := range f.DependsOn.TargetsWithStatus {
				refs = append(refs, ts.Name)
			}
			for _, tok := range strings.FieldsFunc(f.DependsOn.Depends, func(r rune) bool { return strings.ContainsRune("!()&| ", r) }) {
				refs = append(refs, strings.Split(tok, ".")[0])
			}
		}
		for _, r := range refs {
			j := idx[r]
			visit(j)
			depth[i] = max(depth[i], depth[j]+1)
			rsum[i] = max(rsum[i], rsum[j]+limit(f))
		}
	}
	for i, f := range w.Spec.Flows {
		visit(i)
		D, R, total = max(D, depth[i]), max(R, rsum[i]), total+limit(f)
	}
	fr := 0
	for _, f := range w.Spec.Finally {
		fr = max(fr, limit(f))
		total += limit(f)
	}
	if len(w.Spec.Finally) > 0 {
		D++
		R += fr
	}
	if w.Spec.Parallelism > 0 {
		return len(w.Spec.Flows) + len(w.Spec.Finally) + 2*total + 1
	}
	return D + 2*R + 1
}

// condition evaluates a flow's dependency in Kleene logic from a status,
// written apart from the planner: 1 true, 0 false, -1 undecided.
func condition(t *rapid.T, w dag.Workflow, f dag.Flow, st dag.Status) int {
	entries := map[string]dag.JobStatus{}
	for _, e := range st.JobStatusList {
		entries[e.Flow] = e
	}
	atom := func(tok string) int {
		name, res, _ := strings.Cut(tok, ".")
		if res == "" || res == "Completed" {
			res = "Succeeded"
		}
		if res == "Running" {
			res = "Started"
		}
		e, ok := entries[name]
		final := ok && e.Outcome != ""
		switch res {
		case "Done":
			if final {
				return 1
			}
			return -1
		case "Started":
			switch {
			case ok && e.Started:
				return 1
			case final:
				return 0
			}
			return -1
		}
		if !final {
			return -1
		}
		if string(e.Outcome) == res {
			return 1
		}
		return 0
	}
	and := func(vs ...int) int {
		out := 1
		for _, v := range vs {
			if v == 0 {
				return 0
			}
			if v < 0 {
				out = -1
			}
		}
		return out
	}
	if f.DependsOn == nil {
		return 1
	}
	if f.DependsOn.Depends != "" {
		e, err := dag.ParseDepends(f.DependsOn.Depends)
		if err != nil {
			t.Fatalf("generated expression %q: %v", f.DependsOn.Depends, err)
		}
		var eval func(e *dag.Expr) int
		eval = func(e *dag.Expr) int {
			switch e.Op {
			case dag.OpRef:
				return atom(e.Token)
			case dag.OpNot:
				if v := eval(e.Args[0]); v >= 0 {
					return 1 - v
				}
				return -1
			case dag.OpAnd:
				var vs []int
				for _, a := range e.Args {
					vs = append(vs, eval(a))
				}
				return and(vs...)
			default:
				out := 0
				for _, a := range e.Args {
					switch eval(a) {
					case 1:
						return 1
					case -1:
						out = -1
					}
				}
				return out
			}
		}
		return eval(e)
	}
	var vs []int
	for _, tg := range f.DependsOn.Targets {
		vs = append(vs, atom(tg))
	}
	for _, ts := range f.DependsOn.TargetsWithStatus {
		vs = append(vs, atom(ts.Name+"."+ts.Phase))
	}
	return and(vs...)
}

// run drives one random workflow against the fake runner, checking every
// per-plan invariant, and returns the phases seen.
type runStats struct {
	plans          int
	final          dag.Phase
	completedSeen  map[string]bool
	everyCompleted bool
}

func runWorkflow(t *rapid.T, w dag.Workflow, opt dag.Options, seed uint64, maxPlans int, finish bool) runStats {
	world := fake.NewWorld(seed, t0)
	r := fake.NewDAGRunner(world)
	r.Ends = map[dag.JobPhase]int{dag.JobPhaseCompleted: rapid.IntRange(1, 8).Draw(t, "okWeight"), dag.JobPhaseFailed: 1, dag.JobPhaseTerminated: 1, dag.JobPhaseAborted: 1}
	if rapid.Bool().Draw(t, "allSucceed") {
		r.Ends = nil
	}
	flows := append(slices.Clone(w.Spec.Flows), w.Spec.Finally...)
	isFinally := map[string]bool{}
	for _, f := range w.Spec.Finally {
		isFinally[f.Name] = true
	}
	creates := map[string]int{}
	retryDeletes := map[string]int{}
	completedSeen, failedSeen := map[string]bool{}, map[string]bool{}
	var terminal dag.Phase
	stats := runStats{completedSeen: completedSeen}
	for plan := 1; plan <= maxPlans; plan++ {
		s := r.Snapshot(w)
		present := map[string]dag.Job{}
		for _, j := range s.Jobs {
			present[j.Name] = j
			switch {
			case j.Phase == dag.JobPhaseCompleted:
				completedSeen[strings.TrimPrefix(j.Name, "jf-")] = true
			case j.Phase == dag.JobPhaseFailed || j.Phase == dag.JobPhaseTerminated || j.Phase == dag.JobPhaseAborted:
				failedSeen[strings.TrimPrefix(j.Name, "jf-")] = true
			}
		}
		before := deepCopySnapshot(s)
		res, err := dag.Decide(s, opt)
		if err != nil {
			t.Fatalf("plan %d: %v", plan, err)
		}
		// 7. Purity and determinism.
		// reflect.DeepEqual first: cmp.Diff is only for the failure message.
		if !reflect.DeepEqual(before, s) {
			t.Fatalf("plan %d mutated its input:\n%s", plan, cmp.Diff(before, s))
		}
		perm := deepCopySnapshot(s)
		slices.Reverse(perm.Jobs)
		again, _ := dag.Decide(perm, opt)
		if !reflect.DeepEqual(res, again) {
			t.Fatalf("plan %d depends on job order:\n%s", plan, cmp.Diff(res, again))
		}
		// 8. Fixpoint.
		fix := perm
		fix.Flow.Status = res.Status
		fixed, _ := dag.Decide(fix, opt)
		if !reflect.DeepEqual(res.Status, fixed.Status) {
			t.Fatalf("plan %d: re-planning with its own status changed it:\n%s", plan, cmp.Diff(res.Status, fixed.Status))
		}
		if fixed.WriteStatus {
			t.Fatalf("plan %d: fixpoint still writes", plan)
		}
		// Break that makes it fail: one slot too many in createReady's
		// parallelism cap (default.go).
		if err := dag.CheckPlan(s, opt, res); err != nil {
			t.Fatalf("plan %d: %v\n%s", plan, err, res)
		}
		checkPlan(t, plan, w, s, res, flows, isFinally, present, creates, retryDeletes, completedSeen, failedSeen, terminal)
		if terminal == "" && (res.Status.State.Phase == dag.PhaseSucceed || res.Status.State.Phase == dag.PhaseFailed) {
			terminal = res.Status.State.Phase
			stats.plans = plan
		}
		if _, err := dag.Apply(context.Background(), res, r); err != nil {
			t.Fatalf("apply: %v", err)
		}
		if finish {
			r.Finish()
			world.Clock.Advance(2 * time.Minute) // with the minute below: more than cap + M
		} else {
			for range rapid.IntRange(0, 3).Draw(t, "steps") {
				r.Step()
			}
		}
		world.Clock.Advance(time.Duration(rapid.IntRange(1, 3).Draw(t, "minutes")) * time.Minute)
	}
	stats.final = terminal
	stats.everyCompleted = true
	for _, f := range w.Spec.Flows {
		stats.everyCompleted = stats.everyCompleted && completedSeen[f.Name]
	}
	return stats
}

func checkPlan(t *rapid.T, plan int, w dag.Workflow, s dag.Snapshot, res dag.Plan, flows []dag.Flow, isFinally map[string]bool,
	present map[string]dag.Job, creates, retryDeletes map[string]int, completedSeen, failedSeen map[string]bool, terminal dag.Phase) {
	c := planCheck{t: t, plan: plan, w: w, s: s, res: res, isFinally: isFinally, present: present, creates: creates,
		retryDeletes: retryDeletes, completedSeen: completedSeen, failedSeen: failedSeen, byName: map[string]dag.Flow{}}
	for _, f := range flows {
		c.byName[f.Name] = f
	}
	c.entries = c.groundedOutcomes()
	c.absorbing(terminal)
	c.createsOnce()
}

// planCheck holds what checkPlan's steps read.
type planCheck struct {
	t                         *rapid.T
	plan                      int
	w                         dag.Workflow
	s                         dag.Snapshot
	res                       dag.Plan
	isFinally                 map[string]bool
	present                   map[string]dag.Job
	creates, retryDeletes     map[string]int
	completedSeen, failedSeen map[string]bool
	byName                    map[string]dag.Flow
	entries                   map[string]dag.JobStatus
}

// groundedOutcomes checks that outcomes are grounded in what was observed,
// and returns the status entries by flow.
func (c *planCheck) groundedOutcomes() map[string]dag.JobStatus {
	entries := map[string]dag.JobStatus{}
	for _, e := range c.res.Status.JobStatusList {
		entries[e.Flow] = e
		if e.Outcome == dag.OutcomeSucceeded && !c.completedSeen[e.Flow] {
			c.t.Fatalf("plan %d: %s Succeeded but its job was never observed Completed", c.plan, e.Flow)
		}
		if e.Outcome == dag.OutcomeFailed && !c.failedSeen[e.Flow] {
			c.t.Fatalf("plan %d: %s Failed but its job never failed", c.plan, e.Flow)
		}
	}
	return entries
}

// absorbing: a terminal phase stays, creates nothing and deletes only for
// retention.
func (c *planCheck) absorbing(terminal dag.Phase) {
	if terminal == "" {
		return
	}
	st := c.res.Status
	if st.State.Phase != terminal || len(c.res.Create) > 0 {
		c.t.Fatalf("plan %d: after %s got %s with %d creates", c.plan, terminal, st.State.Phase, len(c.res.Create))
	}
	for _, d := range c.res.Delete {
		if d.Reason.Code != dag.ReasonRetention {
			c.t.Fatalf("plan %d: %s deletes %s for %s", c.plan, terminal, d.Name, d.Reason)
		}
	}
}

// createsOnce: every create's condition holds (by the reference evaluator
// above), and a re-create follows a retry delete (dag.CheckPlan checks the
// rest of each create: not twice, not observed, finally flows last, within
// the parallelism).
func (c *planCheck) createsOnce() {
	for _, d := range c.res.Delete {
		if d.Reason.Code == dag.ReasonRetry {
			c.retryDeletes[d.Flow]++
		}
	}
	for _, cr := range c.res.Create {
		if v := condition(c.t, c.w, c.byName[cr.Flow], c.res.Status); v != 1 {
			c.t.Fatalf("plan %d creates %s whose condition is %d\n%s", c.plan, cr.Name, v, c.res)
		}
		c.recreateAfterRetry(cr)
	}
}

func (c *planCheck) recreateAfterRetry(cr dag.CreateJob) {
	if c.creates[cr.Flow] > 0 {
		if c.retryDeletes[cr.Flow] < c.creates[cr.Flow] {
			c.t.Fatalf("plan %d re-creates %s (create %d) without a retry delete", c.plan, cr.Flow, c.creates[cr.Flow]+1)
		}
		if c.completedSeen[cr.Flow] {
			c.t.Fatalf("plan %d re-creates %s, which succeeded", c.plan, cr.Flow)
		}
	}
	c.creates[cr.Flow]++
	if cr.Attempt != c.creates[cr.Flow] {
		c.t.Fatalf("plan %d: %s attempt %d, create number %d", c.plan, cr.Name, cr.Attempt, c.creates[cr.Flow])
	}
}

// deepCopySnapshot copies everything reachable from s.
func deepCopySnapshot(s dag.Snapshot) dag.Snapshot {
	out := s
	out.Jobs = nil
	if s.Jobs != nil {
		out.Jobs = make([]dag.Job, len(s.Jobs))
	}
	for i, j := range s.Jobs {
		c := j
		c.Labels = maps.Clone(j.Labels)
		if j.RunningDuration != nil {
			d := *j.RunningDuration
			c.RunningDuration = &d
		}
		if j.TaskStatusCount != nil {
			c.TaskStatusCount = map[string]dag.TaskState{}
			for k, v := range j.TaskStatusCount {
				c.TaskStatusCount[k] = dag.TaskState{Phase: maps.Clone(v.Phase)}
			}
		}
		out.Jobs[i] = c
	}
	copyFlows := func(fs []dag.Flow) []dag.Flow {
		if fs == nil {
			return nil
		}
		o := make([]dag.Flow, len(fs))
		for i, f := range fs {
			c := f
			if f.DependsOn != nil {
				d := *f.DependsOn
				d.Targets = slices.Clone(d.Targets)
				d.TargetsWithStatus = slices.Clone(d.TargetsWithStatus)
				c.DependsOn = &d
			}
			c.Patch = slices.Clone(f.Patch)
			if f.Retry != nil {
				r := *f.Retry
				r.On = slices.Clone(r.On)
				c.Retry = &r
			}
			o[i] = c
		}
		return o
	}
	out.Flow.Spec.Flows = copyFlows(s.Flow.Spec.Flows)
	out.Flow.Spec.Finally = copyFlows(s.Flow.Spec.Finally)
	if s.Flow.Spec.FailFast != nil {
		b := *s.Flow.Spec.FailFast
		out.Flow.Spec.FailFast = &b
	}
	if s.Flow.Spec.Retry != nil {
		r := *s.Flow.Spec.Retry
		r.On = slices.Clone(r.On)
		out.Flow.Spec.Retry = &r
	}
	st := &out.Flow.Status
	o := s.Flow.Status
	st.PendingJobs, st.RunningJobs, st.FailedJobs = slices.Clone(o.PendingJobs), slices.Clone(o.RunningJobs), slices.Clone(o.FailedJobs)
	st.CompletedJobs, st.TerminatedJobs, st.UnknownJobs = slices.Clone(o.CompletedJobs), slices.Clone(o.TerminatedJobs), slices.Clone(o.UnknownJobs)
	st.CompletingJobs, st.TerminatingJobs, st.AbortedJobs, st.OrphanJobs = slices.Clone(o.CompletingJobs), slices.Clone(o.TerminatingJobs), slices.Clone(o.AbortedJobs), slices.Clone(o.OrphanJobs)
	if o.JobStatusList != nil {
		st.JobStatusList = make([]dag.JobStatus, len(o.JobStatusList))
		for i, e := range o.JobStatusList {
			c := e
			c.RunningHistories = slices.Clone(e.RunningHistories)
			if e.NextRetryAt != nil {
				x := *e.NextRetryAt
				c.NextRetryAt = &x
			}
			st.JobStatusList[i] = c
		}
	}
	if o.Conditions != nil {
		st.Conditions = map[string]dag.Condition{}
		for k, v := range o.Conditions {
			c := v
			if v.RunningDuration != nil {
				d := *v.RunningDuration
				c.RunningDuration = &d
			}
			st.Conditions[k] = c
		}
	}
	if o.WaitingFlows != nil {
		st.WaitingFlows = make([]dag.WaitingFlow, len(o.WaitingFlows))
		for i, wf := range o.WaitingFlows {
			st.WaitingFlows[i] = dag.WaitingFlow{Flow: wf.Flow, Reasons: slices.Clone(wf.Reasons)}
		}
	}
	if o.SpecChange != nil {
		c := *o.SpecChange
		st.SpecChange = &c
	}
	return out
}

// TestPropertyDefaultRuns checks the Default invariants on random
// workflows run against the fake runner, and that every run ends Succeed or
// Failed within D + 2R + 1 plans (N + 2ΣR + 1 with parallelism).
func TestPropertyDefaultRuns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := dagtest.Workflow(8, false).Draw(t, "workflow")
		b := bound(w)
		finish := rapid.Bool().Draw(t, "finish")
		plans := b + 2
		if !finish {
			plans = 2*b + 6 // jobs move a random number of phases per round
		}
		stats := runWorkflow(t, w, dag.Default(), rapid.Uint64().Draw(t, "seed"), plans, finish)
		if finish && (stats.final == "" || stats.plans > b) {
			t.Fatalf("phase %q after %d plans, bound %d", stats.final, stats.plans, b)
		}
	})
}

// TestPropertySetBasedSuccess checks invariant 6 with plain targets: the run
// succeeds iff every flow's own job was observed Completed.
func TestPropertySetBasedSuccess(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := dagtest.Workflow(8, true).Draw(t, "workflow")
		b := bound(w)
		stats := runWorkflow(t, w, dag.Default(), rapid.Uint64().Draw(t, "seed"), b+1, true)
		if (stats.final == dag.PhaseSucceed) != stats.everyCompleted {
			t.Fatalf("final %s, every job completed: %v (%v)", stats.final, stats.everyCompleted, stats.completedSeen)
		}
	})
}

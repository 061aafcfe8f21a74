package dag

import (
	"errors"
	"fmt"
	"reflect"
)

// CheckPlan reports every invariant that p, the result of Decide(in, o),
// breaks, joined into one error, or nil. It holds what plancore's own
// property checks on each plan, exported for properties over your own
// workflow controller. For every state machine:
//
//   - no job is created twice in one plan, nor one that is observed;
//   - every observed job is in exactly one of the status's job lists.
//
// For plancore's state machine (Options.StateMachine empty), also:
//
//   - a workflow whose input status is Succeed or Failed stays so, creates
//     nothing and deletes only for retention;
//   - finally flows are created only once every main flow has an outcome;
//   - with Spec.Parallelism set, active jobs plus creates stay within it;
//   - a new Succeeded outcome is of a job observed Completed;
//   - running histories are append-only against the input status: closed
//     entries never change, exactly the last entry is open, and it is in the
//     observed job's phase (unless Options.HistoryLimit drops entries).
//
// Facts that need more than one plan (a job re-created only after a retry
// delete, attempts counting creates, termination) are for your property to
// track; plancore's does.
func CheckPlan(in Snapshot, o Options, p Plan) error {
	c := dagCheck{in: in, o: o, p: p, present: map[string]Job{}}
	for _, j := range in.Jobs {
		c.present[j.Name] = j
	}
	c.creates()
	c.oneList()
	if o.StateMachine == StatePlancore {
		c.absorbing()
		c.finallyAfterMain()
		c.parallelism()
		c.grounded()
		if o.HistoryLimit == 0 {
			c.histories()
		}
	}
	return errors.Join(c.errs...)
}

type dagCheck struct {
	in      Snapshot
	o       Options
	p       Plan
	present map[string]Job
	errs    []error
}

func (c *dagCheck) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

func (c *dagCheck) creates() {
	seen := map[string]bool{}
	for _, cr := range c.p.Create {
		if seen[cr.Name] {
			c.fail("job %s created twice", cr.Name)
		}
		seen[cr.Name] = true
		if _, ok := c.present[cr.Name]; ok {
			c.fail("job %s created, but it is observed", cr.Name)
		}
	}
}

func (c *dagCheck) oneList() {
	st := c.p.Status
	count := map[string]int{}
	for _, l := range [][]string{st.PendingJobs, st.RunningJobs, st.CompletingJobs, st.CompletedJobs, st.FailedJobs, st.TerminatingJobs,
		st.TerminatedJobs, st.AbortedJobs, st.UnknownJobs, st.OrphanJobs} {
		for _, n := range l {
			count[n]++
		}
	}
	for _, j := range c.in.Jobs {
		if count[j.Name] != 1 {
			c.fail("job %s is in %d status lists, want 1", j.Name, count[j.Name])
		}
	}
}

func (c *dagCheck) absorbing() {
	was := c.in.Flow.Status.State.Phase
	if was != PhaseSucceed && was != PhaseFailed {
		return
	}
	if now := c.p.Status.State.Phase; now != was || len(c.p.Create) > 0 {
		c.fail("a workflow that was %s is now %s with %d creates", was, now, len(c.p.Create))
	}
	for _, d := range c.p.Delete {
		if d.Reason.Code != ReasonRetention {
			c.fail("a workflow that was %s deletes %s for %s", was, d.Name, d.Reason.Code)
		}
	}
}

func (c *dagCheck) outcomes() map[string]Outcome {
	out := map[string]Outcome{}
	for _, e := range c.p.Status.JobStatusList {
		out[e.Flow] = e.Outcome
	}
	return out
}

func (c *dagCheck) finallyAfterMain() {
	finally := map[string]bool{}
	for _, f := range c.in.Flow.Spec.Finally {
		finally[f.Name] = true
	}
	outcomes := c.outcomes()
	for _, cr := range c.p.Create {
		if !finally[cr.Flow] {
			continue
		}
		for _, f := range c.in.Flow.Spec.Flows {
			if outcomes[f.Name] == "" {
				c.fail("finally flow %s created before main flow %s has an outcome", cr.Flow, f.Name)
			}
		}
	}
}

func (c *dagCheck) parallelism() {
	limit := c.in.Flow.Spec.Parallelism
	if limit <= 0 || len(c.p.Create) == 0 {
		return
	}
	active := 0
	for _, j := range c.in.Jobs {
		if activePhase(j.Phase) && c.ownJob(j.Name) {
			active++
		}
	}
	if active+len(c.p.Create) > limit {
		c.fail("%d active jobs and %d creates exceed parallelism %d", active, len(c.p.Create), limit)
	}
}

// ownJob reports whether name is the job of one of the workflow's flows, as
// the plan's status names it.
func (c *dagCheck) ownJob(name string) bool {
	for _, e := range c.p.Status.JobStatusList {
		if e.Name == name && e.Flow != "" {
			return true
		}
	}
	return false
}

func activePhase(p JobPhase) bool {
	switch p {
	case "", JobPhasePending, JobPhaseRunning, JobPhaseRestarting, JobPhaseCompleting, JobPhaseTerminating, JobPhaseAborting:
		return true
	}
	return false
}

func (c *dagCheck) grounded() {
	before := map[string]Outcome{}
	for _, e := range c.in.Flow.Status.JobStatusList {
		before[e.Flow] = e.Outcome
	}
	for _, e := range c.p.Status.JobStatusList {
		if e.Outcome != OutcomeSucceeded || before[e.Flow] == OutcomeSucceeded {
			continue
		}
		if j, ok := c.present[e.Name]; !ok || j.Phase != JobPhaseCompleted {
			c.fail("flow %s Succeeded, but its job %s is not observed Completed", e.Flow, e.Name)
		}
	}
}

func (c *dagCheck) histories() {
	old := map[string][]RunningHistory{}
	for _, e := range c.in.Flow.Status.JobStatusList {
		old[e.Name] = e.RunningHistories
	}
	for _, e := range c.p.Status.JobStatusList {
		h := e.RunningHistories
		if j, ok := c.present[e.Name]; ok && len(h) > 0 && h[len(h)-1].State != j.Phase {
			c.fail("job %s: open history entry %s, the job is %s", e.Name, h[len(h)-1].State, j.Phase)
		}
		for k := range h {
			if open := h[k].EndTimestamp.IsZero(); open != (k == len(h)-1) {
				c.fail("job %s: history entry %d of %d open=%v", e.Name, k, len(h), open)
			}
		}
		prev := old[e.Name]
		if len(h) < len(prev) {
			c.fail("job %s: history shrank from %d to %d entries", e.Name, len(prev), len(h))
			continue
		}
		for k := 0; k+1 < len(prev); k++ {
			if !reflect.DeepEqual(prev[k], h[k]) {
				c.fail("job %s: closed history entry %d changed", e.Name, k)
			}
		}
	}
}

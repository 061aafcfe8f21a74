package capacity

import (
	"errors"
	"fmt"
)

// CheckPlan reports every invariant that p, the result of Decide(in, o),
// breaks, joined into one error, or nil. It is the check plancore's own
// property runs, exported for properties over your own scheduler:
//
//   - every input node is accounted for exactly once: a candidate or an
//     exclusion (a repeated id is excluded as a duplicate);
//   - the breakdown counts each exclusion once, by its primary reason, and an
//     exclusion's primary reason is the first of its reasons;
//   - no candidate is at or over its limit (Free is Max - Effective), repeated,
//     or above the usage threshold or of unknown usage;
//   - candidates are ranked least utilised first (fewest jobs first with
//     RankJobs);
//   - the outcome is Selected exactly when there are candidates, and
//     NoCapacity asks for a requeue after Options.RetryAfter.
func CheckPlan(in Input, o Options, p Plan) error {
	o = o.WithDefaults()
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(p.Candidates)+len(p.Excluded) != len(in.Nodes) {
		fail("%d candidates and %d exclusions for %d nodes", len(p.Candidates), len(p.Excluded), len(in.Nodes))
	}
	var b Breakdown
	for _, e := range p.Excluded {
		if len(e.Reasons) == 0 || e.Reasons[0] != e.Reason || e.Reason.Code == "" {
			fail("exclusion of %q: primary reason %v is not the first of %v", e.ID, e.Reason, e.Reasons)
		}
		b.add(e.Reason.Code)
	}
	if b != p.Breakdown {
		fail("breakdown %+v, the exclusions make %+v", p.Breakdown, b)
	}
	inInput := map[string]bool{}
	for _, n := range in.Nodes {
		inInput[n.ID] = true
	}
	seen := map[string]bool{}
	for _, c := range p.Candidates {
		if !inInput[c.ID] || seen[c.ID] {
			fail("candidate %q is repeated or not an input node", c.ID)
		}
		seen[c.ID] = true
		if c.Effective >= c.Max || c.Free != c.Max-c.Effective {
			fail("candidate %q holds %d of %d with %d free", c.ID, c.Effective, c.Max, c.Free)
		}
		u := c.Usage
		if !(u.CPU <= o.Threshold && u.Memory <= o.Threshold && (!u.HasGPU || u.GPU <= o.Threshold)) {
			fail("candidate %q is over the %g%% threshold or of unknown usage: %+v", c.ID, o.Threshold, u)
		}
	}
	for i := 1; i < len(p.Candidates); i++ {
		a, c := p.Candidates[i-1], p.Candidates[i]
		if o.RankBy != RankJobs && a.Effective*c.Max > c.Effective*a.Max {
			fail("%q (%d/%d) ranked before the less utilised %q (%d/%d)", a.ID, a.Effective, a.Max, c.ID, c.Effective, c.Max)
		}
		if o.RankBy == RankJobs && a.Effective > c.Effective {
			fail("%q (%d jobs) ranked before the less loaded %q (%d jobs)", a.ID, a.Effective, c.ID, c.Effective)
		}
	}
	switch {
	case len(p.Candidates) > 0 && (p.Verdict != Selected || p.RequeueAfter != 0):
		fail("outcome %s, requeue after %v, with %d candidates", p.Verdict, p.RequeueAfter, len(p.Candidates))
	case len(p.Candidates) == 0 && (p.Verdict != NoCapacity || p.RequeueAfter != o.RetryAfter):
		fail("outcome %s, requeue after %v, with no candidate (want NoCapacity after %v)", p.Verdict, p.RequeueAfter, o.RetryAfter)
	}
	return errors.Join(errs...)
}

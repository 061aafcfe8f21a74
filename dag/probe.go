package dag

import (
	"fmt"
	"strconv"
)

// probeCond is a flow's compiled dependsOn.probe.
type probeCond struct {
	spec    *Probe
	entries []probeCheck
}

// probeCheck is one entry with its resolved target node (-1: unresolved,
// an issue was reported).
type probeCheck struct {
	entry  ProbeEntry
	target int32
}

// checkProbe validates flow i's probe and resolves each entry's target
// among the flow's targets (the atoms c.lo:c.hi). Every check runs.
func (g *graph) checkProbe(i int, d *DependsOn, c cond, opt Options) *probeCond {
	pr := d.Probe
	field := g.field(i) + ".dependsOn.probe"
	bad := func(sub string, entry int, value, msg string) {
		g.add(Issue{Kind: IssueProbeInvalid, Flow: i, Field: field + sub, Target: entry, Value: value,
			Message: fmt.Sprintf("flow %q: %s", g.names[i], msg)})
	}
	if d.Depends != "" || len(d.TargetsWithStatus) > 0 {
		g.add(Issue{Kind: IssueMixedDependencyForms, Flow: i, Field: field, Target: -1,
			Message: "probe combines with targets only, not with depends or targetsWithStatus"})
	}
	if opt.volcano() {
		// The anchor's Probe type exists and is ignored: a warning,
		// so a compat spec with a probe stays as valid as the anchor finds it.
		g.add(Issue{Kind: IssueNeedsPlancore, Severity: SeverityWarning, Flow: i, Field: field, Target: -1,
			Message: "probe needs the plancore state machine; the Volcano state machine ignores it"})
	}
	if len(d.Targets) == 0 {
		bad("", -1, "", "a probe needs targets: it says when a target is ready")
	}
	if pr.Period < 0 {
		bad(".plancorePeriod", -1, pr.Period.String(), fmt.Sprintf("period %v is negative", pr.Period))
	}
	var targets []int32 // distinct known targets, in declaration order
	for _, a := range g.atoms[c.lo:c.hi] {
		if a.flow >= 0 && !containsNode(targets, a.flow) {
			targets = append(targets, a.flow)
		}
	}
	pc := &probeCond{spec: pr}
	port := func(sub string, e ProbeEntry, p int) {
		if p < 1 || p > 65535 {
			bad(sub+".port", e.Index, strconv.Itoa(p), fmt.Sprintf("port %d is outside 1-65535", p))
		}
	}
	for _, e := range pr.Entries() {
		sub := fmt.Sprintf(".%sList[%d]", e.Kind(), e.Index-entryOffset(pr, e))
		t := int32(-1)
		switch name := e.Target(); {
		case name == "" && len(targets) == 1:
			t = targets[0]
		case name == "":
			if len(targets) > 1 {
				bad(sub+".plancoreTarget", e.Index, "", fmt.Sprintf("target is required with %d targets", len(targets)))
			}
		default:
			if k, ok := g.lookup(name); ok && containsNode(targets, k) {
				t = k
			} else {
				bad(sub+".plancoreTarget", e.Index, name, fmt.Sprintf("%q is not one of the flow's targets", name))
			}
		}
		switch {
		case e.HTTPGet != nil:
			port(sub, e, e.HTTPGet.Port)
			if p := e.HTTPGet.Path; p != "" && p[0] != '/' {
				bad(sub+".path", e.Index, p, fmt.Sprintf("path %q does not start with /", p))
			}
			if h := e.HTTPGet.Header; h != nil && h.Name == "" {
				bad(sub+".httpHeader.name", e.Index, "", "header name is empty")
			}
			for k, h := range e.HTTPGet.Headers {
				if h.Name == "" {
					bad(fmt.Sprintf("%s.plancoreHeaders[%d].name", sub, k), e.Index, "", "header name is empty")
				}
			}
		case e.TCPSocket != nil:
			port(sub, e, e.TCPSocket.Port)
		default:
			ts := e.TaskStatus
			if ts.Task == "" {
				bad(sub+".taskName", e.Index, "", "task is empty")
			}
			if ts.Phase == "" {
				bad(sub+".phase", e.Index, "", "phase is empty")
			}
			if ts.Min < 0 {
				bad(sub+".plancoreMin", e.Index, strconv.Itoa(int(ts.Min)), fmt.Sprintf("min %d is negative", ts.Min))
			}
		}
		pc.entries = append(pc.entries, probeCheck{entry: e, target: t})
	}
	return pc
}

// entryOffset is the number of the first entry of e's list.
func entryOffset(p *Probe, e ProbeEntry) int {
	switch {
	case e.HTTPGet != nil:
		return 0
	case e.TCPSocket != nil:
		return len(p.HTTPGet)
	}
	return len(p.HTTPGet) + len(p.TCPSocket)
}

func containsNode(s []int32, x int32) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// probeKey identifies one executor-run entry.
type probeKey struct {
	flow  string
	entry int
}

// probeResult returns the latest result of an entry; of two results at
// one instant a failure wins, so the answer never depends on input order.
func (p *planner) probeResult(flow string, entry int) (ProbeResult, bool) {
	if p.probes == nil {
		p.probes = make(map[probeKey]ProbeResult, len(p.s.ProbeResults))
		for _, r := range p.s.ProbeResults {
			k := probeKey{r.Flow, r.Entry}
			if old, ok := p.probes[k]; ok && (old.Time.After(r.Time) || old.Time.Equal(r.Time) && !old.OK) {
				continue
			}
			p.probes[k] = r
		}
	}
	r, ok := p.probes[probeKey{flow, entry}]
	return r, ok
}

// probeTarget is a probe target atom: T once its job exists, F once it is
// final without one, U before.
func probeTarget(t *fstate) tri {
	switch {
	case t.job != nil:
		return triT
	case t.outcome != OutcomeNone:
		return triF
	}
	return triU
}

// evalProbe is the probe condition of flow i: every target's job exists and
// every probe entry passes, in Kleene logic. A pending entry keeps
// RequeueAfter within the probe's period.
func (p *planner) evalProbe(i int, pc *probeCond, fs []fstate) (tri, []Reason) {
	c := p.g.conds[i]
	v := triT
	var und []Reason
	and := func(x tri, r Reason) {
		switch x {
		case triF:
			v = triF
		case triU:
			if v == triT {
				v = triU
			}
			und = append(und, r)
		}
	}
	for _, a := range p.g.atoms[c.lo:c.hi] {
		x := triU
		if a.flow >= 0 {
			x = probeTarget(&fs[a.flow])
		}
		and(x, p.depReason(a, fs))
	}
	pending := false
	for _, e := range pc.entries {
		if e.target < 0 {
			and(triU, probeWithoutTargetReason(e.entry.Kind(), e.entry.Index))
			continue
		}
		t := &fs[e.target]
		if t.job == nil {
			continue // the target's own atom is U or F and says why
		}
		x, seen := p.probeEntry(p.g.names[i], pc, e, t)
		if x == triU {
			pending = true
		}
		and(x, probeReason(seen, p.g.names[e.target], t.job.Name))
	}
	if v == triF {
		return triF, nil
	}
	if pending {
		p.res.RequeueAfter = minDur(p.res.RequeueAfter, pc.spec.period())
	}
	return v, und
}

// probeEntry evaluates one entry against its target's observed job and
// says what it saw when it is not true (a false entry gives no reason: the
// flow is decided).
func (p *planner) probeEntry(flow string, pc *probeCond, e probeCheck, t *fstate) (tri, ProbeFacts) {
	j := t.job
	seen := ProbeFacts{Kind: e.entry.Kind(), Entry: e.entry.Index}
	if ts := e.entry.TaskStatus; ts != nil {
		n := j.TaskStatusCount[ts.Task].Phase[ts.Phase]
		want := max(ts.Min, 1)
		if n >= want {
			return triT, seen
		}
		seen.State, seen.Task, seen.TaskPhase, seen.Tasks, seen.MinTasks = ProbeBelowMinimum, ts.Task, ts.Phase, int(n), int(want)
		if t.outcome != OutcomeNone {
			return triF, seen
		}
		return triU, seen
	}
	if t.outcome != OutcomeNone {
		return triF, seen
	}
	r, ok := p.probeResult(flow, e.entry.Index)
	switch {
	case !ok:
		seen.State = ProbeNoResult
	case p.s.Now.Sub(r.Time) > p.opt.probeTTL(pc.spec.period()):
		seen.State, seen.At = ProbeStale, r.Time
	case !r.OK:
		seen.State, seen.At = ProbeFailed, r.Time
	default:
		return triT, seen
	}
	return triU, seen
}

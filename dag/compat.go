package dag

import (
	"fmt"
	"slices"
)

// planVolcano is the anchor's state machine: deploy one dependency wave,
// then rebuild the status and apply the phase table.
func (p *planner) planVolcano() {
	wf, opt := p.wf, p.opt
	invalid := p.g.invalid && !opt.SkipValidation
	phase := wf.Status.State.Phase
	order, ownNames := p.flowJobNames()
	own := func(i int32) bool { return ownNames[p.s.Jobs[i].Name] }
	switch phase {
	case PhaseFailed, PhaseTerminating:
		// Volcano's failedState and terminatingState do nothing.
		p.res.Status = copyStatus(wf.Status)
		return
	case PhaseSucceed:
		if wf.Spec.JobRetainPolicy == RetainPolicyDelete {
			// Retention only, and no status write: the stale lists remain.
			p.retentionDeletes(order, own)
			p.res.StrictDelete = true
			p.res.Status = copyStatus(wf.Status)
			return
		}
	}
	if !invalid && (phase != PhaseSucceed || opt.CreateInTerminal) {
		p.deployVolcano()
	}
	p.volcanoStatus(order, own, invalid)
}

// flowJobNames returns the distinct job names of the spec's flows in spec
// order (main, then finally), and their set.
func (p *planner) flowJobNames() ([]string, map[string]bool) {
	spec := &p.wf.Spec
	order := make([]string, 0, len(spec.Flows)+len(spec.Finally))
	own := make(map[string]bool, len(spec.Flows)+len(spec.Finally))
	for _, fs := range [2][]Flow{spec.Flows, spec.Finally} {
		for i := range fs {
			n := p.jobName(fs[i].Name)
			if !own[n] {
				own[n] = true
				order = append(order, n)
			}
		}
	}
	return order, own
}

func jobState(j *Job) string {
	switch {
	case j == nil:
		return "NotCreated"
	case j.Phase == JobPhaseNone:
		return "Created"
	}
	return string(j.Phase)
}

// deployVolcano is the anchor's deployJob: for each flow in spec
// order whose job name is not observed, create it if it has no targets or
// every target's job is observed exactly Completed. Existence and targets
// are checked by name only, as the anchor does.
func (p *planner) deployVolcano() {
	g := p.g
	onCycle := map[string]bool{}
	for _, is := range g.issues {
		if is.Kind == IssueCycle {
			for _, m := range is.Members {
				onCycle[m] = true
			}
		}
	}
	// A duplicate flow is tried again, as in the anchor, unless an earlier
	// occurrence created the job; each name is reported blocked once.
	created, blocked, conflict := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var waits []Blocked
	for i := range p.wf.Spec.Flows {
		f := &p.wf.Spec.Flows[i]
		name := p.jobName(f.Name)
		if created[name] {
			continue
		}
		if j := p.job(name); j != nil {
			if !p.opt.SkipNameConflictCheck && !p.labelled(j) && !conflict[name] {
				conflict[name] = true
				p.nameConflict(i, f.Name, j)
			}
			continue
		}
		var reasons []Reason
		if f.DependsOn != nil {
			for k, t := range f.DependsOn.Targets {
				tj := p.job(p.jobName(t))
				if tj != nil && tj.Phase == JobPhaseCompleted && (p.opt.SkipNameConflictCheck || p.labelled(tj)) {
					continue
				}
				if _, known := g.lookup(t); !known {
					reasons = append(reasons, unknownTargetReason(t, g.refField(i, "targets", k)))
					continue
				}
				reasons = append(reasons, dependencyReason(t, "", jobState(tj)))
			}
		}
		if onCycle[f.Name] && len(reasons) > 0 {
			reasons = append(reasons, cycleReason(0, ""))
		}
		if len(reasons) > 0 {
			if !blocked[name] {
				blocked[name] = true
				waits = append(waits, Blocked{Flow: f.Name, Index: i, Reasons: reasons})
			}
			continue
		}
		created[name] = true
		p.res.Create = append(p.res.Create, p.create(f, 1, false, ""))
	}
	for _, b := range waits {
		if !created[p.jobName(b.Flow)] {
			p.res.Blocked = append(p.res.Blocked, b)
		}
	}
	slices.SortStableFunc(p.res.Blocked, func(a, b Blocked) int { return a.Index - b.Index })
}

func (p *planner) nameConflict(i int, flow string, j *Job) {
	lbl := j.Labels[LabelCreatedByJobFlow]
	p.issue(Issue{Kind: IssueNameConflict, Severity: SeverityError, Flow: i, Field: "job " + j.Name, Target: -1, Value: lbl,
		Message: fmt.Sprintf("job %s exists but belongs to %q, not %q", j.Name, lbl, p.label)})
	p.res.Blocked = append(p.res.Blocked, Blocked{Flow: flow, Index: i, Reasons: []Reason{nameConflictReason(j.Name, lbl)}})
}

// volcanoStatus is the anchor's getAllJobStatus plus the phase table.
func (p *planner) volcanoStatus(order []string, own func(int32) bool, invalid bool) {
	wf, opt := p.wf, p.opt
	prev := &wf.Status
	var labelled []int32
	for _, name := range order {
		if i, ok := p.jobIndex(name); ok && p.labelledAt(i) {
			labelled = append(labelled, i)
		}
	}
	labelled = append(labelled, p.orphans(own)...)

	st := Status{Conditions: make(map[string]Condition, len(labelled))}
	var l lists
	var list []JobStatus
	if opt.KeepStaleEntries {
		list = make([]JobStatus, len(prev.JobStatusList), len(prev.JobStatusList)+len(labelled))
		copy(list, prev.JobStatusList)
	} else {
		list = make([]JobStatus, 0, len(labelled))
	}
	aborted := 0
	for _, ji := range labelled {
		j := &p.s.Jobs[ji]
		if !l.add(j.Name, j.Phase, opt.Buckets == BucketsVolcano) || !knownPhase(j.Phase) {
			p.issue(Issue{Kind: IssueUnknownJobPhase, Flow: len(wf.Spec.Flows) + len(wf.Spec.Finally), Field: "job " + j.Name, Target: -1, Value: string(j.Phase),
				Message: "job phase is not a Volcano job phase; bucketed as unknown"})
		}
		if j.Phase == JobPhaseAborted {
			aborted++
		}
		st.Conditions[j.Name] = condition(&p.arena, j)
		var e JobStatus
		jobEntry(&p.arena, &e, j, p.prev(j.Name), p.now, opt)
		if k, ok := p.prevIndex(j.Name); ok && opt.KeepStaleEntries {
			list[k] = e
		} else {
			list = append(list, e)
		}
	}
	l.fill(&st)
	if len(list) > 0 {
		st.JobStatusList = list
	}

	r, c, f, t := len(st.RunningJobs), len(st.CompletedJobs), len(st.FailedJobs), len(st.TerminatedJobs)
	if opt.AbortedPolicy == AbortedFail {
		f += aborted
	}
	succeeded := c == len(wf.Spec.Flows)
	if opt.SuccessRule == SuccessSet {
		succeeded = true
		for _, name := range order[:min(len(order), len(wf.Spec.Flows))] {
			j := p.job(name)
			succeeded = succeeded && j != nil && p.labelled(j) && j.Phase == JobPhaseCompleted
		}
	}
	phase := wf.Status.State.Phase
	switch {
	case invalid:
		phase, st.State.Reason = PhaseFailed, string(ReasonInvalidSpec)
	case phase == "" || phase == PhasePending:
		switch {
		case (r > 0 || c > 0) && f == 0:
			phase = PhaseRunning
		case f > 0 || t > 0:
			phase = PhaseFailed
		default:
			phase = PhasePending
		}
	case phase == PhaseRunning:
		switch {
		case succeeded:
			phase = PhaseSucceed
		case f > 0 || t > 0:
			phase = PhaseFailed
		}
	}
	st.State.Phase = phase
	p.res.Status = st
	p.res.WriteStatus = !statusEqual(prev, &st)
}

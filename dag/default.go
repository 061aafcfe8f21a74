package dag

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tri is a Kleene truth value.
type tri uint8

const (
	triU tri = iota
	triT
	triF
)

// fstate is one flow's state within a Default plan.
type fstate struct {
	job      *Job       // this flow's own observed job (labelled, not stale)
	foreign  *Job       // a same-named job that is not ours
	prev     *JobStatus // the previous entry of the flow's job name
	outcome  Outcome
	attempt  int
	reasons  []Reason
	hasEntry bool
	started  bool
	ready    bool // to be created (subject to parallelism)
	retry    bool // ready to be re-created as the next attempt
	// bucket is the status list of job's phase, known whether the phase
	// is a Volcano phase; planDefault fills them once. The flags share
	// one word: a plan holds one fstate per flow.
	bucket bucketID
	known  bool
}

// defaultPass is the working state of one Default plan, shared by the steps
// of planDefault.
type defaultPass struct {
	phase    Phase // the previous phase
	invalid  bool  // the spec is invalid and validation is on
	terminal bool  // the previous phase is Succeed or Failed
	st       Status
	fs       []fstate
	// matched[i] says job i is some current flow's.
	matched []bool
	// withJob counts the flows with an observed job of their own.
	withJob   int
	retryable []int // flows whose failed job may be retried
	// anyStarted: some flow started (sticky), so the workflow is Running.
	anyStarted bool
	stop       bool // failFast triggered
	// mainOK is the main part's success, known once mainKnown.
	mainOK, mainKnown bool
}

func (d *defaultPass) own(i int32) bool { return d.matched[i] }

// planDefault is the plancore state machine: it reads every flow's job,
// plans retries, decides the flows in topological order, then the phase,
// and builds the status.
func (p *planner) planDefault() {
	prev := &p.wf.Status
	if prev.State.Phase == PhaseTerminating {
		p.res.Status = copyStatus(*prev)
		return
	}
	d := &defaultPass{phase: prev.State.Phase, invalid: p.g.invalid && !p.opt.SkipValidation}
	d.terminal = d.phase == PhaseSucceed || d.phase == PhaseFailed
	d.st = Status{State: State{Phase: d.phase, Reason: prev.State.Reason}}
	p.reportSpecChange(&d.st)
	p.observeFlows(d)
	p.buildConditions(d)
	p.planRetries(d)
	switch {
	case !d.terminal && !d.invalid:
		p.decideFlows(d)
	case d.terminal && d.phase == PhaseSucceed && p.opt.CreateInTerminal && p.wf.Spec.JobRetainPolicy != RetainPolicyDelete:
		p.recreateRetained(d)
	case d.invalid:
		p.waitInvalid(d)
	}
	p.decidePhase(d)
	if d.st.State.Phase == PhaseSucceed && p.wf.Spec.JobRetainPolicy == RetainPolicyDelete {
		order, _ := p.flowJobNames()
		p.retentionDeletes(order, d.own)
	}
	p.defaultStatus(&d.st, d.fs, d.own)
	p.keepRetentionRecord(d)
}

// keepRetentionRecord keeps, once a workflow succeeded under the delete
// retain policy, the completedJobs entry and the condition of every flow
// whose job retention has deleted, as Volcano leaves its final lists in
// place: the status stays the record of what ran.
func (p *planner) keepRetentionRecord(d *defaultPass) {
	st, prev := &p.res.Status, &p.wf.Status
	if st.State.Phase != PhaseSucceed || p.wf.Spec.JobRetainPolicy != RetainPolicyDelete ||
		(len(prev.CompletedJobs) == 0 && len(prev.Conditions) == 0) {
		return
	}
	wasCompleted := make(map[string]bool, len(prev.CompletedJobs))
	for _, n := range prev.CompletedJobs {
		wasCompleted[n] = true
	}
	var completed []string
	var conds map[string]Condition
	changed := false
	for i := range p.g.n {
		if p.g.dup[i] {
			continue
		}
		name := p.names[i]
		if d.fs[i].job != nil {
			if d.fs[i].bucket == bucketCompleted {
				completed = append(completed, name)
			}
			continue
		}
		if wasCompleted[name] {
			completed = append(completed, name)
			changed = true
		}
		if c, ok := prev.Conditions[name]; ok {
			if conds == nil {
				conds = maps.Clone(st.Conditions)
				if conds == nil {
					conds = map[string]Condition{}
				}
			}
			conds[name] = c
			changed = true
		}
	}
	if !changed {
		return
	}
	st.CompletedJobs = completed
	if conds != nil {
		st.Conditions = conds
	}
	p.res.WriteStatus = !statusEqual(prev, st)
}

// reportSpecChange carries the spec hash and reports a mid-run spec edit.
func (p *planner) reportSpecChange(st *Status) {
	if p.opt.SpecChange != SpecChangeReport {
		return
	}
	prev := &p.wf.Status
	st.SpecHash = SpecHash(p.wf.Spec)
	if prev.SpecChange != nil {
		c := *prev.SpecChange
		st.SpecChange = &c
	}
	if prev.SpecHash != "" && prev.SpecHash != st.SpecHash {
		st.SpecChange = &SpecChange{Old: prev.SpecHash, New: st.SpecHash}
		p.issue(Issue{Kind: IssueSpecChanged, Flow: -1, Field: "spec", Target: -1, Value: st.SpecHash,
			Message: fmt.Sprintf("spec changed mid-run (hash %s -> %s); planning against the new spec", prev.SpecHash, st.SpecHash)})
	}
}

// observeFlows reads each flow's previous entry and job: its label, entry,
// bucket and observed outcome; the conditions are built in
// buildConditions.
func (p *planner) observeFlows(d *defaultPass) {
	n := p.g.n
	d.fs = make([]fstate, n)
	// The new status list, compacted at the end: flow i's entry is
	// p.entries[i] until then.
	p.entries = make([]JobStatus, n)
	p.names = packedJobNames(p.wf.Name, p.g)
	d.matched = make([]bool, len(p.s.Jobs))
	var need arenaNeed
	for i := range n {
		if f := &d.fs[i]; !p.g.dup[i] {
			p.matchFlowJob(d, i, f)
			if f.job != nil {
				need.add(f.job, f.prev, p.opt)
			}
		}
	}
	p.arena.reserve(need)
	for i := range n {
		if p.g.dup[i] {
			continue
		}
		f := &d.fs[i]
		if f.job != nil {
			p.observeJob(d, i, f)
		} else if f.prev != nil {
			p.entries[i] = *f.prev
			f.hasEntry = true
		}
		// Started is sticky, so a job deleted for a retry never sends a
		// Running workflow back to Pending.
		d.anyStarted = d.anyStarted || f.started
	}
}

// matchFlowJob fills flow i's previous entry, attempt and job: its own, a
// foreign same-named one, or none while a retired attempt lingers.
func (p *planner) matchFlowJob(d *defaultPass, i int, f *fstate) {
	name := p.names[i]
	f.prev = p.prev(name)
	f.attempt = 1
	if f.prev != nil {
		f.outcome, f.started = f.prev.Outcome, f.prev.Started
		f.attempt = max(f.prev.Attempt, 1)
	}
	var j *Job
	mine := false
	if ji := p.jobOf[i]; ji >= 0 {
		j, mine = &p.s.Jobs[ji], p.labelledAt(ji)
		d.matched[ji] = true
	}
	switch {
	case j == nil:
	case !mine:
		f.foreign = j
	case f.prev != nil && !f.prev.Retrying && f.prev.RetiredUID != "" && j.UID == f.prev.RetiredUID:
		// A stale view of the attempt we already deleted: wait for it
		// to go rather than count it.
		f.reasons = append(f.reasons, retryingReason(name))
	default:
		f.job = j
	}
}

// observeJob builds flow i's status entry from its job, buckets the job
// and takes the outcome observed now. Retryable failures are decided once
// failFast is known.
func (p *planner) observeJob(d *defaultPass, i int, f *fstate) {
	j := f.job
	jobEntry(&p.arena, &p.entries[i], j, f.prev, p.now, p.opt)
	f.hasEntry = true
	d.withJob++
	if startedPhase(j.Phase) {
		f.started = true
	}
	f.bucket, f.known = bucket(j.Phase, p.opt.Buckets == BucketsVolcano)
	if f.outcome != OutcomeNone || d.terminal {
		return
	}
	switch ph := j.Phase; {
	case ph == JobPhaseCompleted:
		f.outcome = OutcomeSucceeded
	case p.opt.failurePhase(ph):
		if r := p.retryOf(i); r != nil && f.attempt <= r.Limit && retryOn(r, ph) && !d.invalid {
			d.retryable = append(d.retryable, i)
		} else {
			f.outcome = OutcomeFailed
		}
	}
}

// buildConditions makes and fills the conditions map, one entry per flow
// with an observed job of its own.
func (p *planner) buildConditions(d *defaultPass) {
	if d.withJob == 0 {
		return
	}
	d.st.Conditions = make(map[string]Condition, d.withJob)
	for i := range p.g.n {
		if j := d.fs[i].job; j != nil {
			d.st.Conditions[p.names[i]] = condition(&p.arena, j)
		}
	}
}

// failFastTriggered reports whether failFast stops the main flows: some main
// flow failed and no flow handles it.
func (p *planner) failFastTriggered(fs []fstate) bool {
	if s := p.wf.Spec.FailFast; s != nil && !*s {
		return false
	}
	for i := 0; i < p.g.nMain; i++ {
		if fs[i].outcome == OutcomeFailed && !p.g.handled[i] {
			return true
		}
	}
	return false
}

// planRetries plans the retry of every retryable failure, unless failFast
// has triggered: then no retry starts.
func (p *planner) planRetries(d *defaultPass) {
	d.stop = p.failFastTriggered(d.fs)
	for _, i := range d.retryable {
		f := &d.fs[i]
		if d.stop {
			f.outcome = OutcomeFailed // no retries start once failFast triggered
			continue
		}
		p.planRetry(i, f)
	}
	d.stop = d.stop || p.failFastTriggered(d.fs)
}

// decideFlows decides the main flows in topological order, so Omitted
// propagates in one call, then the finally flows once the main part is
// final, and creates the ready jobs.
func (p *planner) decideFlows(d *defaultPass) {
	g, fs := p.g, d.fs
	nonFinal := p.decideMain(d)
	d.mainKnown = true
	outcome := "Succeeded"
	if !d.mainOK {
		outcome = "Failed"
	}
	for i := g.nMain; i < g.n; i++ {
		if g.dup[i] {
			continue
		}
		if nonFinal > 0 {
			f := &fs[i]
			if f.outcome == OutcomeNone && f.job == nil && f.foreign == nil && len(f.reasons) == 0 {
				f.reasons = append(f.reasons, mainNotFinalReason(nonFinal))
			}
			continue
		}
		p.decide(i, fs, false)
	}
	p.createReady(fs, outcome)
}

// decideMain decides the main flows in topological order (a flow's targets
// are decided before it), then the main part's outcome. It returns the
// number of main flows not final yet.
func (p *planner) decideMain(d *defaultPass) int {
	g, fs := p.g, d.fs
	nonFinal := 0
	for _, v := range g.topo {
		i := int(v)
		if i >= g.nMain {
			continue
		}
		p.decide(i, fs, d.stop)
		if !g.dup[i] {
			if fs[i].outcome == OutcomeNone {
				nonFinal++
			}
		}
	}
	d.mainOK = p.mainSucceeded(fs)
	if len(g.topo) < g.n {
		// Flows left over by Kahn (a cycle planned with SkipValidation)
		// are never decided but still wait.
		nonFinal = 0
		for i := 0; i < g.nMain; i++ {
			if !g.dup[i] && fs[i].outcome == OutcomeNone {
				nonFinal++
			}
		}
	}
	return nonFinal
}

// recreateRetained re-creates the jobs removed after success under retain,
// as Volcano does (its CreateInTerminal behaviour).
func (p *planner) recreateRetained(d *defaultPass) {
	for i := range p.g.n {
		f := &d.fs[i]
		if !p.g.dup[i] && f.job == nil && f.foreign == nil {
			c := p.create(p.g.flow(i), f.attempt, p.g.finally(i), "Succeeded")
			c.Reason = recreateReason(c.Name)
			p.res.Create = append(p.res.Create, c)
		}
	}
}

// waitInvalid explains why each undecided flow of an invalid spec waits.
func (p *planner) waitInvalid(d *defaultPass) {
	ix := p.indexInvalid()
	for i := range p.g.n {
		f := &d.fs[i]
		if p.g.dup[i] || f.outcome != OutcomeNone || f.job != nil {
			continue
		}
		f.reasons = append(f.reasons, p.invalidReasons(i, ix)...)
	}
}

// decidePhase sets the new workflow phase from the flows' outcomes.
func (p *planner) decidePhase(d *defaultPass) {
	g, fs, opt := p.g, d.fs, p.opt
	allFinal, anyFinal, finallyFailed := true, false, false
	for i := range g.n {
		if !g.dup[i] {
			final := fs[i].outcome != OutcomeNone
			allFinal, anyFinal = allFinal && final, anyFinal || final
			finallyFailed = finallyFailed || i >= g.nMain && fs[i].outcome == OutcomeFailed
		}
	}
	if !d.mainKnown {
		d.mainOK = p.mainSucceeded(fs)
	}
	success := d.mainOK && !finallyFailed
	if opt.SuccessRule == SuccessCount {
		// Volcano's count rule: duplicates and extra labelled jobs make it
		// unreachable, and the workflow stays Running.
		success = p.completedCount() == len(p.wf.Spec.Flows)
	}
	switch {
	case d.terminal:
	case d.invalid:
		d.st.State = State{Phase: PhaseFailed, Reason: string(ReasonInvalidSpec)}
	case success && (allFinal || opt.SuccessRule == SuccessCount):
		d.st.State = State{Phase: PhaseSucceed}
	case allFinal && opt.SuccessRule == SuccessSet:
		d.st.State = State{Phase: PhaseFailed}
	case d.anyStarted || anyFinal || d.phase == PhaseRunning:
		d.st.State = State{Phase: PhaseRunning}
	default:
		d.st.State = State{Phase: PhasePending}
	}
}

// packedJobNames returns the job name <workflow>-<flow> of every node, ""
// for duplicates, all slicing one string: one allocation instead of one
// per flow.
func packedJobNames(wf string, g *graph) []string {
	size := 0
	for i := range g.n {
		if !g.dup[i] {
			size += len(wf) + 1 + len(g.names[i])
		}
	}
	var b strings.Builder
	b.Grow(size)
	for i := range g.n {
		if !g.dup[i] {
			b.WriteString(wf)
			b.WriteByte('-')
			b.WriteString(g.names[i])
		}
	}
	all := b.String()
	names := make([]string, g.n)
	off := 0
	for i := range g.n {
		if !g.dup[i] {
			k := len(wf) + 1 + len(g.names[i])
			names[i] = all[off : off+k]
			off += k
		}
	}
	return names
}

// ownName reports whether a job name is the job of a current flow.
func (p *planner) ownName(name string) bool {
	i := p.nodeOfJob(name)
	return i >= 0 && !p.g.dup[i]
}

func (p *planner) retryOf(i int) *Retry {
	if r := p.g.flow(i).Retry; r != nil {
		return r
	}
	return p.wf.Spec.Retry
}

func retryOn(r *Retry, ph JobPhase) bool {
	if len(r.On) == 0 {
		return ph == JobPhaseFailed
	}
	for _, o := range r.On {
		if o == ph {
			return true
		}
	}
	return false
}

// planRetry handles a failed job with a retry left: wait out the
// backoff, then delete the job; its disappearance lets decide re-create it.
func (p *planner) planRetry(i int, f *fstate) {
	r := p.retryOf(i)
	j := f.job
	e := &p.entries[i]
	e.Flow = p.g.names[i]
	if f.prev != nil && f.prev.Retrying {
		// The delete was planned already; plan it again until the job goes.
		e.Retrying, e.RetiredUID = true, j.UID
		p.res.Delete = append(p.res.Delete, DeleteJob{Flow: p.g.names[i], Name: j.Name, Namespace: p.wf.Namespace, UID: j.UID, Reason: retryDeleteReason(p.g.names[i])})
		f.reasons = append(f.reasons, retryingReason(j.Name))
		return
	}
	var instant time.Time
	switch {
	case j.RunningDuration != nil && !j.CreationTime.IsZero():
		instant = j.CreationTime.Add(*j.RunningDuration)
	case len(e.RunningHistories) > 0 && e.RunningHistories[len(e.RunningHistories)-1].State == j.Phase:
		instant = e.RunningHistories[len(e.RunningHistories)-1].StartTimestamp.Time
	default:
		instant = p.s.Now
	}
	due := instant.Add(r.Backoff.wait(f.attempt))
	if p.s.Now.Before(due) {
		t := metav1.NewTime(due)
		e.NextRetryAt = &t
		f.reasons = append(f.reasons, backoffReason(due))
		p.res.RequeueAfter = minDur(p.res.RequeueAfter, due.Sub(p.s.Now))
		return
	}
	e.NextRetryAt = nil
	e.Retrying, e.RetiredUID = true, j.UID
	p.res.Delete = append(p.res.Delete, DeleteJob{Flow: p.g.names[i], Name: j.Name, Namespace: p.wf.Namespace, UID: j.UID, Reason: retryDeleteReason(p.g.names[i])})
	f.reasons = append(f.reasons, retryingReason(j.Name))
}

// decide settles a flow without an outcome or a job: create it, omit it or
// let it wait.
func (p *planner) decide(i int, fs []fstate, stop bool) {
	g := p.g
	f := &fs[i]
	if g.dup[i] || f.outcome != OutcomeNone || f.job != nil || len(f.reasons) > 0 {
		return
	}
	if f.foreign != nil {
		if !p.opt.SkipNameConflictCheck {
			lbl := f.foreign.Labels[LabelCreatedByJobFlow]
			p.issue(Issue{Kind: IssueNameConflict, Severity: SeverityError, Flow: i, Field: "job " + f.foreign.Name, Target: -1, Value: lbl,
				Message: fmt.Sprintf("job %s exists but belongs to %q, not %q", f.foreign.Name, lbl, p.label)})
			f.reasons = append(f.reasons, nameConflictReason(f.foreign.Name, lbl))
		}
		return // with the check off, the foreign job counts as existing (Volcano)
	}
	if f.prev != nil && f.prev.Retrying {
		if stop {
			f.outcome = OutcomeFailed
			return
		}
		f.ready, f.retry = true, true
		return
	}
	if stop && !g.finally(i) {
		f.outcome = OutcomeOmitted
		return
	}
	switch v, undecided := p.eval(i, fs); v {
	case triT:
		f.ready = true
	case triF:
		f.outcome = OutcomeOmitted
	default:
		f.reasons = undecided // f.reasons is empty here; undecided is this flow's own
	}
}

// eval evaluates flow i's condition in Kleene logic and lists the undecided
// atoms, deduplicated, in declaration order.
func (p *planner) eval(i int, fs []fstate) (tri, []Reason) {
	c := p.g.conds[i]
	var und []Reason
	var seen []atom
	note := func(a atom) {
		for _, x := range seen {
			if x == a {
				return
			}
		}
		seen = append(seen, a)
		if und == nil && c.expr == nil {
			// An AND of atoms notes at most one reason per atom: sized
			// once, since a Reason is large and a waiting flow common.
			und = make([]Reason, 0, c.hi-c.lo)
		}
		und = append(und, p.depReason(a, fs))
	}
	if c.probe != nil {
		return p.evalProbe(i, c.probe, fs)
	}
	if c.expr != nil {
		return p.evalNode(c.expr, fs, note), und
	}
	v := triT
	for _, a := range p.g.atoms[c.lo:c.hi] {
		switch x := p.atomValue(a, fs); x {
		case triF:
			v = triF
		case triU:
			if v == triT {
				v = triU
			}
			note(a)
		}
	}
	if v == triF {
		und = nil
	}
	return v, und
}

func (p *planner) evalNode(n *cnode, fs []fstate, note func(atom)) tri {
	switch n.op {
	case OpRef:
		v := p.atomValue(n.atom, fs)
		if v == triU {
			note(n.atom)
		}
		return v
	case OpNot:
		switch p.evalNode(&n.args[0], fs, note) {
		case triT:
			return triF
		case triF:
			return triT
		}
		return triU
	case OpAnd:
		v := triT
		for k := range n.args {
			switch p.evalNode(&n.args[k], fs, note) {
			case triF:
				return triF
			case triU:
				v = triU
			}
		}
		return v
	default:
		v := triF
		for k := range n.args {
			switch p.evalNode(&n.args[k], fs, note) {
			case triT:
				return triT
			case triU:
				v = triU
			}
		}
		return v
	}
}

// atomValue is the atom table: an atom's truth value from its target's state.
func (p *planner) atomValue(a atom, fs []fstate) tri {
	if a.flow < 0 {
		return triU // an unknown flow never decides (only reachable without validation)
	}
	t := &fs[a.flow]
	final := t.outcome != OutcomeNone
	switch a.res {
	case resProbe:
		return probeTarget(t)
	case resDone:
		if final {
			return triT
		}
		return triU
	case resStarted:
		switch {
		case t.started:
			return triT
		case final:
			return triF
		}
		return triU
	}
	if !final {
		return triU
	}
	want := [...]Outcome{resSucceeded: OutcomeSucceeded, resFailed: OutcomeFailed, resOmitted: OutcomeOmitted}[a.res]
	if t.outcome == want {
		return triT
	}
	return triF
}

func (p *planner) depReason(a atom, fs []fstate) Reason {
	name := p.g.atomName(a)
	if a.flow < 0 {
		return unknownTargetReason(name, "")
	}
	t := &fs[a.flow]
	state := jobState(t.job)
	if t.outcome != OutcomeNone {
		state = string(t.outcome)
	}
	return dependencyReason(name, a.res.String(), state)
}

// invalidIndex says, per flow, which error issues explain its wait, so that
// every flow's reasons are found in one pass over the issues.
type invalidIndex struct {
	// cycle[i] is the index in g.issues of the cycle flow i is on, or -1.
	cycle []int32
	// unknown[i] lists the indices of flow i's unknown-target issues.
	unknown map[int][]int32
}

func (p *planner) indexInvalid() invalidIndex {
	g := p.g
	ix := invalidIndex{cycle: make([]int32, g.n), unknown: map[int][]int32{}}
	for i := range ix.cycle {
		ix.cycle[i] = -1
	}
	for k, is := range g.issues {
		if is.Severity != SeverityError {
			continue
		}
		switch is.Kind {
		case IssueCycle:
			for _, m := range is.Members {
				if t, ok := g.lookup(m); ok && ix.cycle[t] < 0 {
					ix.cycle[t] = int32(k)
				}
			}
		case IssueUnknownTarget:
			ix.unknown[is.Flow] = append(ix.unknown[is.Flow], int32(k))
		}
	}
	return ix
}

// invalidReasons explains why a flow of an invalid spec waits. A flow on a
// cycle points at the cycle's one issue, which lists the cycle, rather than
// copying it: every member copying a cycle through n flows would make the
// plan's size grow with n².
func (p *planner) invalidReasons(i int, ix invalidIndex) []Reason {
	var rs []Reason
	if k := ix.cycle[i]; k >= 0 {
		is := &p.g.issues[k]
		rs = append(rs, cycleReason(len(is.Members), is.Field))
	}
	for _, k := range ix.unknown[i] {
		is := &p.g.issues[k]
		rs = append(rs, unknownTargetReason(is.Value, is.Field))
	}
	if len(rs) == 0 {
		rs = append(rs, invalidSpecReason())
	}
	return rs
}

// mainSucceeded is the main part's outcome, Argo's leaf rule: only the
// leaves of the main part (flows no main flow refers to) decide. A taint
// travels down to the leaves through the flows it omits, which is Argo's
// branch-phase inheritance; a leaf that is tainted and unhandled fails the
// workflow. A failure some flow reacts to in any way (x.Failed, or x || y
// that ran) is no leaf, so it fails the workflow only through what it
// omitted.
func (p *planner) mainSucceeded(fs []fstate) bool {
	g := p.g
	tainted := make([]bool, g.n)
	referred := make([]bool, g.n)
	for k := range g.nMain {
		for _, t := range g.edges[g.edgeAt[k]:g.edgeAt[k+1]] {
			referred[t] = true
		}
	}
	ok := true
	for _, v := range g.topo {
		if i := int(v); i < g.nMain && !g.dup[i] {
			ok = (p.taint(i, fs, tainted) || referred[i]) && ok
		}
	}
	return ok
}

// taint is mainSucceeded's step for main flow i, whose outcome and whose
// targets' taint are known: it records whether i is failure-tainted and
// reports false when that taint is unhandled.
func (p *planner) taint(i int, fs []fstate, tainted []bool) bool {
	g := p.g
	switch fs[i].outcome {
	case OutcomeFailed:
		tainted[i] = true
	case OutcomeOmitted:
		// A probe flow is omitted only when the readiness it waited
		// for can never come: unlike an expression turned
		// false, that is a failure unless something handles it.
		tainted[i] = g.conds[i].probe != nil || p.refersTainted(i, tainted)
	}
	return !tainted[i] || g.handled[i]
}

func (p *planner) refersTainted(i int, tainted []bool) bool {
	c := p.g.conds[i]
	bad := func(a atom) bool {
		return a.flow >= 0 && tainted[a.flow] && (a.res == resSucceeded || a.res == resStarted || a.res == resProbe)
	}
	if c.expr != nil {
		var walk func(n *cnode) bool
		walk = func(n *cnode) bool {
			if n.op == OpRef {
				return bad(n.atom)
			}
			for k := range n.args {
				if walk(&n.args[k]) {
					return true
				}
			}
			return false
		}
		return walk(c.expr)
	}
	for _, a := range p.g.atoms[c.lo:c.hi] {
		if bad(a) {
			return true
		}
	}
	return false
}

func (p *planner) completedCount() int {
	c := 0
	for i := range p.s.Jobs {
		if j := &p.s.Jobs[i]; p.labelled(j) && j.Phase == JobPhaseCompleted {
			c++
		}
	}
	return c
}

// createReady creates ready flows in spec order (main, then finally) up to
// the parallelism cap; the rest wait with Parallelism.
func (p *planner) createReady(fs []fstate, outcome string) {
	g := p.g
	limit := p.wf.Spec.Parallelism
	active := 0
	if limit > 0 {
		for i := range g.n {
			if j := fs[i].job; j != nil && p.opt.active(j.Phase) {
				active++
			}
		}
	}
	slots := limit - active
	for i := range g.n {
		f := &fs[i]
		if !f.ready {
			continue
		}
		if limit > 0 && slots <= 0 {
			f.ready = false
			f.reasons = append(f.reasons, parallelismReason(limit-slots, limit))
			continue
		}
		slots--
		if f.retry {
			f.attempt++
			p.entries[i].Retrying = false
		}
		p.res.Create = append(p.res.Create, p.create(g.flow(i), f.attempt, g.finally(i), outcome))
	}
}

// sizedLists returns the status lists with room for the flows' observed
// jobs: appending 5,000 names one at a time regrew them about 80 times per
// plan, and a list of its own each was 8 allocations more.
func sizedLists(g *graph, fs []fstate) lists {
	var sizes [nBuckets]int
	for i := range g.n {
		if f := &fs[i]; !g.dup[i] && f.job != nil && f.bucket != bucketNone {
			sizes[f.bucket]++
		}
	}
	total := 0
	for _, n := range sizes {
		total += n
	}
	// One array holds every list, each capped at its own part, so an
	// executor appending to one list never writes into the next.
	all := make([]string, 0, total)
	var l lists
	for b, n := range sizes {
		if n > 0 {
			l[b] = all[len(all) : len(all) : len(all)+n]
			all = all[:len(all)+n]
		}
	}
	return l
}

// defaultStatus builds the Default status from the flows planDefault
// observed and decided; the conditions are already in st.
func (p *planner) defaultStatus(st *Status, fs []fstate, own func(int32) bool) {
	g, opt := p.g, p.opt
	l := sizedLists(g, fs)
	// The list is compacted in place over the entries built per flow: entry
	// k is written at an index ≤ k, after entry k was read.
	list := p.entries[:0]
	for i := range g.n {
		f := &fs[i]
		if g.dup[i] {
			continue
		}
		if f.reasons != nil {
			p.res.Blocked = append(p.res.Blocked, Blocked{Flow: g.names[i], Index: i, Reasons: f.reasons})
		}
		name := p.names[i]
		if j := f.job; j != nil {
			if f.bucket != bucketNone {
				l[f.bucket] = append(l[f.bucket], name)
			}
			if !f.known {
				p.issue(Issue{Kind: IssueUnknownJobPhase, Flow: i, Field: "job " + name, Target: -1, Value: string(j.Phase),
					Message: "job phase is not a Volcano job phase; bucketed as unknown"})
			}
		}
		if !f.hasEntry && f.outcome == OutcomeNone {
			continue
		}
		e := &p.entries[i]
		if !f.hasEntry {
			*e = JobStatus{Name: name}
		}
		e.Flow = g.names[i]
		e.Outcome = f.outcome
		e.Started = f.started
		e.Attempt = f.attempt
		if e.Outcome != OutcomeNone {
			e.NextRetryAt, e.Retrying = nil, false
		}
		if k := len(list); &p.entries[k] != e {
			p.entries[k] = *e // compact over a skipped entry
		}
		list = list[:len(list)+1]
	}
	if opt.KeepStaleEntries {
		for i := range p.wf.Status.JobStatusList {
			if e := &p.wf.Status.JobStatusList[i]; !p.ownName(e.Name) {
				list = append(list, *e)
			}
		}
	}
	for _, ji := range p.orphans(own) {
		j := &p.s.Jobs[ji]
		st.OrphanJobs = append(st.OrphanJobs, j.Name)
		p.issue(Issue{Kind: IssueOrphanJob, Flow: g.n, Field: "job " + j.Name, Target: -1, Value: j.Name,
			Message: "labelled job belongs to no flow of the spec; it is never counted"})
	}
	for _, b := range p.res.Blocked {
		w := WaitingFlow{Flow: b.Flow, Reasons: make([]string, len(b.Reasons))}
		for i, x := range b.Reasons {
			w.Reasons[i] = x.String()
		}
		st.WaitingFlows = append(st.WaitingFlows, w)
	}
	l.fill(st)
	if len(list) > 0 {
		st.JobStatusList = slices.Clip(list)
	}
	if len(st.Conditions) == 0 {
		st.Conditions = nil
	}
	p.res.Status = *st
	p.res.WriteStatus = !statusEqual(&p.wf.Status, st)
}

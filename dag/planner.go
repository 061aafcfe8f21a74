package dag

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/internal/strtab"
)

// Decide decides what to do for one workflow: the jobs to create and delete,
// the complete new status, why each waiting flow waits and when to plan
// again. It returns an error only for unusable input: invalid options
// (ErrInvalidOptions, as Options.Validate reports them), or a snapshot
// Snapshot.Validate refuses (ErrInvalidInput). An
// invalid spec is not an error but a plan outcome: Default fails the
// workflow with reason InvalidSpec, VolcanoCompat waits forever, as the
// anchor does; Check refuses such a spec at admission.
func Decide(in Snapshot, o Options) (Plan, error) {
	if err := o.Validate(); err != nil {
		return Plan{}, err
	}
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	wf := &in.Flow
	p := &planner{s: &in, wf: wf, opt: o, now: metav1.NewTime(in.Now),
		label: wf.Namespace + "." + wf.Name}
	p.g = buildGraph(wf, o)
	p.indexJobs()
	p.res = Plan{Namespace: wf.Namespace, Name: wf.Name, UID: wf.UID}
	p.res.Issues = append(p.res.Issues, p.g.issues...)
	if o.volcano() {
		p.planVolcano()
	} else {
		p.planDefault()
	}
	return p.finish(), nil
}

// Validate reports every problem of the snapshot that Decide refuses, as a
// *plancore.InvalidError wrapping ErrInvalidInput: a zero Now, a workflow
// without a uid (every job is created with an owner reference to it, which
// the API server refuses without one), a previous phase that is no
// workflow phase (Volcano: "jobflow <name> state <phase> is invalid"), a
// previous attempt number out of range, observed jobs with an
// empty or repeated name, and a negative running duration. Decide checks
// the options first (Options.Validate, ErrInvalidOptions). The spec is
// Check's and Lint's, because an invalid spec is a plan outcome, not an
// unusable input.
func (in Snapshot) Validate() error {
	var errs field.ErrorList
	if in.Now.IsZero() {
		errs = append(errs, field.Required(field.NewPath("now"), "the planning time must be set"))
	}
	if in.Flow.UID == "" {
		// Every job is created with an owner reference to the workflow, and
		// the API server refuses one without a uid.
		errs = append(errs, field.Required(field.NewPath("flow", "uid"), "the owner reference of every job created names the workflow's uid"))
	}
	switch ph := in.Flow.Status.State.Phase; ph {
	case "", PhasePending, PhaseRunning, PhaseSucceed, PhaseFailed, PhaseTerminating:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("flow", "status", "state", "phase"), string(ph),
			[]string{"", string(PhasePending), string(PhaseRunning), string(PhaseSucceed), string(PhaseFailed), string(PhaseTerminating)}))
	}
	for i, e := range in.Flow.Status.JobStatusList {
		if e.Attempt < 0 || e.Attempt > math.MaxInt32 {
			errs = append(errs, field.Invalid(field.NewPath("flow", "status", "jobStatusList").Index(i).Child("attempt"), e.Attempt,
				"must be between 0 and 2147483647"))
		}
	}
	// Repeated names are found in one table (strtab): a map of 5,000 names
	// was about 17 allocations of every Decide.
	names := strtab.New(len(in.Jobs))
	for i := range in.Jobs {
		j := &in.Jobs[i]
		// The job's path is built only when a check fails: Decide validates
		// every job on every call, so valid input allocates no path.
		if j.Name == "" {
			errs = append(errs, field.Required(jobPath(i).Child("name"), "an observed job has a name"))
		} else if names.Insert(names.Hash(j.Name), i, func(k int) bool { return in.Jobs[k].Name == j.Name }) >= 0 {
			errs = append(errs, field.Duplicate(jobPath(i).Child("name"), j.Name))
		}
		if j.RunningDuration != nil && *j.RunningDuration < 0 {
			errs = append(errs, field.Invalid(jobPath(i).Child("runningDuration"), *j.RunningDuration, "must not be negative"))
		}
	}
	return plancore.Invalid(ErrInvalidInput, errs)
}

// jobPath is the path of the i-th observed job.
func jobPath(i int) *field.Path { return field.NewPath("jobs").Index(i) }

// planner holds one call's working state.
type planner struct {
	s     *Snapshot
	wf    *Workflow
	opt   Options
	now   metav1.Time
	label string
	// jobOf is the observed job named <workflow>-<flow> per graph node, -1
	// for none; others lists the jobs that are no node's, in job order.
	jobOf  []int32
	others []int32
	byName map[string]int32         // nil until job needs it
	probes map[probeKey]ProbeResult // nil until a probe entry needs it
	prevAt map[string]int32         // nil until the cursor misses
	// prevCursor is the next previous entry expected by prev.
	prevCursor int
	// lab caches labelled per job index (labUnknown until first asked), so
	// labels are read once, and only when needed: Default reads a flow's
	// job label in the same pass as the rest of the job.
	lab   []uint8
	g     *graph
	names []string // job name per flow (Default)
	// entries backs the Default status list.
	entries []JobStatus
	arena   arena
	res     Plan
}

func (p *planner) jobName(flow string) string { return p.wf.Name + "-" + flow }

// nodeOfJob returns the graph node whose job name <workflow>-<flow> is
// name, or -1. It slices the name instead of building <workflow>-<flow>
// per flow, so matching jobs to flows allocates nothing.
func (p *planner) nodeOfJob(name string) int32 {
	pre := p.wf.Name
	if len(name) <= len(pre)+1 || name[len(pre)] != '-' || name[:len(pre)] != pre {
		return -1
	}
	if i, ok := p.g.lookup(name[len(pre)+1:]); ok {
		return i
	}
	return -1
}

// indexJobs fills jobOf, others and lab. Names are unique (Snapshot.Validate).
func (p *planner) indexJobs() {
	jobs := p.s.Jobs
	p.jobOf = make([]int32, p.g.n)
	for i := range p.jobOf {
		p.jobOf[i] = -1
	}
	p.lab = make([]uint8, len(jobs))
	for i := range jobs {
		if k := p.nodeOfJob(jobs[i].Name); k < 0 || p.jobOf[k] >= 0 {
			p.others = append(p.others, int32(i))
		} else {
			p.jobOf[k] = int32(i)
		}
	}
}

// jobIndex returns the index of the observed job with a name.
func (p *planner) jobIndex(name string) (int32, bool) {
	if k := p.nodeOfJob(name); k >= 0 {
		i := p.jobOf[k]
		return i, i >= 0
	}
	if p.byName == nil {
		p.byName = make(map[string]int32, len(p.others))
		for _, i := range p.others {
			p.byName[p.s.Jobs[i].Name] = i
		}
	}
	i, ok := p.byName[name]
	return i, ok
}

func (p *planner) job(name string) *Job {
	if i, ok := p.jobIndex(name); ok {
		return &p.s.Jobs[i]
	}
	return nil
}

// prev returns the previous status entry of a job name. Lookups made in
// the order the previous list was written (spec order, as Decide writes it)
// are served by a cursor; the name→index map is built only on the first
// miss.
func (p *planner) prev(name string) *JobStatus {
	list := p.wf.Status.JobStatusList
	if p.prevAt == nil {
		if c := p.prevCursor; c < len(list) && list[c].Name == name {
			p.prevCursor++
			return &list[c]
		}
		p.prevAt = make(map[string]int32, len(list))
		for i := range list {
			if _, dup := p.prevAt[list[i].Name]; !dup {
				p.prevAt[list[i].Name] = int32(i)
			}
		}
	}
	if i, ok := p.prevAt[name]; ok {
		return &list[i]
	}
	return nil
}

// prevIndex is prev's index form, for KeepStaleEntries.
func (p *planner) prevIndex(name string) (int32, bool) {
	if p.prevAt == nil {
		p.prevCursor = len(p.wf.Status.JobStatusList) // force the map
		p.prev("")
	}
	i, ok := p.prevAt[name]
	return i, ok
}

func (p *planner) labelled(j *Job) bool { return j.Labels[LabelCreatedByJobFlow] == p.label }

// Values of planner.lab.
const (
	labUnknown uint8 = iota
	labNo
	labYes
)

// labelledAt is labelled for the job at index i, read once.
func (p *planner) labelledAt(i int32) bool {
	switch p.lab[i] {
	case labYes:
		return true
	case labNo:
		return false
	}
	l := p.labelled(&p.s.Jobs[i])
	p.lab[i] = labNo
	if l {
		p.lab[i] = labYes
	}
	return l
}

// create builds one CreateJob, as Volcano does: the labels and annotations are two
// separate maps so an executor may change one.
func (p *planner) create(f *Flow, attempt int, finally bool, outcome string) CreateJob {
	ns := p.wf.Namespace
	meta := func() map[string]string {
		return map[string]string{
			LabelCreatedByJobTemplate: ns + "." + f.Name,
			LabelCreatedByJobFlow:     p.label,
		}
	}
	yes := true
	c := CreateJob{
		Flow: f.Name, Name: p.jobName(f.Name), Namespace: ns,
		Template: TemplateRef{Namespace: ns, Name: f.Name},
		Labels:   meta(), Annotations: meta(),
		Owner: metav1.OwnerReference{APIVersion: "flow.volcano.sh/v1alpha1", Kind: "JobFlow", Name: p.wf.Name, UID: p.wf.UID,
			Controller: &yes, BlockOwnerDeletion: &yes},
		Attempt: attempt, Finally: finally,
	}
	switch {
	case finally:
		c.Reason = finallyReason(outcome)
	case attempt > 1:
		c.Reason = retryCreateReason(f.Name, attempt)
	default:
		c.Reason = dependenciesMetReason(f.Name)
	}
	if !p.opt.volcano() {
		if len(f.Patch) > 0 {
			c.Patch = templatePatch(f.Patch)
		}
		if attempt > 1 {
			c.Annotations[p.opt.prefix()+"attempt"] = strconv.Itoa(attempt)
		}
		if finally {
			c.Annotations[p.opt.prefix()+"workflow-outcome"] = outcome
		}
	}
	return c
}

// issue records a planning issue.
func (p *planner) issue(is Issue) {
	if is.Severity == "" {
		is.Severity = SeverityWarning
	}
	p.res.Issues = append(p.res.Issues, is)
}

// orphans returns the labelled jobs that are no current flow's job (own
// tells by job index), sorted by name.
func (p *planner) orphans(own func(i int32) bool) []int32 {
	var out []int32
	for i := range p.s.Jobs {
		if !own(int32(i)) && p.labelledAt(int32(i)) {
			out = append(out, int32(i))
		}
	}
	slices.SortFunc(out, func(a, b int32) int {
		switch x, y := p.s.Jobs[a].Name, p.s.Jobs[b].Name; {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	return out
}

// retentionDeletes plans the deletion of every labelled job, flows in spec
// order, then the rest by name.
func (p *planner) retentionDeletes(order []string, own func(i int32) bool) {
	for _, name := range order {
		if j := p.job(name); j != nil && p.labelled(j) {
			p.res.Delete = append(p.res.Delete, DeleteJob{Flow: flowOf(p.wf.Name, name), Name: name, Namespace: p.wf.Namespace, UID: j.UID, Reason: retentionReason()})
		}
	}
	for _, i := range p.orphans(own) {
		j := &p.s.Jobs[i]
		p.res.Delete = append(p.res.Delete, DeleteJob{Name: j.Name, Namespace: p.wf.Namespace, UID: j.UID, Reason: retentionReason()})
	}
}

func flowOf(wf, job string) string {
	if len(job) > len(wf)+1 {
		return job[len(wf)+1:]
	}
	return ""
}

// finish fills the computed fields shared by both state machines.
func (p *planner) finish() Plan {
	r := &p.res
	st := &r.Status
	r.StatusBytes = statusLen(st)
	if r.StatusBytes > p.opt.sizeWarn() {
		p.issue(Issue{Kind: IssueStatusTooLarge, Flow: -1, Field: "status", Target: -1, Value: strconv.Itoa(r.StatusBytes),
			Message: fmt.Sprintf("status is %d bytes, over the %d-byte warning threshold; set HistoryLimit", r.StatusBytes, p.opt.sizeWarn())})
	}
	if prev := p.wf.Status.State.Phase; prev != st.State.Phase {
		r.Transitions = []Transition{{From: prev, To: st.State.Phase}}
	}
	if !r.WriteStatus {
		r.WriteStatus = p.opt.AlwaysWrite && p.wroteAllowed()
	}
	sortIssues(r.Issues)
	return *r
}

// wroteAllowed reports whether AlwaysWrite may force a write: never in the
// phases where the anchor writes nothing.
func (p *planner) wroteAllowed() bool {
	switch p.wf.Status.State.Phase {
	case PhaseFailed, PhaseTerminating:
		return false
	case PhaseSucceed:
		return p.wf.Spec.JobRetainPolicy != RetainPolicyDelete
	}
	return true
}

// copyStatus returns a copy of the previous status whose slices and maps
// are fresh, for plans that keep the status unchanged.
func copyStatus(s Status) Status {
	out := s
	out.PendingJobs, out.RunningJobs, out.FailedJobs = slices.Clone(s.PendingJobs), slices.Clone(s.RunningJobs), slices.Clone(s.FailedJobs)
	out.CompletedJobs, out.TerminatedJobs, out.UnknownJobs = slices.Clone(s.CompletedJobs), slices.Clone(s.TerminatedJobs), slices.Clone(s.UnknownJobs)
	out.CompletingJobs, out.TerminatingJobs, out.AbortedJobs = slices.Clone(s.CompletingJobs), slices.Clone(s.TerminatingJobs), slices.Clone(s.AbortedJobs)
	out.OrphanJobs = slices.Clone(s.OrphanJobs)
	out.JobStatusList = slices.Clone(s.JobStatusList)
	if s.Conditions != nil {
		out.Conditions = make(map[string]Condition, len(s.Conditions))
		for k, v := range s.Conditions {
			out.Conditions[k] = v
		}
	}
	out.WaitingFlows = slices.Clone(s.WaitingFlows)
	if s.SpecChange != nil {
		c := *s.SpecChange
		out.SpecChange = &c
	}
	return out
}

func minDur(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}

package dag

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/plancore/plancore/internal/strtab"
)

// result is the result word of an atom.
type result uint8

const (
	resSucceeded result = iota
	resFailed
	resOmitted
	resDone
	resStarted
	// resProbe is a probe target: its job exists and the flow's
	// probe entries pass. No depends expression can name it.
	resProbe
)

var resultNames = [...]string{"Succeeded", "Failed", "Omitted", "Done", "Started"}

func (r result) String() string {
	if r == resProbe {
		return "Probe"
	}
	return resultNames[r]
}

// resultWord resolves a RESULT word of a depends expression.
func resultWord(s string) (result, bool) {
	for i, n := range resultNames {
		if n == s {
			return result(i), true
		}
	}
	return 0, false
}

// structuredWord resolves the phase of a TargetStatus, aliases included.
func structuredWord(s string) (result, bool) {
	switch s {
	case "Completed":
		return resSucceeded, true
	case "Running":
		return resStarted, true
	}
	return resultWord(s)
}

// atom is one `flow.result` term; flow is -1-k for an unknown flow, whose
// name is g.unknown[k]. Atoms stay 8 bytes: a spec has one per reference.
type atom struct {
	flow int32
	res  result
}

// cnode is a compiled depends expression.
type cnode struct {
	op   Op
	args []cnode
	atom atom
}

// cond is a flow's compiled condition: an AND of atoms[lo:hi], or expr;
// probe holds the entries of a dependsOn.probe.
type cond struct {
	lo, hi int32
	expr   *cnode
	probe  *probeCond
}

// graph is the validated shape of a spec, built once per call in O(V+E):
// nodes are main flows then finally flows.
type graph struct {
	wf      *Workflow
	nMain   int
	n       int
	names   []string
	index   strtab.Table // flow name -> its first node (lookup); entries are node numbers
	dup     []bool
	conds   []cond
	atoms   []atom
	edgeAt  []int32 // node i's distinct known references are edges[edgeAt[i]:edgeAt[i+1]]
	edges   []int32
	topo    []int32  // Kahn order; shorter than n when cyclic
	left    []bool   // left over by Kahn: on or downstream of a cycle
	handled []bool   // mentioned somewhere as x.Failed, x.Omitted or x.Done
	unknown []string // names of unknown referenced flows
	issues  []Issue
	invalid bool
}

// lookup returns the first node named name. A name repeated or empty is
// no node of its own (g.dup), so only first definitions are in the index.
func (g *graph) lookup(name string) (int32, bool) {
	i := g.index.Find(g.index.Hash(name), func(j int) bool { return g.names[j] == name })
	return int32(i), i >= 0
}

func (g *graph) flow(i int) *Flow {
	if i < g.nMain {
		return &g.wf.Spec.Flows[i]
	}
	return &g.wf.Spec.Finally[i-g.nMain]
}

func (g *graph) finally(i int) bool { return i >= g.nMain }

func (g *graph) field(i int) string {
	if i < g.nMain {
		return "flows[" + strconv.Itoa(i) + "]"
	}
	return "plancoreFinally[" + strconv.Itoa(i-g.nMain) + "]"
}

func (g *graph) add(is Issue) {
	if is.Severity == "" {
		is.Severity = SeverityError
	}
	if is.Severity == SeverityError {
		g.invalid = true
	}
	g.issues = append(g.issues, is)
}

// buildGraph indexes and checks the spec. It never fails: everything wrong
// is an issue. Every check runs; none stops the others.
// Its steps: index the names, read every flow's dependencies, check the
// spec-wide fields, and order the flows.
func buildGraph(wf *Workflow, opt Options) *graph {
	spec := &wf.Spec
	g := &graph{wf: wf, nMain: len(spec.Flows), n: len(spec.Flows) + len(spec.Finally)}
	n := g.n
	g.names = make([]string, n)
	g.index = strtab.New(n)
	g.dup = make([]bool, n)
	g.conds = make([]cond, n)
	g.handled = make([]bool, n)
	g.edgeAt = make([]int32, n+1)
	g.indexNames()
	g.readDependencies(opt)
	g.checkSpecExtras(opt)
	g.order()
	return g
}

// indexNames checks the workflow's and every flow's name and indexes the
// flows by name, marking empty and repeated names as no node.
func (g *graph) indexNames() {
	wfOK := g.checkWorkflowName()
	for i := range g.n {
		f := g.flow(i)
		g.names[i] = f.Name
		if f.Name == "" {
			g.add(Issue{Kind: IssueEmptyName, Flow: i, Field: g.field(i) + ".name", Target: -1, Message: "flow name is empty"})
			g.dup[i] = true // an empty name is no node anyone can refer to
			continue
		}
		if first := g.index.Insert(g.index.Hash(f.Name), i, func(j int) bool { return g.names[j] == f.Name }); first >= 0 {
			g.dup[i] = true
			g.add(Issue{Kind: IssueDuplicateFlow, Flow: i, Field: g.field(i) + ".name", Target: int(first), Value: f.Name,
				Message: fmt.Sprintf("flow name already used by %s", g.field(int(first)))})
			continue
		}
		g.checkFlowName(i, f.Name, wfOK)
	}
}

// checkWorkflowName checks the workflow's name with the API server's
// object-name rule (a DNS-1123 subdomain) and, since every job is named
// <workflow>-<flow>, as a DNS-1123 label; it reports whether the name can
// prefix a job name.
func (g *graph) checkWorkflowName() bool {
	wf := g.wf
	if wf.Name == "" {
		g.add(Issue{Kind: IssueEmptyName, Flow: -1, Field: "metadata.name", Target: -1, Message: "workflow name is empty"})
		return false
	}
	if msgs := validation.IsDNS1123Subdomain(wf.Name); len(msgs) > 0 {
		g.add(Issue{Kind: IssueNameInvalid, Flow: -1, Field: "metadata.name", Target: -1, Value: wf.Name,
			Message: "workflow name: " + strings.Join(msgs, "; ")})
		return false
	}
	if msg := dns1123LabelProblem(wf.Name); msg != "" && g.n > 0 {
		g.add(Issue{Kind: IssueNameInvalid, Flow: -1, Field: "metadata.name", Target: -1, Value: wf.Name,
			Message: "job names <workflow>-<flow> must be DNS-1123 labels: " + msg})
		return false
	}
	if v := wf.Namespace + "." + wf.Name; labelValueProblem(v) != "" {
		g.add(Issue{Kind: IssueLabelValueInvalid, Flow: -1, Field: "metadata.name", Target: -1, Value: v,
			Message: "label value <namespace>.<workflow>: " + labelValueProblem(v)})
	}
	return true
}

// checkFlowName checks flow i's name as a DNS-1123 label and, when the
// workflow's name is good, its job name <workflow>-<flow> as one too (only
// the length can fail then) and the label value <namespace>.<flow>.
func (g *graph) checkFlowName(i int, name string, wfOK bool) {
	if msg := dns1123LabelProblem(name); msg != "" {
		g.add(Issue{Kind: IssueNameInvalid, Flow: i, Field: g.field(i) + ".name", Target: -1, Value: name,
			Message: "flow name: " + msg})
		return
	}
	// Both names being labels, the joined names can only be too long, so
	// the strings are built only to report them.
	if wfOK && len(g.wf.Name)+1+len(name) > validation.DNS1123LabelMaxLength {
		job := g.wf.Name + "-" + name
		g.add(Issue{Kind: IssueNameInvalid, Flow: i, Field: g.field(i) + ".name", Target: -1, Value: job,
			Message: "job name <workflow>-<flow>: " + dns1123LabelProblem(job)})
	}
	ns := g.wf.Namespace
	if ns != "" && isLabelValue(ns) && len(ns)+1+len(name) <= validation.LabelValueMaxLength {
		return
	}
	if v := ns + "." + name; !isLabelValue(v) {
		g.add(Issue{Kind: IssueLabelValueInvalid, Flow: i, Field: g.field(i) + ".name", Target: -1, Value: v,
			Message: "label value <namespace>.<flow>: " + labelValueProblem(v)})
	}
}

// depScratch is readDependencies' working memory, shared by every flow.
type depScratch struct {
	stamp  []int32 // stamp[t] == i: edge i→t already recorded
	tstamp []int32 // tstamp[t] == i: t already listed in i's targets
}

// readDependencies reads every flow's dependencies into atoms and edges,
// checking each flow's extensions on the way.
func (g *graph) readDependencies(opt Options) {
	n := g.n
	refs := 0
	for i := range n {
		if d := g.flow(i).DependsOn; d != nil {
			refs += len(d.Targets) + len(d.TargetsWithStatus)
		}
	}
	g.atoms = make([]atom, 0, refs)
	g.edges = make([]int32, 0, refs)
	sc := depScratch{stamp: make([]int32, n), tstamp: make([]int32, n)}
	for i := range sc.stamp {
		sc.stamp[i], sc.tstamp[i] = -1, -1
	}
	for i := range n {
		g.edgeAt[i] = int32(len(g.edges))
		f := g.flow(i)
		g.checkFlowExtras(i, f, opt)
		if f.DependsOn != nil {
			g.readFlowDeps(i, f, opt, &sc)
		}
	}
	g.edgeAt[n] = int32(len(g.edges))
}

// readFlowDeps reads flow i's dependsOn: its form, its expression or
// targets, and its probe, into the flow's condition.
func (g *graph) readFlowDeps(i int, f *Flow, opt Options, sc *depScratch) {
	d := f.DependsOn
	g.checkDepForms(i, d, opt)
	c := cond{lo: int32(len(g.atoms))}
	if d.Depends != "" {
		e, err := ParseDepends(d.Depends)
		if err != nil {
			se := err.(*SyntaxError)
			g.add(Issue{Kind: IssueExpressionSyntax, Flow: i, Field: g.field(i) + ".dependsOn.plancoreDepends", Target: se.Offset, Value: d.Depends,
				Message: fmt.Sprintf("flow %q: %s at byte %d", f.Name, se.Msg, se.Offset)})
		} else {
			cn := g.compile(i, e, sc.stamp)
			c.expr = &cn
		}
	} else {
		g.readTargets(i, d, sc)
		g.readTargetsWithStatus(i, d, sc)
	}
	c.hi = int32(len(g.atoms))
	if d.Probe != nil {
		c.probe = g.checkProbe(i, d, c, opt)
	}
	if !g.dup[i] {
		g.conds[i] = c
	}
}

// checkDepForms reports dependency forms that do not go together.
func (g *graph) checkDepForms(i int, d *DependsOn, opt Options) {
	if d.Depends != "" && (len(d.Targets) > 0 || len(d.TargetsWithStatus) > 0) {
		g.add(Issue{Kind: IssueMixedDependencyForms, Flow: i, Field: g.field(i) + ".dependsOn", Target: -1,
			Message: "depends cannot be combined with targets or targetsWithStatus"})
	}
	if opt.volcano() && (d.Depends != "" || len(d.TargetsWithStatus) > 0) {
		g.add(Issue{Kind: IssueNeedsPlancore, Flow: i, Field: g.field(i) + ".dependsOn", Target: -1,
			Message: "depends and targetsWithStatus need the plancore state machine"})
	}
	if g.finally(i) && len(d.Targets) > 0 {
		g.add(Issue{Kind: IssueFinallyOrdering, Flow: i, Field: g.field(i) + ".dependsOn.targets", Target: -1,
			Message: "finally flows cannot have targets; use depends or targetsWithStatus as a condition"})
	}
}

// readTargets records flow i's targets (succeeded, or probed), dropping
// repeated ones with a warning.
func (g *graph) readTargets(i int, d *DependsOn, sc *depScratch) {
	tres := resSucceeded
	if d.Probe != nil {
		tres = resProbe
	}
	// unknown holds the flow's unknown targets seen so far, made only when
	// there is one: a set, so that many unknown targets cost linear time.
	var unknown map[string]struct{}
	for k, t := range d.Targets {
		dupT := false
		ti, known := g.lookup(t)
		if known {
			dupT = sc.tstamp[ti] == int32(i)
			sc.tstamp[ti] = int32(i)
		} else {
			if unknown == nil {
				unknown = map[string]struct{}{}
			}
			_, dupT = unknown[t]
			unknown[t] = struct{}{}
		}
		if dupT {
			g.add(Issue{Kind: IssueDuplicateTarget, Severity: SeverityWarning, Flow: i, Field: fmt.Sprintf("%s.dependsOn.targets[%d]", g.field(i), k), Target: k, Value: t,
				Message: "duplicate target dropped"})
			continue
		}
		if known {
			// Resolved once: the name is not looked up again.
			g.atoms = append(g.atoms, g.refKnown(i, ti, t, tres, "targets", k, k, sc.stamp))
		} else {
			g.atoms = append(g.atoms, g.ref(i, t, tres, "targets", k, k, sc.stamp))
		}
	}
}

// readTargetsWithStatus records flow i's targetsWithStatus.
func (g *graph) readTargetsWithStatus(i int, d *DependsOn, sc *depScratch) {
	for k, ts := range d.TargetsWithStatus {
		r, ok := structuredWord(ts.Phase)
		if !ok {
			g.add(Issue{Kind: IssueUnknownResult, Flow: i, Field: fmt.Sprintf("%s.dependsOn.targetsWithStatus[%d].phase", g.field(i), k), Target: len(d.Targets) + k, Value: ts.Phase,
				Message: "phase must be Succeeded, Failed, Omitted, Done or Started (aliases Completed, Running)"})
			continue
		}
		g.atoms = append(g.atoms, g.ref(i, ts.Name, r, "targetsWithStatus", k, len(d.Targets)+k, sc.stamp))
	}
}

// order finds a topological order: spec order when every flow depends only
// on earlier flows (the way specs are usually written, so Kahn's reverse
// adjacency is not needed; the planner's decisions do not depend on which
// topological order it walks), else Kahn's, and the cycles of what is left.
func (g *graph) order() {
	if g.backward() {
		g.topo = make([]int32, g.n)
		for i := range g.topo {
			g.topo[i] = int32(i)
		}
		return
	}
	g.kahn()
	if len(g.topo) < g.n {
		g.cycles()
	}
}

// backward reports whether every edge goes to an earlier node.
func (g *graph) backward() bool {
	for i := range g.n {
		for _, t := range g.edges[g.edgeAt[i]:g.edgeAt[i+1]] {
			if int(t) >= i {
				return false
			}
		}
	}
	return true
}

// ref records one reference from node i to name (field sub[k], or the
// depends expression at byte pos when sub is "depends") and returns its atom.
func (g *graph) ref(i int, name string, res result, sub string, k, pos int, stamp []int32) atom {
	t, ok := g.lookup(name)
	if !ok {
		msg := fmt.Sprintf("flow %q: no flow named %q", g.names[i], name)
		if sub == "depends" {
			msg += fmt.Sprintf(" at byte %d", pos)
		}
		g.add(Issue{Kind: IssueUnknownTarget, Flow: i, Field: g.refField(i, sub, k), Target: pos, Value: name, Message: msg})
		return g.unknownAtom(name, res)
	}
	return g.refKnown(i, t, name, res, sub, k, pos, stamp)
}

// refField is the field path of reference k of node i's sub list.
func (g *graph) refField(i int, sub string, k int) string {
	if sub == "depends" {
		return g.field(i) + ".dependsOn.plancoreDepends"
	}
	return fmt.Sprintf("%s.dependsOn.%s[%d]", g.field(i), sub, k)
}

// refKnown is ref for a name already resolved to node t.
func (g *graph) refKnown(i int, t int32, name string, res result, sub string, k, pos int, stamp []int32) atom {
	if g.finally(int(t)) {
		g.add(Issue{Kind: IssueFinallyOrdering, Flow: i, Field: g.refField(i, sub, k), Target: pos, Value: name,
			Message: fmt.Sprintf("%q is a finally flow; nothing may depend on it", name)})
	}
	if (res == resFailed || res == resOmitted || res == resDone) && !g.finally(i) {
		// Only main flows handle a failure: a finally flow reacting to it
		// (Argo's onExit) does not make the workflow succeed.
		g.handled[t] = true
	}
	if !g.dup[i] && stamp[t] != int32(i) {
		stamp[t] = int32(i)
		g.edges = append(g.edges, t)
	}
	return atom{flow: t, res: res}
}

func (g *graph) unknownAtom(name string, res result) atom {
	g.unknown = append(g.unknown, name)
	return atom{flow: -int32(len(g.unknown)), res: res}
}

// atomName is the flow name an atom refers to.
func (g *graph) atomName(a atom) string {
	if a.flow < 0 {
		return g.unknown[-1-a.flow]
	}
	return g.names[a.flow]
}

// compile resolves the tokens of a parsed expression.
func (g *graph) compile(i int, e *Expr, stamp []int32) cnode {
	switch e.Op {
	case OpRef:
		tok := e.Token
		if _, ok := g.lookup(tok); ok {
			return cnode{op: OpRef, atom: g.ref(i, tok, resSucceeded, "depends", 0, e.Offset, stamp)}
		}
		if dot := strings.LastIndexByte(tok, '.'); dot >= 0 {
			name, word := tok[:dot], tok[dot+1:]
			if r, ok := resultWord(word); ok {
				return cnode{op: OpRef, atom: g.ref(i, name, r, "depends", 0, e.Offset, stamp)}
			}
			if _, ok := g.lookup(name); ok {
				g.add(Issue{Kind: IssueUnknownResult, Flow: i, Field: g.field(i) + ".dependsOn.plancoreDepends", Target: e.Offset, Value: tok,
					Message: fmt.Sprintf("flow %q: unknown result %q at byte %d (want Succeeded, Failed, Omitted, Done or Started)", g.names[i], word, e.Offset)})
				return cnode{op: OpRef, atom: g.unknownAtom(tok, resSucceeded)}
			}
		}
		return cnode{op: OpRef, atom: g.ref(i, tok, resSucceeded, "depends", 0, e.Offset, stamp)}
	default:
		out := cnode{op: e.Op, args: make([]cnode, len(e.Args))}
		for k, a := range e.Args {
			out.args[k] = g.compile(i, a, stamp)
		}
		return out
	}
}

func (g *graph) checkFlowExtras(i int, f *Flow, opt Options) {
	if len(f.Patch) > 0 {
		if msg := patchProblem(f.Patch); msg != "" {
			g.add(Issue{Kind: IssuePatchInvalid, Flow: i, Field: g.field(i) + ".patch", Target: -1, Message: msg})
		}
	}
	if f.Retry != nil {
		g.checkRetry(i, g.field(i)+".plancoreRetry", f.Retry)
		if opt.volcano() {
			g.add(Issue{Kind: IssueNeedsPlancore, Flow: i, Field: g.field(i) + ".plancoreRetry", Target: -1, Message: "retry needs the plancore state machine"})
		}
	}
	if opt.volcano() && g.finally(i) && i == g.nMain {
		g.add(Issue{Kind: IssueNeedsPlancore, Flow: i, Field: "plancoreFinally", Target: -1, Message: "finally flows need the plancore state machine"})
	}
}

func (g *graph) checkRetry(i int, field string, r *Retry) {
	bad := func(sub, msg string) {
		g.add(Issue{Kind: IssueRetryRange, Flow: i, Field: field + sub, Target: -1, Message: msg})
	}
	switch {
	case r.Limit < 0:
		bad(".limit", fmt.Sprintf("limit %d is negative", r.Limit))
	case r.Limit > math.MaxInt32:
		// Bounded so that an attempt number (at most limit+1) never wraps.
		bad(".limit", fmt.Sprintf("limit %d is above %d", r.Limit, math.MaxInt32))
	}
	for k, p := range r.On {
		switch p {
		case JobPhaseFailed, JobPhaseTerminated, JobPhaseAborted:
		default:
			bad(fmt.Sprintf(".on[%d]", k), fmt.Sprintf("phase %q cannot trigger a retry (want Failed, Terminated or Aborted)", p))
		}
	}
	b := r.Backoff
	if b.Duration < 0 {
		bad(".backoff.duration", fmt.Sprintf("duration %v is negative", b.Duration))
	}
	if b.Factor != 0 && !(b.Factor >= 1) {
		bad(".backoff.factor", fmt.Sprintf("factor %v is below 1", b.Factor))
	}
	if b.Cap < 0 || (b.Cap > 0 && b.Cap < b.Duration) {
		bad(".backoff.cap", fmt.Sprintf("cap %v is below the duration %v", b.Cap, b.Duration))
	}
}

func (g *graph) checkSpecExtras(opt Options) {
	s := &g.wf.Spec
	if s.Parallelism < 0 {
		g.add(Issue{Kind: IssueNegativeParallelism, Flow: -1, Field: "plancoreParallelism", Target: -1, Value: strconv.Itoa(s.Parallelism),
			Message: "parallelism must be 0 (unlimited) or positive"})
	}
	switch s.JobRetainPolicy {
	case "", RetainPolicyRetain, RetainPolicyDelete:
	default:
		g.add(Issue{Kind: IssueRetainPolicyInvalid, Flow: -1, Field: "jobRetainPolicy", Target: -1, Value: string(s.JobRetainPolicy),
			Message: "jobRetainPolicy must be retain or delete"})
	}
	if s.Retry != nil {
		g.checkRetry(-1, "plancoreRetry", s.Retry)
	}
	if opt.volcano() {
		var used []string
		if s.Retry != nil {
			used = append(used, "plancoreRetry")
		}
		if s.Parallelism != 0 {
			used = append(used, "plancoreParallelism")
		}
		if s.FailFast != nil {
			used = append(used, "plancoreFailFast")
		}
		for _, u := range used {
			g.add(Issue{Kind: IssueNeedsPlancore, Flow: -1, Field: u, Target: -1, Message: u + " needs the plancore state machine"})
		}
	}
}

// kahn computes a topological order with the queue seeded in spec order.
func (g *graph) kahn() {
	n := g.n
	indeg := make([]int32, n)
	revAt := make([]int32, n+1)
	for i := range n {
		indeg[i] = g.edgeAt[i+1] - g.edgeAt[i]
	}
	for _, t := range g.edges {
		revAt[t+1]++
	}
	for i := range n {
		revAt[i+1] += revAt[i]
	}
	rev := make([]int32, len(g.edges))
	fill := make([]int32, n)
	copy(fill, revAt[:n])
	for i := range n {
		for _, t := range g.edges[g.edgeAt[i]:g.edgeAt[i+1]] {
			rev[fill[t]] = int32(i)
			fill[t]++
		}
	}
	topo := make([]int32, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			topo = append(topo, int32(i))
		}
	}
	for h := 0; h < len(topo); h++ {
		v := topo[h]
		for _, w := range rev[revAt[v]:revAt[v+1]] {
			indeg[w]--
			if indeg[w] == 0 {
				topo = append(topo, w)
			}
		}
	}
	g.topo = topo
	if len(topo) < n {
		g.left = make([]bool, n)
		for i := range n {
			g.left[i] = indeg[i] > 0
		}
	}
}

// cycles runs an iterative Tarjan SCC over the flows Kahn left over and
// reports each cyclic component once, on its member with the smallest index.
func (g *graph) cycles() {
	n := g.n
	const unvisited = -1
	idx := make([]int32, n)
	low := make([]int32, n)
	comp := make([]int32, n)
	onStack := make([]bool, n)
	for i := range idx {
		idx[i], comp[i] = unvisited, unvisited
	}
	var stack, members []int32
	type frame struct{ v, e int32 }
	var call []frame
	counter, ncomp := int32(0), int32(0)
	for s := range n {
		if !g.left[s] || idx[s] != unvisited {
			continue
		}
		call = append(call, frame{int32(s), g.edgeAt[s]})
		idx[s], low[s] = counter, counter
		counter++
		stack = append(stack, int32(s))
		onStack[s] = true
		for len(call) > 0 {
			top := &call[len(call)-1]
			v := top.v
			if top.e < g.edgeAt[v+1] {
				w := g.edges[top.e]
				top.e++
				if !g.left[w] {
					continue
				}
				if idx[w] == unvisited {
					idx[w], low[w] = counter, counter
					counter++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, g.edgeAt[w]})
				} else if onStack[w] && idx[w] < low[v] {
					low[v] = idx[w]
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				if p := call[len(call)-1].v; low[v] < low[p] {
					low[p] = low[v]
				}
			}
			if low[v] == idx[v] {
				// Pop the component; members reuses one buffer, so the
				// many trivial components downstream of a cycle cost no
				// allocation.
				members = members[:0]
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = ncomp
					members = append(members, w)
					if w == v {
						break
					}
				}
				g.reportCycle(members, comp, ncomp)
				ncomp++
			}
		}
	}
}

func (g *graph) selfLoop(v int32) bool {
	for _, t := range g.edges[g.edgeAt[v]:g.edgeAt[v+1]] {
		if t == v {
			return true
		}
	}
	return false
}

func (g *graph) reportCycle(members []int32, comp []int32, c int32) {
	if len(members) == 1 && !g.selfLoop(members[0]) {
		return
	}
	min := members[0]
	for _, m := range members {
		min = minI32(min, m)
	}
	// Witness: DFS from min along targets in declaration order, inside the
	// component, back to min.
	path := g.witness(min, comp, c)
	names := make([]string, len(path))
	for k, p := range path {
		names[k] = g.names[p]
	}
	// Members in spec order, sorted rather than marked in an array of every
	// flow, so that many small cycles cost linear time.
	sorted := slices.Clone(members)
	slices.Sort(sorted)
	mem := make([]string, len(sorted))
	for k, m := range sorted {
		mem[k] = g.names[m]
	}
	g.add(Issue{Kind: IssueCycle, Flow: int(min), Field: g.field(int(min)) + ".dependsOn", Target: -1, Value: g.names[min], Members: mem,
		Message: "cycle: " + strings.Join(names, " -> ")})
}

func minI32(a, b int32) int32 {
	if a < b {
		return a
	}
	return b
}

func (g *graph) witness(s int32, comp []int32, c int32) []int32 {
	type frame struct{ v, e int32 }
	seen := map[int32]bool{s: true}
	call := []frame{{s, g.edgeAt[s]}}
	for len(call) > 0 {
		top := &call[len(call)-1]
		if top.e >= g.edgeAt[top.v+1] {
			call = call[:len(call)-1]
			continue
		}
		w := g.edges[top.e]
		top.e++
		if comp[w] != c {
			continue
		}
		if w == s {
			path := make([]int32, 0, len(call)+1)
			for _, f := range call {
				path = append(path, f.v)
			}
			return append(path, s)
		}
		if !seen[w] {
			seen[w] = true
			call = append(call, frame{w, g.edgeAt[w]})
		}
	}
	return []int32{s, s} // unreachable for a cyclic component
}

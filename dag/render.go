package dag

import (
	"fmt"
	"strings"
)

// nodeView is one flow as drawn.
type nodeView struct {
	label string // "name<sep>state"
	class string
}

// edgeView is one drawn dependency: target → flow.
type edgeView struct {
	from, to int
	label    string // "" for Succeeded
	dashed   bool   // from || or !
	cycle    bool
}

// view computes the drawing of a workflow: nodes in spec order (main, then
// finally), edges target → flow in spec order, then declaration order. It is
// linear in V+E.
func view(wf *Workflow) ([]nodeView, []edgeView, *graph) {
	g := buildGraph(wf, Options{})
	return viewNodes(wf, g), viewEdges(g), g
}

// viewNodes labels every flow with its state, taken from the status.
func viewNodes(wf *Workflow, g *graph) []nodeView {
	entries := make(map[string]*JobStatus, len(wf.Status.JobStatusList))
	for i := range wf.Status.JobStatusList {
		entries[wf.Status.JobStatusList[i].Name] = &wf.Status.JobStatusList[i]
	}
	waiting := make(map[string]string, len(wf.Status.WaitingFlows))
	for _, w := range wf.Status.WaitingFlows {
		if len(w.Reasons) > 0 {
			waiting[w.Flow] = w.Reasons[0]
		}
	}
	nodes := make([]nodeView, g.n)
	for i := range g.n {
		name := g.names[i]
		jobName := wf.Name + "-" + name
		phase, seen := JobPhase(""), false
		if c, ok := wf.Status.Conditions[jobName]; ok {
			phase, seen = c.Phase, true
		}
		e := entries[jobName]
		if e != nil && !seen {
			phase, seen = e.State, true
		}
		state, class := nodeState(e, phase, seen, waiting[name])
		nodes[i] = nodeView{label: name + "\x00" + state, class: class}
	}
	return nodes
}

// nodeState is a flow's drawn state and class: its outcome, else its job's
// phase, else why it waits, else "not created".
func nodeState(e *JobStatus, phase JobPhase, seen bool, waiting string) (state, class string) {
	switch {
	case e != nil && e.Outcome != OutcomeNone:
		return string(e.Outcome), map[Outcome]string{OutcomeSucceeded: "succeeded", OutcomeFailed: "failed", OutcomeOmitted: "omitted"}[e.Outcome]
	case seen:
		state, class = string(phase), "unknown"
		switch phase {
		case JobPhaseCompleted:
			class = "succeeded"
		case JobPhaseFailed, JobPhaseTerminated, JobPhaseAborted:
			class = "failed"
		case JobPhaseNone, JobPhasePending:
			class = "pending"
			if phase == JobPhaseNone {
				state = "Created"
			}
		case JobPhaseRunning, JobPhaseRestarting, JobPhaseCompleting, JobPhaseTerminating, JobPhaseAborting:
			class = "running"
		}
		return state, class
	case waiting != "":
		return "waiting: " + waiting, "waiting"
	}
	return "not created", "unknown"
}

// viewEdges draws every flow's dependencies, one edge per (target, result),
// dashed when any of its references sits under || or !.
func viewEdges(g *graph) []edgeView {
	cycleOf := map[string]int{}
	for k, is := range g.issues {
		if is.Kind == IssueCycle {
			for _, m := range is.Members {
				cycleOf[m] = k + 1
			}
		}
	}
	var edges []edgeView
	for i := range g.n {
		if g.dup[i] {
			continue
		}
		type key struct {
			t int32
			r result
		}
		idx := map[key]int{}
		add := func(a atom, dashed bool) {
			if a.flow < 0 {
				return
			}
			k := key{a.flow, a.res}
			if at, ok := idx[k]; ok {
				edges[at].dashed = edges[at].dashed || dashed
				return
			}
			label := ""
			if a.res != resSucceeded {
				label = a.res.String()
			}
			cy := cycleOf[g.names[a.flow]]
			idx[k] = len(edges)
			edges = append(edges, edgeView{from: int(a.flow), to: i, label: label, dashed: dashed,
				cycle: cy != 0 && cy == cycleOf[g.names[i]]})
		}
		c := g.conds[i]
		if c.expr != nil {
			walkRefs(c.expr, false, add)
		} else {
			for _, a := range g.atoms[c.lo:c.hi] {
				add(a, false)
			}
		}
	}
	return edges
}

// walkRefs calls add for every reference of an expression, soft under || or !.
func walkRefs(n *cnode, soft bool, add func(atom, bool)) {
	switch n.op {
	case OpRef:
		add(n.atom, soft)
	case OpNot, OpOr:
		for k := range n.args {
			walkRefs(&n.args[k], true, add)
		}
	default:
		for k := range n.args {
			walkRefs(&n.args[k], soft, add)
		}
	}
}

var classStyles = [][2]string{
	{"succeeded", "fill:#c8e6c9,stroke:#2e7d32"},
	{"failed", "fill:#ffcdd2,stroke:#c62828"},
	{"running", "fill:#bbdefb,stroke:#1565c0"},
	{"pending", "fill:#fff9c4,stroke:#f9a825"},
	{"waiting", "fill:#eeeeee,stroke:#757575"},
	{"omitted", "fill:#f5f5f5,stroke:#bdbdbd,stroke-dasharray:3"},
	{"unknown", "fill:#ffffff,stroke:#9e9e9e"},
}

// RenderMermaid draws the workflow as a Mermaid flowchart with the state of
// every flow taken from wf.Status: node ids are f<index> (never the name),
// labels are the name and the state, edges go target → flow, labelled with
// the awaited result unless it is Succeeded, dashed when they come from || or
// !, red on a cycle; finally flows sit in a subgraph.
func RenderMermaid(wf Workflow) string {
	nodes, edges, g := view(&wf)
	esc := func(s string) string {
		s = strings.ReplaceAll(s, `"`, "#quot;")
		return strings.ReplaceAll(s, "\x00", "<br/>")
	}
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	defined := make([]bool, g.n)
	ref := func(i int) string {
		if defined[i] {
			return fmt.Sprintf("f%d", i)
		}
		defined[i] = true
		return fmt.Sprintf("f%d[\"%s\"]:::%s", i, esc(nodes[i].label), nodes[i].class)
	}
	var red []int
	write := func(k int, e edgeView) {
		arrow := "-->"
		if e.dashed {
			arrow = "-.->"
		}
		if e.label != "" {
			arrow += "|" + e.label + "|"
		}
		from := ref(e.from)
		fmt.Fprintf(&b, "  %s %s %s\n", from, arrow, ref(e.to))
		if e.cycle {
			red = append(red, k)
		}
	}
	// Finally nodes are declared inside their subgraph first.
	if g.n > g.nMain {
		b.WriteString("  subgraph finally\n")
		for i := g.nMain; i < g.n; i++ {
			fmt.Fprintf(&b, "    %s\n", ref(i))
		}
		b.WriteString("  end\n")
	}
	for k, e := range edges {
		write(k, e)
	}
	for i := range g.nMain {
		if !defined[i] {
			fmt.Fprintf(&b, "  %s\n", ref(i))
		}
	}
	for _, k := range red {
		fmt.Fprintf(&b, "  linkStyle %d stroke:red\n", k)
	}
	for _, c := range classStyles {
		fmt.Fprintf(&b, "  classDef %s %s\n", c[0], c[1])
	}
	return b.String()
}

// RenderDOT draws the workflow in Graphviz DOT with the same content as
// RenderMermaid; finally flows sit in cluster_finally.
func RenderDOT(wf Workflow) string {
	nodes, edges, g := view(&wf)
	esc := func(s string) string {
		s = strings.ReplaceAll(s, `\`, `\\`)
		s = strings.ReplaceAll(s, `"`, `\"`)
		return strings.ReplaceAll(s, "\x00", `\n`)
	}
	fill := map[string]string{}
	for _, c := range classStyles {
		f := strings.TrimPrefix(strings.Split(c[1], ",")[0], "fill:")
		fill[c[0]] = f
	}
	var b strings.Builder
	fmt.Fprintf(&b, "digraph \"%s\" {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\"];\n", esc(wf.Namespace+"/"+wf.Name))
	node := func(indent string, i int) {
		fmt.Fprintf(&b, "%sf%d [label=\"%s\", class=\"%s\", fillcolor=\"%s\"];\n", indent, i, esc(nodes[i].label), nodes[i].class, fill[nodes[i].class])
	}
	for i := range g.nMain {
		node("  ", i)
	}
	if g.n > g.nMain {
		b.WriteString("  subgraph cluster_finally {\n    label=\"finally\";\n")
		for i := g.nMain; i < g.n; i++ {
			node("    ", i)
		}
		b.WriteString("  }\n")
	}
	for _, e := range edges {
		var attrs []string
		if e.label != "" {
			attrs = append(attrs, fmt.Sprintf("label=\"%s\"", e.label))
		}
		if e.dashed {
			attrs = append(attrs, "style=dashed")
		}
		if e.cycle {
			attrs = append(attrs, "color=red")
		}
		if len(attrs) > 0 {
			fmt.Fprintf(&b, "  f%d -> f%d [%s];\n", e.from, e.to, strings.Join(attrs, ", "))
		} else {
			fmt.Fprintf(&b, "  f%d -> f%d;\n", e.from, e.to)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

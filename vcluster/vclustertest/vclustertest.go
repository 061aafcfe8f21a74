// Package vclustertest provides rapid generators of valid virtual-cluster
// hierarchies for package vcluster, for property tests of control planes
// built on it, in the way net/http/httptest serves tests of net/http code: a
// state is drawn by a random sequence of operations (create, resize, job
// clusters, removals, remove-nodes, replenish, GC, node deaths and joins,
// busy, detached and job-dead flips) from a primary cluster. plancore's own
// properties draw from it and check each step with vcluster.CheckPlan and
// vcluster.CheckState.
package vclustertest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"pgregory.net/rapid"

	"github.com/plancore/plancore/vcluster"
)

// Chooser draws the choices of a random operation: from rapid in properties
// (RapidChooser), from a seeded generator in long runs (SeededChooser).
type Chooser interface {
	IntN(n int, label string) int
}

// RapidChooser draws from t.
func RapidChooser(t *rapid.T) Chooser { return rapidChooser{t} }

// SeededChooser draws from r.
func SeededChooser(r *rand.Rand) Chooser { return seededChooser{r} }

type rapidChooser struct{ t *rapid.T }

func (c rapidChooser) IntN(n int, label string) int { return rapid.IntRange(0, n-1).Draw(c.t, label) }

type seededChooser struct{ r *rand.Rand }

func (c seededChooser) IntN(n int, _ string) int { return c.r.IntN(n) }

// Op is one random operation: a plan, or a node or cluster event.
type Op struct {
	Desc string
	// Plan is set for planning operations.
	Plan func(s vcluster.State) (vcluster.Plan, error)
	// Event is set for events, which write nothing.
	Event func(s vcluster.State) (vcluster.State, error)
	// Target is the logical cluster whose revision a successful plan may
	// change (create/update and remove-nodes only; "*" for any).
	Target string
	// Replenish holds the options of a replenish operation.
	Replenish *vcluster.Options
	// Request is set for create/update operations.
	Request *vcluster.Request
}

// LogicalIDs are the logical cluster ids the operations use, JobNames the
// job names.
var (
	LogicalIDs = []string{"a", "b", "c", "d"}
	JobNames   = []string{"j1", "j2", "j3"}
)

// World tracks what the generator needs between operations.
type World struct {
	// Templates are the node templates of the drawn primary.
	Templates []string
	rev       uint64
	joined    int
}

func (w *World) nextRev(c Chooser) uint64 {
	// Revisions from the caller: usually increasing, sometimes behind.
	if c.IntN(8, "rev-behind") == 0 {
		return uint64(c.IntN(3, "old-rev"))
	}
	w.rev += uint64(1 + c.IntN(3, "rev-step"))
	return w.rev
}

func sortedNodes(s vcluster.State) []string { return s.Nodes.IDs() }

func pickFrom[T any](c Chooser, xs []T, label string) (T, bool) {
	var zero T
	if len(xs) == 0 {
		return zero, false
	}
	return xs[c.IntN(len(xs), label)], true
}

// Op draws one random operation on s.
func (w *World) Op(c Chooser, s vcluster.State) Op {
	nodes := sortedNodes(s)
	switch k := c.IntN(20, "op"); {
	case k < 5:
		return w.genCreate(c, s, nodes)
	case k < 10:
		return w.genJob(c, s, nodes)
	case k < 11:
		return w.genRemove(c, s, nodes)
	case k < 12:
		return w.genRemoveNodes(c, s, nodes)
	case k < 14:
		return w.genReplenish(c, s, nodes)
	case k < 15:
		return w.genGC(c, s, nodes)
	case k < 16:
		return w.genKill(c, s, nodes)
	case k < 17:
		return w.genJoin(c, s, nodes)
	case k < 18:
		return w.genBusy(c, s, nodes)
	case k < 19:
		return w.genDetached(c, s, nodes)
	default:
		return w.genJobDead(c, s, nodes)
	}
}

// replicas draws a replica set over the world's templates: each template
// absent, 0, or up to maxCount.
func (w *World) replicas(c Chooser, maxCount int) vcluster.ReplicaSet {
	rs := vcluster.ReplicaSet{}
	for _, t := range w.Templates {
		switch c.IntN(4, "template-use") {
		case 0:
		case 1:
			rs[t] = 0
		default:
			rs[t] = c.IntN(maxCount+1, "count")
		}
	}
	return rs
}

func (w *World) genCreate(c Chooser, s vcluster.State, nodes []string) Op {
	id := LogicalIDs[c.IntN(len(LogicalIDs), "id")]
	req := vcluster.Request{ID: id, Divisible: c.IntN(2, "divisible") == 0, ReplicaSets: w.replicas(c, len(nodes)/max(1, len(w.Templates))+2)}
	if cur, ok := s.Logical[id]; ok {
		req.Revision = cur.Revision
		req.Divisible = cur.Kind == vcluster.Divisible
		if c.IntN(10, "stale") == 0 {
			req.Revision++
		}
		if c.IntN(10, "flip") == 0 {
			req.Divisible = !req.Divisible
		}
	}
	if c.IntN(5, "prefer") == 0 && len(nodes) > 0 {
		for range 3 {
			req.Prefer = append(req.Prefer, nodes[c.IntN(len(nodes), "prefer-node")])
		}
	}
	rev := w.nextRev(c)
	return Op{Desc: fmt.Sprintf("create/update %s divisible=%v %v rev %d→%d prefer %v", id, req.Divisible, req.ReplicaSets, req.Revision, rev, req.Prefer),
		Plan: func(s vcluster.State) (vcluster.Plan, error) {
			return vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: req, Revision: rev})
		}, Target: id, Request: &req}
}

func (w *World) genJob(c Chooser, s vcluster.State, nodes []string) Op {
	parents := append([]string{vcluster.PrimaryID}, slices.Sorted(maps.Keys(s.Logical))...)
	parent, _ := pickFrom(c, parents, "parent")
	// Jobs ask for few nodes of few templates, so most fit.
	rs := vcluster.ReplicaSet{}
	for _, t := range w.Templates {
		if c.IntN(3, "job-template-use") == 0 {
			rs[t] = c.IntN(3, "job-count")
		}
	}
	req := vcluster.JobRequest{Parent: parent, Job: JobNames[c.IntN(len(JobNames), "job")], ReplicaSets: rs}
	rev := w.nextRev(c)
	return Op{Desc: fmt.Sprintf("create job %s %v", vcluster.JobID(req.Parent, req.Job), req.ReplicaSets),
		Plan: func(s vcluster.State) (vcluster.Plan, error) {
			return vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: req, Revision: rev})
		}}
}

func (w *World) genRemove(c Chooser, s vcluster.State, nodes []string) Op {
	ids := append(slices.Sorted(maps.Keys(s.Logical)), slices.Sorted(maps.Keys(s.Jobs))...)
	ids = append(ids, "zz", "zz##j")
	id, _ := pickFrom(c, ids, "remove-id")
	return Op{Desc: "remove " + id, Plan: func(s vcluster.State) (vcluster.Plan, error) {
		return vcluster.PlanRemove(vcluster.RemoveInput{State: s, ID: id})
	}}
}

func (w *World) genRemoveNodes(c Chooser, s vcluster.State, nodes []string) Op {
	id := LogicalIDs[c.IntN(len(LogicalIDs), "id")]
	var ids []string
	members := s.Members(id)
	for range 1 + c.IntN(3, "how-many") {
		if len(members) > 0 && c.IntN(4, "foreign") != 0 {
			ids = append(ids, members[c.IntN(len(members), "member")])
		} else if len(nodes) > 0 {
			ids = append(ids, nodes[c.IntN(len(nodes), "node")])
		}
	}
	rev := w.nextRev(c)
	return Op{Desc: fmt.Sprintf("remove nodes %s %v", id, ids), Target: id,
		Plan: func(s vcluster.State) (vcluster.Plan, error) {
			return vcluster.PlanRemoveNodes(vcluster.RemoveNodesInput{State: s, ID: id, Nodes: ids, Revision: rev})
		}}
}

func (w *World) genReplenish(c Chooser, s vcluster.State, nodes []string) Op {
	opts := vcluster.Options{}
	switch c.IntN(4, "cap") {
	case 0:
		opts.MaxSwaps = 1 + c.IntN(4, "max-swaps")
	case 1:
		opts.MaxSwapsPercent = 1 + c.IntN(100, "pct")
	}
	return Op{Desc: "replenish " + opts.String(), Replenish: &opts,
		Plan: func(s vcluster.State) (vcluster.Plan, error) {
			return vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, opts)
		}}
}

func (w *World) genGC(c Chooser, s vcluster.State, nodes []string) Op {
	return Op{Desc: "gc", Plan: func(s vcluster.State) (vcluster.Plan, error) {
		return vcluster.PlanGC(vcluster.GCInput{State: s})
	}}
}

func (w *World) genKill(c Chooser, s vcluster.State, nodes []string) Op {
	var aliveIDs []string
	for _, id := range nodes {
		if s.Nodes.Node(id).Alive {
			aliveIDs = append(aliveIDs, id)
		}
	}
	id, ok := pickFrom(c, aliveIDs, "victim")
	if !ok {
		return Op{Desc: "noop", Event: func(s vcluster.State) (vcluster.State, error) { return s, nil }}
	}
	return Op{Desc: "kill " + id, Event: func(s vcluster.State) (vcluster.State, error) { return s.SetNode(id, false, false) }}
}

func (w *World) genJoin(c Chooser, s vcluster.State, nodes []string) Op {
	w.joined++
	n := vcluster.Node{ID: fmt.Sprintf("new%04d", w.joined), Hostname: "joined", Template: w.Templates[c.IntN(len(w.Templates), "tpl")], Alive: true}
	return Op{Desc: "join " + n.ID, Event: func(s vcluster.State) (vcluster.State, error) { return s.Join(n) }}
}

func (w *World) genBusy(c Chooser, s vcluster.State, nodes []string) Op {
	var aliveIDs []string
	for _, id := range nodes {
		if s.Nodes.Node(id).Alive {
			aliveIDs = append(aliveIDs, id)
		}
	}
	id, ok := pickFrom(c, aliveIDs, "busy-node")
	busy := c.IntN(2, "busy") == 0
	if !ok {
		return Op{Desc: "noop", Event: func(s vcluster.State) (vcluster.State, error) { return s, nil }}
	}
	return Op{Desc: fmt.Sprintf("busy %s=%v", id, busy), Event: func(s vcluster.State) (vcluster.State, error) { return s.SetNode(id, true, busy) }}
}

func (w *World) genDetached(c Chooser, s vcluster.State, nodes []string) Op {
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(s.Logical)) {
		if s.Logical[id].Kind == vcluster.Indivisible {
			ids = append(ids, id)
		}
	}
	ids = append(ids, slices.Sorted(maps.Keys(s.Jobs))...)
	id, ok := pickFrom(c, ids, "detached-id")
	n := c.IntN(3, "detached") / 2
	if !ok {
		return Op{Desc: "noop", Event: func(s vcluster.State) (vcluster.State, error) { return s, nil }}
	}
	return Op{Desc: fmt.Sprintf("detached %s=%d", id, n), Event: func(s vcluster.State) (vcluster.State, error) { return s.SetDetached(id, n) }}
}

func (w *World) genJobDead(c Chooser, s vcluster.State, nodes []string) Op {
	id, ok := pickFrom(c, slices.Sorted(maps.Keys(s.Jobs)), "dead-job")
	if !ok {
		return Op{Desc: "noop", Event: func(s vcluster.State) (vcluster.State, error) { return s, nil }}
	}
	return Op{Desc: "job dead " + id, Event: func(s vcluster.State) (vcluster.State, error) { return s.SetJobDead(id, true) }}
}

// Run performs o on s the plain way: an event as it is, a plan applied unless
// it is refused or its input invalid (then s is kept).
func Run(s vcluster.State, o Op) (vcluster.State, error) {
	if o.Event != nil {
		return o.Event(s)
	}
	p, err := o.Plan(s)
	if err != nil || p.Refused() {
		return s, nil
	}
	return s.Next(p)
}

// Build draws a state by 0..maxOps random operations from a primary of
// 0..maxNodes alive nodes over 1..6 templates, passing each step through step
// (Run when nil), and returns it with the World the operations were drawn in.
// A step error fails t.
func Build(t *rapid.T, maxNodes, maxOps int, step func(vcluster.State, Op) (vcluster.State, error)) (vcluster.State, *World) {
	if step == nil {
		step = Run
	}
	w := &World{}
	for i := range rapid.IntRange(1, 6).Draw(t, "templates") {
		w.Templates = append(w.Templates, fmt.Sprintf("t%d", i))
	}
	var nodes []vcluster.Node
	for i := range rapid.IntRange(0, maxNodes).Draw(t, "nodes") {
		nodes = append(nodes, vcluster.Node{ID: fmt.Sprintf("n%03d", i), Hostname: fmt.Sprintf("h%d", i), Template: w.Templates[i%len(w.Templates)], Alive: true})
	}
	s, err := vcluster.NewState(nodes)
	if err != nil {
		t.Fatal(err)
	}
	c := RapidChooser(t)
	for range rapid.IntRange(0, maxOps).Draw(t, "ops") {
		o := w.Op(c, s)
		if s, err = step(s, o); err != nil {
			t.Fatal(err)
		}
	}
	return s, w
}

// State draws a state as Build does with Run.
func State(maxNodes, maxOps int) *rapid.Generator[vcluster.State] {
	return rapid.Custom(func(t *rapid.T) vcluster.State {
		s, _ := Build(t, maxNodes, maxOps, nil)
		return s
	})
}

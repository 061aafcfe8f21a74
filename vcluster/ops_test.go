package vcluster_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"

	"pgregory.net/rapid"

	"github.com/plancore/plancore"
	"github.com/plancore/plancore/vcluster"
)

// chooser draws the choices of a random operation: from rapid in
// properties, from a seeded generator in the long run.
type chooser interface {
	intn(n int, label string) int
}

type rapidChooser struct{ t *rapid.T }

func (c rapidChooser) intn(n int, label string) int { return rapid.IntRange(0, n-1).Draw(c.t, label) }

type seededChooser struct{ r *rand.Rand }

func (c seededChooser) intn(n int, _ string) int { return c.r.IntN(n) }

// op is one random operation: a plan, or a node or cluster event.
type op struct {
	desc string
	// plan is set for planning operations.
	plan func(s vcluster.State) (vcluster.Plan, error)
	// event is set for events, which write nothing.
	event func(s vcluster.State) (vcluster.State, error)
	// target is the logical cluster whose revision a successful plan may
	// change (create/update and remove-nodes only).
	target string
	// replenish holds the options of a replenish operation.
	replenish *vcluster.Options
	// req is set for create/update operations.
	req *vcluster.Request
}

var logicalIDs = []string{"a", "b", "c", "d"}
var jobNames = []string{"j1", "j2", "j3"}

// world tracks what the generator needs between operations.
type world struct {
	templates []string
	rev       uint64
	joined    int
}

func (w *world) nextRev(c chooser) uint64 {
	// Revisions from the caller: usually increasing, sometimes behind.
	if c.intn(8, "rev-behind") == 0 {
		return uint64(c.intn(3, "old-rev"))
	}
	w.rev += uint64(1 + c.intn(3, "rev-step"))
	return w.rev
}

func sortedNodes(s vcluster.State) []string { return s.Nodes.IDs() }

func pickFrom[T any](c chooser, xs []T, label string) (T, bool) {
	var zero T
	if len(xs) == 0 {
		return zero, false
	}
	return xs[c.intn(len(xs), label)], true
}

// genOp draws one random operation on s.
func (w *world) genOp(c chooser, s vcluster.State) op {
	nodes := sortedNodes(s)
	switch k := c.intn(20, "op"); {
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
func (w *world) replicas(c chooser, maxCount int) vcluster.ReplicaSet {
	rs := vcluster.ReplicaSet{}
	for _, t := range w.templates {
		switch c.intn(4, "template-use") {
		case 0:
		case 1:
			rs[t] = 0
		default:
			rs[t] = c.intn(maxCount+1, "count")
		}
	}
	return rs
}

func (w *world) genCreate(c chooser, s vcluster.State, nodes []string) op {
	id := logicalIDs[c.intn(len(logicalIDs), "id")]
	req := vcluster.Request{ID: id, Divisible: c.intn(2, "divisible") == 0, ReplicaSets: w.replicas(c, len(nodes)/max(1, len(w.templates))+2)}
	if cur, ok := s.Logical[id]; ok {
		req.Revision = cur.Revision
		req.Divisible = cur.Kind == vcluster.Divisible
		if c.intn(10, "stale") == 0 {
			req.Revision++
		}
		if c.intn(10, "flip") == 0 {
			req.Divisible = !req.Divisible
		}
	}
	if c.intn(5, "prefer") == 0 && len(nodes) > 0 {
		for range 3 {
			req.Prefer = append(req.Prefer, nodes[c.intn(len(nodes), "prefer-node")])
		}
	}
	rev := w.nextRev(c)
	return op{desc: fmt.Sprintf("create/update %s divisible=%v %v rev %d→%d prefer %v", id, req.Divisible, req.ReplicaSets, req.Revision, rev, req.Prefer),
		plan: func(s vcluster.State) (vcluster.Plan, error) {
			return vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: req, Revision: rev}, vcluster.Options{})
		}, target: id, req: &req}
}

func (w *world) genJob(c chooser, s vcluster.State, nodes []string) op {
	parents := append([]string{vcluster.PrimaryID}, slices.Sorted(maps.Keys(s.Logical))...)
	parent, _ := pickFrom(c, parents, "parent")
	// Jobs ask for few nodes of few templates, so most fit.
	rs := vcluster.ReplicaSet{}
	for _, t := range w.templates {
		if c.intn(3, "job-template-use") == 0 {
			rs[t] = c.intn(3, "job-count")
		}
	}
	req := vcluster.JobRequest{Parent: parent, Job: jobNames[c.intn(len(jobNames), "job")], ReplicaSets: rs}
	rev := w.nextRev(c)
	return op{desc: fmt.Sprintf("create job %s %v", vcluster.JobID(req.Parent, req.Job), req.ReplicaSets),
		plan: func(s vcluster.State) (vcluster.Plan, error) {
			return vcluster.PlanCreateJobCluster(vcluster.CreateJobClusterInput{State: s, Request: req, Revision: rev}, vcluster.Options{})
		}}
}

func (w *world) genRemove(c chooser, s vcluster.State, nodes []string) op {
	ids := append(slices.Sorted(maps.Keys(s.Logical)), slices.Sorted(maps.Keys(s.Jobs))...)
	ids = append(ids, "zz", "zz##j")
	id, _ := pickFrom(c, ids, "remove-id")
	return op{desc: "remove " + id, plan: func(s vcluster.State) (vcluster.Plan, error) {
		return vcluster.PlanRemove(vcluster.RemoveInput{State: s, ID: id}, vcluster.Options{})
	}}
}

func (w *world) genRemoveNodes(c chooser, s vcluster.State, nodes []string) op {
	id := logicalIDs[c.intn(len(logicalIDs), "id")]
	var ids []string
	members := s.Members(id)
	for range 1 + c.intn(3, "how-many") {
		if len(members) > 0 && c.intn(4, "foreign") != 0 {
			ids = append(ids, members[c.intn(len(members), "member")])
		} else if len(nodes) > 0 {
			ids = append(ids, nodes[c.intn(len(nodes), "node")])
		}
	}
	rev := w.nextRev(c)
	return op{desc: fmt.Sprintf("remove nodes %s %v", id, ids), target: id,
		plan: func(s vcluster.State) (vcluster.Plan, error) {
			return vcluster.PlanRemoveNodes(vcluster.RemoveNodesInput{State: s, ID: id, Nodes: ids, Revision: rev}, vcluster.Options{})
		}}
}

func (w *world) genReplenish(c chooser, s vcluster.State, nodes []string) op {
	opts := vcluster.Options{}
	switch c.intn(4, "cap") {
	case 0:
		opts.MaxSwaps = 1 + c.intn(4, "max-swaps")
	case 1:
		opts.MaxSwapsPercent = 1 + c.intn(100, "pct")
	}
	return op{desc: "replenish " + opts.String(), replenish: &opts,
		plan: func(s vcluster.State) (vcluster.Plan, error) {
			return vcluster.PlanReplenish(vcluster.ReplenishInput{State: s}, opts)
		}}
}

func (w *world) genGC(c chooser, s vcluster.State, nodes []string) op {
	return op{desc: "gc", plan: func(s vcluster.State) (vcluster.Plan, error) {
		return vcluster.PlanGC(vcluster.GCInput{State: s}, vcluster.Options{})
	}}
}

func (w *world) genKill(c chooser, s vcluster.State, nodes []string) op {
	var aliveIDs []string
	for _, id := range nodes {
		if s.Nodes.Node(id).Alive {
			aliveIDs = append(aliveIDs, id)
		}
	}
	id, ok := pickFrom(c, aliveIDs, "victim")
	if !ok {
		return op{desc: "noop", event: func(s vcluster.State) (vcluster.State, error) { return s, nil }}
	}
	return op{desc: "kill " + id, event: func(s vcluster.State) (vcluster.State, error) { return s.SetNode(id, false, false) }}
}

func (w *world) genJoin(c chooser, s vcluster.State, nodes []string) op {
	w.joined++
	n := vcluster.Node{ID: fmt.Sprintf("new%04d", w.joined), Hostname: "joined", Template: w.templates[c.intn(len(w.templates), "tpl")], Alive: true}
	return op{desc: "join " + n.ID, event: func(s vcluster.State) (vcluster.State, error) { return s.Join(n) }}
}

func (w *world) genBusy(c chooser, s vcluster.State, nodes []string) op {
	var aliveIDs []string
	for _, id := range nodes {
		if s.Nodes.Node(id).Alive {
			aliveIDs = append(aliveIDs, id)
		}
	}
	id, ok := pickFrom(c, aliveIDs, "busy-node")
	busy := c.intn(2, "busy") == 0
	if !ok {
		return op{desc: "noop", event: func(s vcluster.State) (vcluster.State, error) { return s, nil }}
	}
	return op{desc: fmt.Sprintf("busy %s=%v", id, busy), event: func(s vcluster.State) (vcluster.State, error) { return s.SetNode(id, true, busy) }}
}

func (w *world) genDetached(c chooser, s vcluster.State, nodes []string) op {
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(s.Logical)) {
		if s.Logical[id].Kind == vcluster.Indivisible {
			ids = append(ids, id)
		}
	}
	ids = append(ids, slices.Sorted(maps.Keys(s.Jobs))...)
	id, ok := pickFrom(c, ids, "detached-id")
	n := c.intn(3, "detached") / 2
	if !ok {
		return op{desc: "noop", event: func(s vcluster.State) (vcluster.State, error) { return s, nil }}
	}
	return op{desc: fmt.Sprintf("detached %s=%d", id, n), event: func(s vcluster.State) (vcluster.State, error) { return s.SetDetached(id, n) }}
}

func (w *world) genJobDead(c chooser, s vcluster.State, nodes []string) op {
	id, ok := pickFrom(c, slices.Sorted(maps.Keys(s.Jobs)), "dead-job")
	if !ok {
		return op{desc: "noop", event: func(s vcluster.State) (vcluster.State, error) { return s, nil }}
	}
	return op{desc: "job dead " + id, event: func(s vcluster.State) (vcluster.State, error) { return s.SetJobDead(id, true) }}
}

// checkOp runs one operation on s with every per-step invariant check and
// returns the next state.
func checkOp(s vcluster.State, o op) (vcluster.State, vcluster.Plan, error) {
	before := s.Clone()
	if o.event != nil {
		next, err := o.event(s)
		if err != nil {
			return vcluster.State{}, vcluster.Plan{}, fmt.Errorf("%s: event failed: %w", o.desc, err)
		}
		if !reflect.DeepEqual(before, s) {
			return vcluster.State{}, vcluster.Plan{}, fmt.Errorf("%s: event modified its input", o.desc)
		}
		if err := checkInvariants(next); err != nil {
			return vcluster.State{}, vcluster.Plan{}, fmt.Errorf("%s: %w", o.desc, err)
		}
		return next, vcluster.Plan{}, nil
	}
	p, err := o.plan(s)
	// Planning leaves its input unchanged.
	if !reflect.DeepEqual(before, s) {
		return vcluster.State{}, p, fmt.Errorf("%s: planning modified its input", o.desc)
	}
	// Determinism: the same input (rebuilt maps, so another iteration order) gives the
	// same plan and the same error.
	p2, err2 := o.plan(s.Clone())
	if !reflect.DeepEqual(p, p2) || p.String() != p2.String() || fmt.Sprint(err) != fmt.Sprint(err2) {
		return vcluster.State{}, p, fmt.Errorf("%s: nondeterministic:\n%s\n%v\nvs\n%s\n%v", o.desc, p, err, p2, err2)
	}
	if err != nil {
		// Refusals by error are invalid input only, naming each field.
		var inv *plancore.InvalidError
		if !errors.As(err, &inv) || !errors.Is(err, vcluster.ErrInvalidInput) || len(inv.Errors) == 0 {
			return vcluster.State{}, p, fmt.Errorf("%s: error %v is not an invalid-input error", o.desc, err)
		}
		if !p.Empty() || p.Refused() {
			return vcluster.State{}, p, fmt.Errorf("%s: invalid input with a plan", o.desc)
		}
		return s, p, nil
	}
	if p.Refusal != nil {
		// Refused plans are coded and empty, and their recommendation works.
		switch p.Refusal.Reason.Code {
		case vcluster.ReasonOutOfResource, vcluster.ReasonUnsafeToRemove:
		default:
			return vcluster.State{}, p, fmt.Errorf("%s: refusal code %q", o.desc, p.Refusal.Reason.Code)
		}
		if !p.Empty() || !reflect.DeepEqual(p.After, s) {
			return vcluster.State{}, p, fmt.Errorf("%s: refused with a non-empty plan or another state", o.desc)
		}
		if err := checkRecommend(s, o, p.Refusal); err != nil {
			return vcluster.State{}, p, err
		}
		return s, p, nil
	}
	next, err := s.Apply(p)
	if err != nil {
		return vcluster.State{}, p, fmt.Errorf("%s: apply: %w\n%s", o.desc, err, p)
	}
	if !reflect.DeepEqual(before, s) {
		return vcluster.State{}, p, fmt.Errorf("%s: Apply modified its input", o.desc)
	}
	if err := checkInvariants(next); err != nil {
		return vcluster.State{}, p, fmt.Errorf("%s: leaf/division invariants: %w\n%s", o.desc, err, p)
	}
	if err := checkPlanRules(s, next, p, o); err != nil {
		return vcluster.State{}, p, fmt.Errorf("%s: %w\n%s", o.desc, err, p)
	}
	if o.replenish != nil {
		if err := checkReplenished(s, next, *o.replenish == (vcluster.Options{})); err != nil {
			return vcluster.State{}, p, fmt.Errorf("%s: replenishment: %w\n%s", o.desc, err, p)
		}
	}
	return next, p, nil
}

// checkPlanRules checks busy safety, dead-first scale-down, the
// flush/publish rules and the revision rules for a successful plan.
func checkPlanRules(s, next vcluster.State, p vcluster.Plan, o op) error {
	for _, check := range []func() error{
		func() error { return checkReasons(p) },
		func() error { return checkBusySafety(s, p) },
		func() error { return checkDeadFirst(s, p, o) },
		func() error { return checkFlushPublish(s, next, p) },
		func() error { return checkRevisionRules(s, next, p, o) },
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkReasons: every action (move, create, remove, purge, revision) says
// why it happens, with a code. (Dropping the Reason of any planner's moves
// or revisions makes it fail.)
func checkReasons(p vcluster.Plan) error {
	var reasons []vcluster.Reason
	for _, m := range p.Moves {
		reasons = append(reasons, m.Reason)
	}
	for _, c := range p.Creates {
		reasons = append(reasons, c.Reason)
	}
	for _, r := range p.Removes {
		reasons = append(reasons, r.Reason)
	}
	for _, n := range p.Purge {
		reasons = append(reasons, n.Reason)
	}
	for _, r := range p.Revisions {
		reasons = append(reasons, r.Reason)
	}
	for i, r := range reasons {
		if r.Code == "" || r.Message == "" {
			return fmt.Errorf("reasons: action %d of the plan has no reason:\n%s", i, p)
		}
	}
	return nil
}

// checkBusySafety: no plan moves an alive busy node out of an indivisible
// cluster, nor a node out of a job bucket except when removing that job
// cluster or swapping out a dead node.
func checkBusySafety(s vcluster.State, p vcluster.Plan) error {
	for _, m := range p.Moves {
		n := s.Nodes.Node(m.Node)
		from, _ := s.Cluster(m.From.Cluster)
		if m.From.Bucket != vcluster.Undivided {
			if n.Alive && !p.Removed(m.From.Bucket) {
				return fmt.Errorf("busy safety: alive node %s moved out of job bucket %s", m.Node, m.From)
			}
			if n.Alive && n.Busy {
				return fmt.Errorf("busy safety: busy node %s left job cluster %s", m.Node, m.From.Bucket)
			}
		}
		if from.Kind == vcluster.Indivisible && n.Alive && n.Busy && m.To.Cluster != m.From.Cluster {
			return fmt.Errorf("busy safety: busy node %s left indivisible %s", m.Node, m.From.Cluster)
		}
	}
	return nil
}

// checkDeadFirst: a scale-down by k of a template whose undivided bucket
// holds at least k dead nodes returns only dead nodes.
func checkDeadFirst(s vcluster.State, p vcluster.Plan, o op) error {
	if o.req == nil || len(o.req.Prefer) > 0 {
		return nil
	}
	c := s.Logical[o.req.ID]
	{
		for tpl, byBucket := range c.Buckets {
			dead := 0
			for _, id := range byBucket[vcluster.Undivided] {
				if !s.Nodes.Node(id).Alive {
					dead++
				}
			}
			removed, removedAlive := 0, 0
			for _, m := range p.Moves {
				if m.Template == tpl && m.From.Cluster == o.req.ID {
					removed++
					if s.Nodes.Node(m.Node).Alive {
						removedAlive++
					}
				}
			}
			if removed <= dead && removedAlive > 0 {
				return fmt.Errorf("dead first: scale-down of %s/%s returned %d alive nodes while %d dead ones were there", o.req.ID, tpl, removedAlive, dead)
			}
		}
	}
	return nil
}

// checkFlushPublish: the primary is never flushed, every published cluster
// is flushed and indivisible, and every changed record is flushed.
func checkFlushPublish(s, next vcluster.State, p vcluster.Plan) error {
	if slices.Contains(p.Flush, vcluster.PrimaryID) {
		return fmt.Errorf("flush/publish: the primary is flushed")
	}
	for _, id := range p.Publish {
		if !slices.Contains(p.Flush, id) {
			return fmt.Errorf("flush/publish: %s published without a flush", id)
		}
		if c, ok := s.Cluster(id); ok && c.Kind == vcluster.Divisible {
			return fmt.Errorf("flush/publish: divisible %s published", id)
		}
		if c, ok := next.Cluster(id); ok && c.Kind == vcluster.Divisible {
			return fmt.Errorf("flush/publish: divisible %s published", id)
		}
	}
	for _, id := range clusterIDs(s, next) {
		a, okA := vcluster.RecordOf(s, id)
		b, okB := vcluster.RecordOf(next, id)
		if (okA != okB || !reflect.DeepEqual(a, b)) && !slices.Contains(p.Flush, id) {
			return fmt.Errorf("flush/publish: record of %s changed but it is not flushed", id)
		}
	}
	return nil
}

// checkRevisionRules: only the target of a create, update or remove-nodes
// changes revision, strictly upwards; job revisions never change.
func checkRevisionRules(s, next vcluster.State, p vcluster.Plan, o op) error {
	for _, id := range clusterIDs(s, next) {
		a, okA := vcluster.RecordOf(s, id)
		b, okB := vcluster.RecordOf(next, id)
		if okA && okB && !vcluster.IsJobID(id) && a.Revision != b.Revision {
			if (o.target != id && o.target != "*") || b.Revision <= a.Revision {
				return fmt.Errorf("revisions: revision of %s changed %d → %d", id, a.Revision, b.Revision)
			}
		}
		if okA && okB && vcluster.IsJobID(id) && a.Revision != b.Revision {
			return fmt.Errorf("revisions: job revision of %s changed", id)
		}
		if o.req != nil && o.req.ID == id && okB && okA && b.Revision <= a.Revision {
			return fmt.Errorf("revisions: update of %s did not increase the revision", id)
		}
	}
	return nil
}

// clusterIDs returns the logical and job cluster ids of both states, sorted.
func clusterIDs(states ...vcluster.State) []string {
	ids := map[string]bool{}
	for _, st := range states {
		for id := range st.Logical {
			ids[id] = true
		}
		for id := range st.Jobs {
			ids[id] = true
		}
	}
	return slices.Sorted(maps.Keys(ids))
}

// checkReplenished checks the replenishment rules after Apply(s, PlanReplenish(s)).
func checkReplenished(s, next vcluster.State, uncapped bool) error {
	for id := range s.Logical {
		if !reflect.DeepEqual(s.ReplicaSet(id), next.ReplicaSet(id)) {
			return fmt.Errorf("replica set of %s changed: %v → %v", id, s.ReplicaSet(id), next.ReplicaSet(id))
		}
	}
	for id := range s.Jobs {
		if !reflect.DeepEqual(s.ReplicaSet(id), next.ReplicaSet(id)) {
			return fmt.Errorf("replica set of %s changed", id)
		}
	}
	for t, byBucket := range next.Primary.Buckets {
		for _, id := range byBucket[vcluster.Undivided] {
			if !next.Nodes.Node(id).Alive {
				return fmt.Errorf("dead %s (%s) left in the primary's undivided bucket", id, t)
			}
		}
	}
	if !uncapped {
		return nil
	}
	return replaceableDead(next)
}

// replaceableDead reports a dead node whose provider still has an alive
// node of its template undivided.
func replaceableDead(s vcluster.State) error {
	hasAlive := func(holder, t string) bool {
		c, _ := s.Cluster(holder)
		for _, id := range c.Buckets[t][vcluster.Undivided] {
			if s.Nodes.Node(id).Alive {
				return true
			}
		}
		return false
	}
	for id, c := range s.Logical {
		for t, byBucket := range c.Buckets {
			for b, ids := range byBucket {
				for _, n := range ids {
					if s.Nodes.Node(n).Alive {
						continue
					}
					if hasAlive(vcluster.PrimaryID, t) {
						return fmt.Errorf("dead %s in %s/%s while the primary has an alive %s", n, id, b, t)
					}
					if b != vcluster.Undivided && hasAlive(id, t) {
						return fmt.Errorf("dead %s in job %s while its parent has an alive undivided %s", n, b, t)
					}
				}
			}
		}
	}
	for t, byBucket := range s.Primary.Buckets {
		for b, ids := range byBucket {
			for _, n := range ids {
				if b != vcluster.Undivided && !s.Nodes.Node(n).Alive && hasAlive(vcluster.PrimaryID, t) {
					return fmt.Errorf("dead %s in job %s while the primary has an alive %s", n, b, t)
				}
			}
		}
	}
	return nil
}

// checkRecommend checks the second half of all-or-nothing: for an add-only or
// remove-only request, the request rebuilt from Recommend succeeds.
func checkRecommend(s vcluster.State, o op, e *vcluster.Refusal) error {
	if o.req == nil || (e.Reason.Code != vcluster.ReasonOutOfResource && e.Reason.Code != vcluster.ReasonUnsafeToRemove) {
		return nil
	}
	cur := s.ReplicaSet(o.req.ID)
	adds, removes := false, false
	for t, n := range o.req.ReplicaSets {
		adds = adds || n > cur[t]
	}
	for t, n := range cur {
		removes = removes || n > o.req.ReplicaSets[t]
	}
	if adds && removes {
		return nil
	}
	rebuilt := *o.req
	rebuilt.ReplicaSets = vcluster.ReplicaSet{}
	maps.Copy(rebuilt.ReplicaSets, o.req.ReplicaSets)
	for t, n := range e.Recommend {
		if e.Reason.Code == vcluster.ReasonOutOfResource {
			rebuilt.ReplicaSets[t] = cur[t] + n
		} else {
			rebuilt.ReplicaSets[t] = cur[t] - n
		}
	}
	if p, err := vcluster.PlanCreateOrUpdate(vcluster.CreateOrUpdateInput{State: s, Request: rebuilt, Revision: 1 << 40}, vcluster.Options{}); err != nil || p.Refused() {
		return fmt.Errorf("%s: all-or-nothing: the request rebuilt from Recommend %v fails: %v %v", o.desc, e.Recommend, err, p.Refusal)
	}
	return nil
}

// genState builds a state by a random operation sequence from a primary of
// 0..maxNodes nodes over 1..6 templates, checking every step.
func genState(t *rapid.T, maxNodes, maxOps int) (vcluster.State, *world) {
	w := &world{}
	for i := range rapid.IntRange(1, 6).Draw(t, "templates") {
		w.templates = append(w.templates, fmt.Sprintf("t%d", i))
	}
	var nodes []vcluster.Node
	for i := range rapid.IntRange(0, maxNodes).Draw(t, "nodes") {
		nodes = append(nodes, vcluster.Node{ID: fmt.Sprintf("n%03d", i), Hostname: fmt.Sprintf("h%d", i), Template: w.templates[i%len(w.templates)], Alive: true})
	}
	s, err := vcluster.NewState(nodes)
	if err != nil {
		t.Fatal(err)
	}
	c := rapidChooser{t}
	for range rapid.IntRange(0, maxOps).Draw(t, "ops") {
		o := w.genOp(c, s)
		s, _, err = checkOp(s, o)
		if err != nil {
			t.Fatal(err)
		}
	}
	return s, w
}

package vcluster

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds limits a cluster's node count of one template. Max 0 means no upper
// bound.
type Bounds struct {
	Min, Max int
}

// Limits are the autoscaler's bounds (after ant-ray #579): per
// cluster and template, and a reserve of undivided alive nodes the primary
// keeps. The zero value sets no limit, so callers that set none get the
// anchor's behaviour.
type Limits struct {
	// Clusters maps a logical cluster id to its bounds per template.
	Clusters map[string]map[string]Bounds
	// MinFree is the number of alive undivided nodes per template the primary
	// keeps when nodes are added to logical clusters (Kueue's lendingLimit,
	// the other way round). Replenishment may dip into it: healing first.
	MinFree ReplicaSet
	// MaxFree is, per template present in it, the number of idle alive
	// undivided nodes above which PlanScale offers primary nodes for release.
	MaxFree ReplicaSet
}

// Validate reports every negative or crossed limit, naming the field, in an
// error wrapping ErrInvalidInput.
func (l Limits) Validate() error { return invalidInput(l.validate(field.NewPath("limits"))) }

func (l Limits) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, id := range slices.Sorted(maps.Keys(l.Clusters)) {
		for _, t := range slices.Sorted(maps.Keys(l.Clusters[id])) {
			b := l.Clusters[id][t]
			if b.Min < 0 || b.Max < 0 || (b.Max > 0 && b.Min > b.Max) {
				errs = append(errs, invalid(p.Child("clusters").Key(id).Key(t), fmt.Sprintf("[%d, %d]", b.Min, b.Max), "Invalid limits, bounds [%d, %d] of template %s of virtual cluster %s are negative or crossed", b.Min, b.Max, t, id))
			}
		}
	}
	for _, t := range slices.Sorted(maps.Keys(l.MinFree)) {
		if l.MinFree[t] < 0 {
			errs = append(errs, invalid(p.Child("minFree").Key(t), l.MinFree[t], "Invalid limits, MinFree(%d) of template %s must >= 0", l.MinFree[t], t))
		} else if max, ok := l.MaxFree[t]; ok && max >= 0 && max < l.MinFree[t] {
			errs = append(errs, invalid(p.Child("maxFree").Key(t), max, "Invalid limits, MaxFree(%d) of template %s is below MinFree(%d)", max, t, l.MinFree[t]))
		}
	}
	for _, t := range slices.Sorted(maps.Keys(l.MaxFree)) {
		if l.MaxFree[t] < 0 {
			errs = append(errs, invalid(p.Child("maxFree").Key(t), l.MaxFree[t], "Invalid limits, MaxFree(%d) of template %s must >= 0", l.MaxFree[t], t))
		}
	}
	return errs
}

// checkBounds refuses a request whose counts leave the cluster's bounds.
func (l Limits) checkBounds(p *field.Path, id string, rs ReplicaSet) field.ErrorList {
	var errs field.ErrorList
	bounds := l.Clusters[id]
	for _, t := range slices.Sorted(maps.Keys(bounds)) {
		b, n := bounds[t], rs[t]
		if n < b.Min || (b.Max > 0 && n > b.Max) {
			errs = append(errs, invalid(p.Key(t), n, "Invalid request, replicas(%d) of template %s is outside the bounds [%d, %d] of virtual cluster %s", n, t, b.Min, b.Max, id))
		}
	}
	return errs
}

// clamp returns demand limited to the bounds of template t of cluster id.
func (l Limits) clamp(id, t string, demand int) int {
	b, ok := l.Clusters[id][t]
	if !ok {
		return max(demand, 0)
	}
	n := max(demand, b.Min, 0)
	if b.Max > 0 {
		n = min(n, b.Max)
	}
	return n
}

// ScaleRequest is the autoscaler's demand.
type ScaleRequest struct {
	// Demand is, per logical cluster and template, the node count the
	// caller's pending work asks for. Templates a cluster has but Demand does
	// not name keep their current count.
	Demand map[string]ReplicaSet
	// Limits clamp the demand and keep the primary's reserve.
	Limits Limits
	// MaxMoves caps the node moves of the plan (a disruption budget); 0
	// means no cap. A cut plan sets Truncated.
	MaxMoves int
}

// ScaleInput is everything PlanScale reads.
type ScaleInput struct {
	// State is the current hierarchy.
	State State
	// Request is the demand.
	Request ScaleRequest
	// Revision is the caller's revision for this change; every resized
	// cluster gets max(Revision, current+1).
	Revision uint64
}

// Validate reports every fault of the input, in an error wrapping
// ErrInvalidInput (ErrNotFound when only unknown clusters are at fault).
func (in ScaleInput) Validate() error { return invalidInput(in.validate()) }

func (in ScaleInput) validate() field.ErrorList {
	errs := in.State.validate(statePath)
	p := field.NewPath("request")
	req := in.Request
	errs = append(errs, req.Limits.validate(p.Child("limits"))...)
	if req.MaxMoves < 0 {
		errs = append(errs, invalid(p.Child("maxMoves"), req.MaxMoves, "Invalid request, MaxMoves(%d) must >= 0", req.MaxMoves))
	}
	for _, id := range slices.Sorted(maps.Keys(req.Demand)) {
		dp := p.Child("demand").Key(id)
		c, ok := in.State.Logical[id]
		if !ok {
			errs = append(errs, notFound(dp, id, "The logical cluster %s does not exist.", id))
			continue
		}
		errs = append(errs, checkReplicaSets(dp, id, req.Demand[id])...)
		errs = append(errs, checkRevisionLeft(dp, c)...)
	}
	return errs
}

// PlanScale plans resizing every logical cluster named in the demand to its
// demand clamped to its bounds: first every shrink, then every growth, each
// in cluster id order, so nodes one cluster returns can serve another. Each
// cluster is planned like an update (PlanCreateOrUpdate, with the primary's
// MinFree reserve kept), but best effort: what cannot be added is launched
// instead (Plan.Launch), and busy nodes that cannot leave stay. Idle primary
// nodes above MaxFree are offered in Plan.Release. Every resized cluster
// gets revision max(in.Revision, current+1). A demand for an unknown or job
// cluster is an error wrapping ErrNotFound.
func PlanScale(in ScaleInput) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	sc := scaler{req: in.Request, rev: in.Revision, cur: in.State, budget: in.Request.MaxMoves,
		out: Plan{Launch: ReplicaSet{}}, revisions: map[string]Revision{}}
	// Two passes, shrinking first, so nodes one cluster gives back can grow
	// another in the same plan.
	for _, grow := range []bool{false, true} {
		for _, id := range slices.Sorted(maps.Keys(sc.req.Demand)) {
			if err := sc.resize(id, grow); err != nil {
				return Plan{}, err
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(sc.revisions)) {
		sc.out.Revisions = append(sc.out.Revisions, sc.revisions[id])
	}
	sc.out.Flush = flushOrder(sc.out.Flush)
	sc.out.Publish = flushOrder(sc.out.Publish)
	sc.launchUnreplaceable()
	sc.release()
	return finish(in.State, sc.out)
}

// scaler carries PlanScale's state from one cluster to the next.
type scaler struct {
	req       ScaleRequest
	rev       uint64
	cur       State
	budget    int
	out       Plan
	revisions map[string]Revision
}

// resize plans one cluster's shrink (grow false) or growth (grow true).
func (sc *scaler) resize(id string, grow bool) error {
	c := sc.cur.Logical[id]
	current := sc.cur.ReplicaSet(id)
	target := sc.target(id, current)
	sc.bestEffort(c, target, current, grow)
	sc.applyBudget(target, current)
	changed := false
	for t, n := range target {
		changed = changed || n != current[t]
	}
	if !changed {
		return nil
	}
	// The target is already within bounds as far as nodes allow, so only
	// the reserve is passed on.
	p, err := PlanCreateOrUpdate(CreateOrUpdateInput{State: sc.cur, Revision: sc.rev, Request: Request{ID: id, Divisible: c.Kind == Divisible,
		ReplicaSets: target, Revision: c.Revision, Limits: Limits{MinFree: sc.req.Limits.MinFree}}})

	if err != nil {
		return err
	}
	if p.Refusal != nil {
		return fmt.Errorf("%w: best-effort resize of %s refused: %s", ErrPlanMismatch, id, p.Refusal)
	}
	sc.cur = p.After
	sc.out.Moves = append(sc.out.Moves, p.Moves...)
	for _, r := range p.Revisions {
		sc.revisions[r.Cluster] = r
	}
	sc.out.Flush = append(sc.out.Flush, p.Flush...)
	sc.out.Publish = append(sc.out.Publish, p.Publish...)
	return nil
}

// target returns the demand of cluster id clamped to its bounds, with the
// templates the demand does not name kept at their current count.
func (sc *scaler) target(id string, current ReplicaSet) ReplicaSet {
	target := maps.Clone(current)
	for t, n := range sc.req.Demand[id] {
		target[t] = sc.req.Limits.clamp(id, t, n)
	}
	for t := range sc.req.Limits.Clusters[id] {
		target[t] = sc.req.Limits.clamp(id, t, target[t])
	}
	return target
}

// bestEffort shrinks the delta of each template to what can move in this
// pass, and adds the shortfall of additions to Launch.
func (sc *scaler) bestEffort(c Cluster, target, current ReplicaSet, grow bool) {
	minFree := sc.req.Limits.MinFree
	for _, t := range slices.Sorted(maps.Keys(target)) {
		switch n := target[t]; {
		case n > current[t] && !grow, n < current[t] && grow:
			target[t] = current[t]
		case n > current[t]:
			avail := len(pick(sc.cur.Nodes, bucket(sc.cur.Primary, t, Undivided), satAdd(n-current[t], minFree[t]), alive, addRank, nil))
			can := min(n-current[t], max(0, avail-minFree[t]))
			sc.out.Launch[t] = satAdd(sc.out.Launch[t], n-current[t]-can)
			target[t] = current[t] + can
		case n < current[t]:
			eligible := anyNode
			if c.Kind == Indivisible {
				eligible = idleNode
			}
			can := len(pick(sc.cur.Nodes, bucket(c, t, Undivided), current[t]-n, eligible, removeRank, nil))
			target[t] = current[t] - can
		}
	}
}

// applyBudget trims the delta template by template to the move budget.
func (sc *scaler) applyBudget(target, current ReplicaSet) {
	if sc.req.MaxMoves == 0 {
		return
	}
	for _, t := range slices.Sorted(maps.Keys(target)) {
		d := target[t] - current[t]
		if d < 0 {
			d = -d
		}
		if d > sc.budget {
			sc.out.Truncated = true
			if target[t] > current[t] {
				target[t] = current[t] + sc.budget
			} else {
				target[t] = current[t] - sc.budget
			}
			d = sc.budget
		}
		sc.budget -= d
	}
}

// launchUnreplaceable adds to Launch the dead nodes no provider can replace.
func (sc *scaler) launchUnreplaceable() {
	if heal, err := PlanReplenish(ReplenishInput{State: sc.cur}, Options{}); err == nil {
		for _, u := range heal.Unreplaced {
			sc.out.Launch[u.Template] = satAdd(sc.out.Launch[u.Template], len(u.Nodes))
		}
	}
	for t, n := range sc.out.Launch {
		if n == 0 {
			delete(sc.out.Launch, t)
		}
	}
}

// release offers the idle alive primary nodes above MaxFree.
func (sc *scaler) release() {
	for _, t := range slices.Sorted(maps.Keys(sc.req.Limits.MaxFree)) {
		var idle []string
		for _, id := range bucket(sc.cur.Primary, t, Undivided) {
			if n := sc.cur.Nodes.Node(id); n.Alive && !n.Busy {
				idle = append(idle, id)
			}
		}
		if excess := len(idle) - sc.req.Limits.MaxFree[t]; excess > 0 {
			sc.out.Release = append(sc.out.Release, idle[:excess]...)
		}
	}
	slices.Sort(sc.out.Release)
}

func fmtIDs(ids []string) string {
	out := "["
	for i, id := range ids {
		if i > 0 {
			out += " "
		}
		out += id
	}
	return out + "]"
}

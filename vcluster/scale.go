package vcluster

import (
	"maps"
	"slices"
)

// Bounds limits a cluster's node count of one template. Max 0 means no upper
// bound.
type Bounds struct {
	Min, Max int
}

// Limits are the autoscaler's bounds (spec §3.2, after ant-ray #579): per
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

// Validate reports negative or crossed limits, naming the field.
func (l Limits) Validate() error {
	for _, id := range slices.Sorted(maps.Keys(l.Clusters)) {
		for _, t := range slices.Sorted(maps.Keys(l.Clusters[id])) {
			b := l.Clusters[id][t]
			if b.Min < 0 || b.Max < 0 || (b.Max > 0 && b.Min > b.Max) {
				return newError(InvalidArgument, "limits["+id+"]["+t+"]", "Invalid limits, bounds [%d, %d] of template %s of virtual cluster %s are negative or crossed", b.Min, b.Max, t, id)
			}
		}
	}
	for _, t := range slices.Sorted(maps.Keys(l.MinFree)) {
		if l.MinFree[t] < 0 {
			return newError(InvalidArgument, "MinFree["+t+"]", "Invalid limits, MinFree(%d) of template %s must >= 0", l.MinFree[t], t)
		}
		if max, ok := l.MaxFree[t]; ok && max < l.MinFree[t] {
			return newError(InvalidArgument, "MaxFree["+t+"]", "Invalid limits, MaxFree(%d) of template %s is below MinFree(%d)", max, t, l.MinFree[t])
		}
	}
	for _, t := range slices.Sorted(maps.Keys(l.MaxFree)) {
		if l.MaxFree[t] < 0 {
			return newError(InvalidArgument, "MaxFree["+t+"]", "Invalid limits, MaxFree(%d) of template %s must >= 0", l.MaxFree[t], t)
		}
	}
	return nil
}

// checkBounds refuses a request whose counts leave the cluster's bounds.
func (l Limits) checkBounds(id string, rs ReplicaSet) error {
	bounds := l.Clusters[id]
	for _, t := range slices.Sorted(maps.Keys(bounds)) {
		b, n := bounds[t], rs[t]
		if n < b.Min || (b.Max > 0 && n > b.Max) {
			return newError(InvalidArgument, "replica_sets["+t+"]", "Invalid request, replicas(%d) of template %s is outside the bounds [%d, %d] of virtual cluster %s", n, t, b.Min, b.Max, id)
		}
	}
	return nil
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

// ScaleRequest is the autoscaler's input to PlanScale.
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

// ScalePlan is PlanScale's outcome: the plan, and what the autoscaler should
// do about nodes.
type ScalePlan struct {
	Plan
	// Launch is, per template, how many nodes to start: additions the primary
	// could not supply plus dead nodes that cannot be replaced.
	Launch ReplicaSet
	// Release lists idle alive nodes of the primary's undivided bucket above
	// MaxFree, in ascending id order; the autoscaler may terminate them.
	Release []string
}

// PlanScale plans resizing every logical cluster named in req.Demand to its
// demand clamped to its bounds: first every shrink, then every growth, each
// in cluster id order, so nodes one cluster returns can serve another. Each cluster is planned like
// an update (PlanCreateOrUpdate, with the primary's MinFree reserve kept),
// but best effort: what cannot be added is launched instead, and busy nodes
// that cannot leave stay. Every resized cluster gets revision max(rev,
// current+1). A demand for an unknown or job cluster is NotFound.
func PlanScale(s State, req ScaleRequest, rev uint64) (ScalePlan, error) {
	if err := s.Validate(); err != nil {
		return ScalePlan{}, err
	}
	if err := req.Limits.Validate(); err != nil {
		return ScalePlan{}, err
	}
	if req.MaxMoves < 0 {
		return ScalePlan{}, newError(InvalidArgument, "MaxMoves", "Invalid request, MaxMoves(%d) must >= 0", req.MaxMoves)
	}
	out := ScalePlan{Launch: ReplicaSet{}}
	cur := s
	budget := req.MaxMoves
	for _, id := range slices.Sorted(maps.Keys(req.Demand)) {
		if _, ok := cur.Logical[id]; !ok {
			return ScalePlan{}, newError(NotFound, "demand", "The logical cluster %s does not exist.", id)
		}
		if err := checkReplicaSets(id, req.Demand[id]); err != nil {
			return ScalePlan{}, err
		}
	}
	// Two passes, shrinking first, so nodes one cluster gives back can grow
	// another in the same plan.
	revisions := map[string]Revision{}
	for _, grow := range []bool{false, true} {
		for _, id := range slices.Sorted(maps.Keys(req.Demand)) {
			c := cur.Logical[id]
			current := cur.ReplicaSet(id)
			target := ReplicaSet{}
			for t, n := range current {
				target[t] = n
			}
			for t, n := range req.Demand[id] {
				target[t] = req.Limits.clamp(id, t, n)
			}
			for t := range req.Limits.Clusters[id] {
				target[t] = req.Limits.clamp(id, t, target[t])
			}
			// Best effort: shrink the delta of each template to what can
			// move, and remember the shortfall of additions.
			for _, t := range slices.Sorted(maps.Keys(target)) {
				switch n := target[t]; {
				case n > current[t] && !grow, n < current[t] && grow:
					target[t] = current[t]
				case n > current[t]:
					avail := len(pick(cur.Nodes, bucket(cur.Primary, t, Undivided), n-current[t]+req.Limits.MinFree[t], alive, addRank, nil))
					can := min(n-current[t], max(0, avail-req.Limits.MinFree[t]))
					out.Launch[t] += n - current[t] - can
					target[t] = current[t] + can
				case n < current[t]:
					eligible := anyNode
					if c.Kind == Indivisible {
						eligible = idleNode
					}
					can := len(pick(cur.Nodes, bucket(c, t, Undivided), current[t]-n, eligible, removeRank, nil))
					target[t] = current[t] - can
				}
			}
			for _, t := range slices.Sorted(maps.Keys(target)) {
				// Honour the budget: trim the delta template by template.
				if req.MaxMoves == 0 {
					break
				}
				d := target[t] - current[t]
				if d < 0 {
					d = -d
				}
				if d > budget {
					out.Truncated = true
					if target[t] > current[t] {
						target[t] = current[t] + budget
					} else {
						target[t] = current[t] - budget
					}
					d = budget
				}
				budget -= d
			}
			changed := false
			for t, n := range target {
				changed = changed || n != current[t]
			}
			if !changed {
				continue
			}
			// The target is already within bounds as far as nodes allow, so
			// only the reserve is passed on.
			p, err := PlanCreateOrUpdate(cur, Request{ID: id, Divisible: c.Kind == Divisible, ReplicaSets: target, Revision: c.Revision, Limits: Limits{MinFree: req.Limits.MinFree}}, rev)
			if err != nil {
				return ScalePlan{}, err
			}
			next, err := cur.Apply(p)
			if err != nil {
				return ScalePlan{}, err
			}
			cur = next
			out.Moves = append(out.Moves, p.Moves...)
			for _, r := range p.Revisions {
				revisions[r.Cluster] = r
			}
			out.Flush = append(out.Flush, p.Flush...)
			out.Publish = append(out.Publish, p.Publish...)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(revisions)) {
		out.Revisions = append(out.Revisions, revisions[id])
	}
	out.Flush = flushOrder(out.Flush)
	out.Publish = flushOrder(out.Publish)

	// Dead nodes no provider can replace need new nodes too.
	if heal, err := PlanReplenish(cur, ReplenishOptions{}); err == nil {
		for _, u := range heal.Unreplaced {
			out.Launch[u.Template] += len(u.Nodes)
		}
	}
	for t, n := range out.Launch {
		if n == 0 {
			delete(out.Launch, t)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(req.Limits.MaxFree)) {
		var idle []string
		for _, id := range bucket(cur.Primary, t, Undivided) {
			if n := cur.Nodes[id]; n.Alive && !n.Busy {
				idle = append(idle, id)
			}
		}
		if excess := len(idle) - req.Limits.MaxFree[t]; excess > 0 {
			out.Release = append(out.Release, idle[:excess]...)
		}
	}
	slices.Sort(out.Release)
	return out, nil
}

// String renders the plan, then Launch and Release.
func (p ScalePlan) String() string {
	return p.Plan.String() + "launch " + p.Launch.String() + "\nrelease " + fmtIDs(p.Release) + "\n"
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

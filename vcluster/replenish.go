package vcluster

import (
	"cmp"
	"fmt"
	"slices"
)

// ReplenishOptions tunes PlanReplenish. The zero value heals every dead node
// that can be replaced, in one plan.
type ReplenishOptions struct {
	// MaxSwaps caps the swaps of one plan (a disruption budget); 0 means no
	// cap. With a cap m, k replaceable dead nodes heal in ⌈k/m⌉ rounds.
	MaxSwaps int
	// MaxSwapsPercent caps the swaps per consumer cluster at this percentage
	// of the cluster's node count, rounded up (so at least one); 0 means no
	// cap. It mirrors Karpenter's "nodes: 10%" disruption budget.
	MaxSwapsPercent int
	// OnePerTemplatePerCluster replaces at most one dead node per template
	// per cluster per plan: the anchor's pacing (spec §2.3), for callers that
	// want its exact round-by-round behaviour.
	OnePerTemplatePerCluster bool
}

// Validate reports a negative cap or a percentage above 100.
func (o ReplenishOptions) Validate() error {
	switch {
	case o.MaxSwaps < 0:
		return newError(InvalidArgument, "MaxSwaps", "Invalid options, MaxSwaps(%d) must >= 0", o.MaxSwaps)
	case o.MaxSwapsPercent < 0 || o.MaxSwapsPercent > 100:
		return newError(InvalidArgument, "MaxSwapsPercent", "Invalid options, MaxSwapsPercent(%d) must be within [0, 100]", o.MaxSwapsPercent)
	}
	return nil
}

// pool hands out the alive undivided nodes of one template of one provider,
// idle before busy, each by ascending id.
type pool struct {
	ids  []string
	next int
}

func (p *pool) take() (string, bool) {
	if p == nil || p.next == len(p.ids) {
		return "", false
	}
	p.next++
	return p.ids[p.next-1], true
}

type poolKey struct{ provider, template string }

// PlanReplenish plans swapping every dead node of a logical or job cluster
// for an alive node of the same template from its provider, in one plan. A
// swap puts the replacement in the dead node's bucket and the dead node in
// the provider's undivided bucket, so no replica set changes and no revision
// changes. The four scenarios of the seed:
//
//  1. Dead nodes in the primary's undivided bucket are purged from the model
//     (Purge), together with every dead node the plan swaps into it: the
//     state a restart would produce, since replay only adds alive nodes. The
//     anchor swaps them against the primary itself without fixing its
//     counters (spec §2.8).
//  2. A logical divisible cluster's undivided dead nodes are replaced from
//     the primary; the cluster is flushed, not published.
//  3. A logical indivisible cluster's dead nodes are replaced from the
//     primary; it is flushed and published.
//  4. A job cluster J of P is healed from the primary first and otherwise
//     from P's undivided nodes. Either way P's bucket J takes the
//     replacement, so P and J stay consistent; the anchor's fallback path
//     leaves P's bucket unchanged and the node owned twice (spec §2.4). J is
//     flushed and published, and P is flushed when it is logical.
//
// Clusters that run work (indivisible and job clusters) are healed first,
// then the undivided buckets of divisible clusters, each group in id order,
// templates and dead nodes in ascending order; replacements are taken idle
// before busy, by ascending id. The anchor heals one dead node per template
// per cluster per 30 s round (spec §2.3); here every replaceable node heals
// at once unless opts caps it (then Truncated is set). Dead nodes without a
// replacement are listed in Unreplaced.
func PlanReplenish(s State, opts ReplenishOptions) (Plan, error) {
	if err := opts.Validate(); err != nil {
		return Plan{}, err
	}
	if err := s.Validate(); err != nil {
		return Plan{}, err
	}
	pools := map[poolKey]*pool{}
	poolOf := func(provider Cluster, t string) *pool {
		k := poolKey{provider.ID, t}
		if p, ok := pools[k]; ok {
			return p
		}
		ids := bucket(provider, t, Undivided)
		p := &pool{}
		for _, busy := range []bool{false, true} {
			for _, id := range ids {
				if n := s.Nodes[id]; n.Alive && n.Busy == busy {
					p.ids = append(p.ids, id)
				}
			}
		}
		pools[k] = p
		return p
	}

	var out Plan
	flush, publish := map[string]bool{}, map[string]bool{}
	var purge []string
	unreplaced := map[poolKey][]string{}
	swaps := 0

	// heal swaps the dead nodes of one consumer: the nodes of bucket b of
	// holder h, which are the members of cluster consumer.
	heal := func(consumer string, h Cluster, b string, fallback bool) {
		budget := -1
		if opts.MaxSwapsPercent > 0 {
			size := 0
			for _, t := range templates(h) {
				for bb, ids := range h.Buckets[t] {
					if b == Undivided && h.Kind == Divisible || bb == b {
						size += len(ids)
					}
				}
			}
			budget = (size*opts.MaxSwapsPercent + 99) / 100
		}
		for _, t := range templates(h) {
			healedT := false
			for _, d := range bucket(h, t, b) {
				if s.Nodes[d].Alive {
					continue
				}
				if (opts.MaxSwaps > 0 && swaps == opts.MaxSwaps) || budget == 0 || (opts.OnePerTemplatePerCluster && healedT) {
					out.Truncated = true
					continue
				}
				provider := s.Primary
				x, ok := poolOf(s.Primary, t).take()
				if !ok && fallback {
					provider = h
					x, ok = poolOf(h, t).take()
				}
				if !ok {
					k := poolKey{consumer, t}
					unreplaced[k] = append(unreplaced[k], d)
					continue
				}
				swaps++
				budget--
				healedT = true
				out.Moves = append(out.Moves,
					Move{Node: x, Template: t, From: Place{provider.ID, Undivided}, To: Place{h.ID, b}},
					Move{Node: d, Template: t, From: Place{h.ID, b}, To: Place{provider.ID, Undivided}})
				if provider.ID == PrimaryID {
					purge = append(purge, d)
				}
				flush[consumer] = true
				if h.Kind != Divisible || b != Undivided {
					publish[consumer] = true
				}
				if h.ID != PrimaryID {
					flush[h.ID] = true
				}
			}
		}
	}

	// Clusters that run work first: logical indivisible and job clusters.
	var working []string
	for _, id := range sortedClusterIDs(s.Logical) {
		if s.Logical[id].Kind == Indivisible {
			working = append(working, id)
		}
	}
	working = append(working, sortedClusterIDs(s.Jobs)...)
	slices.Sort(working)
	for _, id := range working {
		if IsJobID(id) {
			parentID, _, _ := SplitJobID(id)
			parent, _ := s.Cluster(parentID)
			heal(id, parent, id, parentID != PrimaryID)
			continue
		}
		heal(id, s.Logical[id], Undivided, false)
	}
	for _, id := range sortedClusterIDs(s.Logical) {
		if c := s.Logical[id]; c.Kind == Divisible {
			heal(id, c, Undivided, false)
		}
	}

	for _, t := range templates(s.Primary) {
		for _, id := range bucket(s.Primary, t, Undivided) {
			if !s.Nodes[id].Alive {
				purge = append(purge, id)
			}
		}
	}
	slices.Sort(purge)
	out.Purge = purge
	for k, ids := range unreplaced {
		out.Unreplaced = append(out.Unreplaced, Unreplaced{Cluster: k.provider, Template: k.template, Nodes: ids})
	}
	slices.SortFunc(out.Unreplaced, func(a, b Unreplaced) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Template, b.Template))
	})
	out.Flush = flushOrder(setKeys(flush))
	out.Publish = flushOrder(setKeys(publish))
	return out, nil
}

func setKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// String renders the options for transcripts.
func (o ReplenishOptions) String() string {
	return fmt.Sprintf("MaxSwaps=%d MaxSwapsPercent=%d OnePerTemplatePerCluster=%v", o.MaxSwaps, o.MaxSwapsPercent, o.OnePerTemplatePerCluster)
}

package vcluster

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

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

// ReplenishInput is everything PlanReplenish reads.
type ReplenishInput struct {
	// State is the current hierarchy.
	State State
	// Cluster scopes the plan: "" for every cluster, PrimaryID or a logical
	// cluster id for that cluster and its job clusters.
	Cluster string
}

// Validate reports every fault of the input, in an error wrapping
// ErrInvalidInput (ErrNotFound for an unknown scope).
func (in ReplenishInput) Validate() error { return invalidInput(in.validate(nil)) }

// validate returns every fault of the input, filling sc (when not nil) with
// the state's dead and busy members as it checks them.
func (in ReplenishInput) validate(sc *scan) field.ErrorList {
	errs := in.State.validateScan(statePath, sc)
	if in.Cluster == "" || in.Cluster == PrimaryID {
		return errs
	}
	if _, ok := in.State.Logical[in.Cluster]; !ok {
		errs = append(errs, notFound(field.NewPath("cluster"), in.Cluster, "The logical cluster %s does not exist.", in.Cluster))
	}
	return errs
}

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
//     counters.
//  2. A logical divisible cluster's undivided dead nodes are replaced from
//     the primary; the cluster is flushed, not published.
//  3. A logical indivisible cluster's dead nodes are replaced from the
//     primary; it is flushed and published.
//  4. A job cluster J of P is healed from the primary first and otherwise
//     from P's undivided nodes. Either way P's bucket J takes the
//     replacement, so P and J stay consistent; the anchor's fallback path
//     leaves P's bucket unchanged and the node owned twice. J is
//     flushed and published, and P is flushed when it is logical.
//
// Clusters that run work (indivisible and job clusters) are healed first,
// then the undivided buckets of divisible clusters, each group in id order,
// templates and dead nodes in ascending order; replacements are taken idle
// before busy, by ascending id. The anchor heals one dead node per template
// per cluster per 30 s round (AntRay() does too); here every replaceable
// node heals at once unless o caps it (then Truncated is set). Dead nodes
// without a replacement are listed in Unreplaced.
//
// in.Cluster scopes the plan to one subtree, as the anchor's failover
// replenishes one virtual cluster at a time: a logical cluster and its job
// clusters, or (PrimaryID) the primary's job clusters and its own dead
// nodes. "" heals every cluster.
func PlanReplenish(in ReplenishInput, o Options) (Plan, error) {
	if err := o.Validate(); err != nil {
		return Plan{}, err
	}
	sc := &scan{}
	if err := invalidInput(in.validate(sc)); err != nil {
		return Plan{}, err
	}
	r := &replenisher{s: in.State, sc: sc, o: o, pools: map[poolKey]*pool{}, flush: map[string]bool{}, publish: map[string]bool{}, unreplaced: map[poolKey][]string{}}
	r.out.Moves = make([]Move, 0, 2*sc.dead) // at most two moves per dead node
	r.healWorking(in.Cluster)
	r.healDivisible(in.Cluster)
	if in.Cluster == "" || in.Cluster == PrimaryID {
		r.purgePrimary()
	}
	return finish(in.State, r.plan())
}

// inScope reports whether cluster id (a logical or job id) is in scope.
func inScope(scope, id string) bool {
	if scope == "" || id == scope {
		return true
	}
	parent, _, isJob := SplitJobID(id)
	return isJob && parent == scope
}

// replenisher carries PlanReplenish's pools, budget and findings.
type replenisher struct {
	s          State
	sc         *scan // the dead and busy members, from validating s
	o          Options
	pools      map[poolKey]*pool
	out        Plan
	flush      map[string]bool
	publish    map[string]bool
	purge      []string
	unreplaced map[poolKey][]string
	swaps      int
}

// poolOf returns the pool of template t of provider.
func (r *replenisher) poolOf(provider Cluster, t string) *pool {
	k := poolKey{provider.ID, t}
	if p, ok := r.pools[k]; ok {
		return p
	}
	// The bucket's alive idle nodes are its ids but the odd ones (both
	// ascending, odd a subsequence); its busy ones are among the odd.
	ids := bucket(provider, t, Undivided)
	odd := r.sc.oddOf(provider.ID, t, Undivided)
	p := &pool{ids: make([]string, 0, len(ids))}
	j := 0
	for _, id := range ids {
		if j < len(odd) && odd[j].id == id {
			j++
			continue
		}
		p.ids = append(p.ids, id)
	}
	for _, e := range odd {
		if e.node.Alive {
			p.ids = append(p.ids, e.id)
		}
	}
	r.pools[k] = p
	return p
}

// healWorking heals the clusters that run work first: logical indivisible
// and job clusters, in id order.
func (r *replenisher) healWorking(scope string) {
	var working []string
	for _, id := range sortedClusterIDs(r.s.Logical) {
		if r.s.Logical[id].Kind == Indivisible && inScope(scope, id) {
			working = append(working, id)
		}
	}
	for _, id := range sortedClusterIDs(r.s.Jobs) {
		if inScope(scope, id) {
			working = append(working, id)
		}
	}
	slices.Sort(working)
	for _, id := range working {
		if IsJobID(id) {
			parentID, _, _ := SplitJobID(id)
			parent, _ := r.s.Cluster(parentID)
			r.heal(id, parent, id, parentID != PrimaryID)
			continue
		}
		r.heal(id, r.s.Logical[id], Undivided, false)
	}
}

// healDivisible heals the undivided buckets of divisible clusters.
func (r *replenisher) healDivisible(scope string) {
	for _, id := range sortedClusterIDs(r.s.Logical) {
		if c := r.s.Logical[id]; c.Kind == Divisible && inScope(scope, id) {
			r.heal(id, c, Undivided, false)
		}
	}
}

// budgetOf returns the percentage budget of the consumer whose nodes are
// bucket b of holder h, or -1 for no budget.
func (r *replenisher) budgetOf(h Cluster, b string) int {
	if r.o.MaxSwapsPercent <= 0 {
		return -1
	}
	size := 0
	for _, t := range templates(h) {
		for bb, ids := range h.Buckets[t] {
			if b == Undivided && h.Kind == Divisible || bb == b {
				size += len(ids)
			}
		}
	}
	return (size*r.o.MaxSwapsPercent + 99) / 100
}

// heal swaps the dead nodes of one consumer: the nodes of bucket b of
// holder h, which are the members of cluster consumer.
func (r *replenisher) heal(consumer string, h Cluster, b string, fallback bool) {
	budget := r.budgetOf(h, b)
	healed := false
	for _, t := range templates(h) {
		healedT := false
		for _, e := range r.sc.oddOf(h.ID, t, b) {
			if e.node.Alive {
				continue
			}
			d := e.id
			if (r.o.MaxSwaps > 0 && r.swaps == r.o.MaxSwaps) || budget == 0 || (r.o.OnePerTemplatePerCluster && healedT) {
				r.out.Truncated = true
				continue
			}
			if !r.swap(consumer, h, b, t, d, fallback) {
				k := poolKey{consumer, t}
				r.unreplaced[k] = append(r.unreplaced[k], d)
				continue
			}
			budget--
			healedT = true
			healed = true
		}
	}
	if healed {
		r.swapped(consumer, h, b)
	}
}

// swap replaces dead node d of template t in bucket b of h by an alive node
// of the primary, or of h itself when fallback is set; it reports whether a
// replacement was found.
func (r *replenisher) swap(consumer string, h Cluster, b, t, d string, fallback bool) bool {
	provider := r.s.Primary
	x, ok := r.poolOf(r.s.Primary, t).take()
	if !ok && fallback {
		provider = h
		x, ok = r.poolOf(h, t).take()
	}
	if !ok {
		return false
	}
	r.swaps++
	r.out.Moves = append(r.out.Moves,
		Move{Node: x, Template: t, From: Place{provider.ID, Undivided}, To: Place{h.ID, b},
			Reason: Reason{Code: ReasonReplaceDeadNode, Facts: ReasonFacts{Cluster: consumer, Node: d}}},
		Move{Node: d, Template: t, From: Place{h.ID, b}, To: Place{provider.ID, Undivided},
			Reason: Reason{Code: ReasonReturnDeadNode, Facts: ReasonFacts{Cluster: consumer, Node: x}}}) // messages: plan
	if provider.ID == PrimaryID {
		r.purge = append(r.purge, d)
	}
	return true
}

// swapped flushes (and publishes) what a consumer's swaps change: the
// consumer, and its holder unless that is the primary.
func (r *replenisher) swapped(consumer string, h Cluster, b string) {
	r.flush[consumer] = true
	if h.Kind != Divisible || b != Undivided {
		r.publish[consumer] = true
	}
	if h.ID != PrimaryID {
		r.flush[h.ID] = true
	}
}

// purgePrimary purges every dead node of the primary's undivided bucket.
func (r *replenisher) purgePrimary() {
	for _, t := range templates(r.s.Primary) {
		for _, e := range r.sc.oddOf(PrimaryID, t, Undivided) {
			if !e.node.Alive {
				r.purge = append(r.purge, e.id)
			}
		}
	}
}

// plan assembles the plan in its deterministic order.
func (r *replenisher) plan() Plan {
	out := r.out
	slices.Sort(r.purge)
	purged := slices.Compact(r.purge)
	out.Purge = make([]PurgedNode, len(purged))
	for i, id := range purged {
		out.Purge[i] = PurgedNode{Node: id, Reason: Reason{Code: ReasonDeadNodePurged}}
	}
	if len(out.Purge) == 0 {
		out.Purge = nil
	}
	setMessages(out)
	for k, ids := range r.unreplaced {
		out.Unreplaced = append(out.Unreplaced, Unreplaced{Cluster: k.provider, Template: k.template, Nodes: ids})
	}
	slices.SortFunc(out.Unreplaced, func(a, b Unreplaced) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Template, b.Template))
	})
	out.Flush = flushOrder(setKeys(r.flush))
	out.Publish = flushOrder(setKeys(r.publish))
	return out
}

func setKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// setMessages writes the messages of p's swaps (worded as withMessage words
// them, by swapWords) and purges into one string that each message is a part of:
// one allocation where a message each was two thousand for a thousand swaps
// (a fifth of BenchmarkReplenish10k's allocations).
func setMessages(p Plan) {
	var b strings.Builder
	size := 0
	for i := range p.Moves {
		size += messageLen(p.Moves[i].Reason)
	}
	for _, n := range p.Purge {
		size += len(purgeMessage[0]) + len(n.Node) + len(purgeMessage[1])
	}
	b.Grow(size)
	ends := make([]int, 0, len(p.Moves)+len(p.Purge))
	for i := range p.Moves {
		writeMessage(&b, p.Moves[i].Reason)
		ends = append(ends, b.Len())
	}
	for _, n := range p.Purge {
		b.WriteString(purgeMessage[0])
		b.WriteString(n.Node)
		b.WriteString(purgeMessage[1])
		ends = append(ends, b.Len())
	}
	all, start := b.String(), 0
	for i := range p.Moves {
		p.Moves[i].Reason.Message = all[start:ends[i]]
		start = ends[i]
	}
	for i := range p.Purge {
		end := ends[len(p.Moves)+i]
		p.Purge[i].Reason.Message = all[start:end]
		start = end
	}
}

// purgeMessage is the message of a purged node, before and after its id.
var purgeMessage = [2]string{"dead node ", " leaves the primary"}

func messageLen(r Reason) int {
	w := swapWords(r)
	return len(w[0]) + len(w[1]) + len(w[2]) + len(w[3])
}

func writeMessage(b *strings.Builder, r Reason) {
	for _, s := range swapWords(r) {
		b.WriteString(s)
	}
}

package vcluster

import (
	"fmt"
	"maps"
	"slices"
)

// Next returns the state p leads to from s, without IO: the pure half of
// applying a plan (Apply writes the records). It copies only the clusters p
// touches (and the node table only when p purges nodes); everything else is
// shared with s, which is never modified. (A plan made by a planning
// function already carries this state in p.After.)
//
// A plan made from s always applies. A plan that does not fit s (a node not
// where a move says it is, a cluster created twice, a removed cluster still
// holding nodes) returns an error wrapping ErrPlanMismatch and the zero State.
func (s State) Next(p Plan) (State, error) { return s.next(p, false) }

// next applies p to s. A planner passes ownPlan for the plan it has just made
// from s: its moves were taken from s's own buckets, so next skips checking
// each one against s (a lookup and a search per moved node, about a third of
// a 1,000-swap replenish). The property tests check that a planner's After is
// what Next, checking everything, makes of the same plan.
func (s State) next(p Plan, ownPlan bool) (State, error) {
	a := &applier{s: s, ownPlan: ownPlan, out: State{
		Nodes:   s.Nodes,
		Primary: s.Primary,
		Logical: maps.Clone(s.Logical),
		Jobs:    maps.Clone(s.Jobs),
	}, touched: map[tkey]bool{}, copied: map[string]bool{}}
	if a.out.Logical == nil {
		a.out.Logical = map[string]Cluster{}
	}
	if a.out.Jobs == nil {
		a.out.Jobs = map[string]Cluster{}
	}
	for _, step := range []func(Plan) error{a.creates, a.moves, a.purge, a.rebuildAll, a.removes, a.revisions} {
		if err := step(p); err != nil {
			return State{}, err
		}
	}
	return a.out, nil
}

// bkey names one bucket of one template of one holder cluster.
type bkey struct{ cluster, template, bucket string }

// tkey names one template of one holder cluster.
type tkey struct{ cluster, template string }

// applier carries State.Next's copy-on-write bookkeeping.
type applier struct {
	s, out  State
	ownPlan bool
	touched map[tkey]bool
	copied  map[string]bool
	// idx and nodes follow the moved nodes; purged holds the purged nodes
	// that did not move, by template. Moves and purges are then applied to
	// each touched bucket at once (rebuildAll).
	p      Plan
	idx    map[string]int
	nodes  []moved
	purged map[string][]string
}

func mismatch(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPlanMismatch, fmt.Sprintf(format, args...))
}

// creates adds the clusters p creates, without nodes.
func (a *applier) creates(p Plan) error {
	for _, c := range p.Creates {
		if _, exists := a.out.Cluster(c.ID); exists {
			return mismatch("create %s: cluster exists", c.ID)
		}
		c.Buckets = nil
		c.ZeroTemplates = slices.Clone(c.ZeroTemplates)
		switch {
		case c.Kind == Job && IsJobID(c.ID):
			a.out.Jobs[c.ID] = c.Cluster
		case (c.Kind == Divisible || c.Kind == Indivisible) && c.ID != "" && c.ID != PrimaryID && !IsJobID(c.ID):
			c.Buckets = map[string]map[string][]string{}
			a.out.Logical[c.ID] = c.Cluster
		default:
			return mismatch("create %s: kind %q does not fit the id", c.ID, c.Kind)
		}
	}
	return nil
}

// moved is one moved node: its first and its last move in the plan (which
// give its id, template, first and final place), and whether the plan purges
// it there.
type moved struct {
	first, last int32
	purged      bool
}

// node, template, from and to read a moved node's first and last moves.
func (a *applier) node(n moved) string     { return a.p.Moves[n.first].Node }
func (a *applier) template(n moved) string { return a.p.Moves[n.first].Template }
func (a *applier) from(n moved) Place      { return a.p.Moves[n.first].From }
func (a *applier) to(n moved) Place        { return a.p.Moves[n.last].To }

// bucketEdit is what a plan takes out of and puts into one bucket, and
// how many of each.
type bucketEdit struct {
	key              bkey
	removed, added   []string
	nRemoved, nAdded int
}

// moves follows every moved node to its final place, checking each step;
// rebuildAll then rebuilds each touched bucket once: O(bucket + changes log
// changes). A node's template is the move's own (checkMove checks it against
// the node table), so the valid path looks up no node.
func (a *applier) moves(p Plan) error {
	idx := make(map[string]int, len(p.Moves))
	nodes := make([]moved, 0, len(p.Moves))
	defer func() { a.idx, a.nodes = idx, nodes }()
	a.p = p
	for k, m := range p.Moves {
		i, seen := idx[m.Node]
		var at *Place // where the plan's earlier moves left the node
		if seen {
			at = &p.Moves[nodes[i].last].To
		}
		if err := a.checkMove(m, at); err != nil {
			return err
		}
		if seen {
			nodes[i].last = int32(k)
			continue
		}
		idx[m.Node] = len(nodes)
		nodes = append(nodes, moved{first: int32(k), last: int32(k)})
	}
	return nil
}

// rebuildAll rebuilds every bucket the moved and purged nodes leave or
// enter, once each, then drops the templates left empty. The buckets'
// removal and addition lists are parts of one slice, sized by a first pass
// that numbers the buckets.
func (a *applier) rebuildAll(Plan) error {
	var edits []bucketEdit
	at := map[bkey]int{}
	indexOf := func(k bkey) int {
		i, ok := at[k]
		if !ok {
			i = len(edits)
			at[k] = i
			edits = append(edits, bucketEdit{key: k})
		}
		return i
	}
	nodes := a.nodes
	ends := make([][2]int, len(nodes)) // the edits a node leaves and enters, -1 for none
	total := 0
	for j, n := range nodes {
		ends[j] = [2]int{-1, -1}
		from, to, t := a.from(n), a.to(n), a.template(n)
		if from != to || n.purged {
			ends[j][0] = indexOf(bkey{from.Cluster, t, from.Bucket})
			edits[ends[j][0]].nRemoved++
			total++
		}
		if from != to && !n.purged {
			ends[j][1] = indexOf(bkey{to.Cluster, t, to.Bucket})
			edits[ends[j][1]].nAdded++
			total++
		}
	}
	for t, ids := range a.purged {
		edits[indexOf(bkey{PrimaryID, t, Undivided})].nRemoved += len(ids)
		total += len(ids)
	}
	buf := make([]string, total)
	off := 0
	for i := range edits {
		e := &edits[i]
		e.removed, off = buf[off:off:off+e.nRemoved], off+e.nRemoved
		e.added, off = buf[off:off:off+e.nAdded], off+e.nAdded
	}
	for j, n := range nodes {
		if f := ends[j][0]; f >= 0 {
			edits[f].removed = append(edits[f].removed, a.node(n))
		}
		if t := ends[j][1]; t >= 0 {
			edits[t].added = append(edits[t].added, a.node(n))
		}
	}
	for t, ids := range a.purged {
		e := &edits[at[bkey{PrimaryID, t, Undivided}]]
		e.removed = append(e.removed, ids...)
	}
	for _, e := range edits {
		byBucket := a.mutable(e.key.cluster, e.key.template)
		byBucket[e.key.bucket] = rebuild(byBucket[e.key.bucket], e.removed, e.added)
		prune(byBucket, e.key.bucket)
	}
	for k := range a.touched {
		buckets := a.holderOf(k.cluster)
		if len(buckets[k.template]) == 0 {
			delete(buckets, k.template)
		}
	}
	return nil
}

// checkMove checks that move m starts where its node is (cur: where an
// earlier move of the plan left it, nil for its first move) and ends in a
// bucket that exists.
func (a *applier) checkMove(m Move, at *Place) error {
	if a.ownPlan {
		return nil
	}
	n, ok := a.s.Nodes.Get(m.Node)
	if !ok || n.Template != m.Template {
		return mismatch("move %s: no node of template %s", m.Node, m.Template)
	}
	if at != nil {
		if *at != m.From {
			return mismatch("move %s: it is in %s, not %s", m.Node, *at, m.From)
		}
	} else {
		c, ok := a.out.Cluster(m.From.Cluster)
		if !ok || c.Kind == Job {
			return mismatch("move %s: no cluster %s", m.Node, m.From.Cluster)
		}
		if _, found := slices.BinarySearch(bucket(c, m.Template, m.From.Bucket), m.Node); !found {
			return mismatch("move %s: not in %s", m.Node, m.From)
		}
	}
	to, ok := a.out.Cluster(m.To.Cluster)
	if !ok || to.Kind == Job {
		return mismatch("move %s: no cluster %s", m.Node, m.To.Cluster)
	}
	if m.To.Bucket != Undivided {
		parent, _, isJob := SplitJobID(m.To.Bucket)
		if _, ok := a.out.Jobs[m.To.Bucket]; !ok || !isJob || parent != m.To.Cluster || !to.Kind.divisible() {
			return mismatch("move %s: no job cluster %s in %s", m.Node, m.To.Bucket, m.To.Cluster)
		}
	}
	return nil
}

// holderOf returns the bucket map of a holder cluster, copied once.
func (a *applier) holderOf(clusterID string) map[string]map[string][]string {
	if clusterID == PrimaryID {
		if !a.copied[clusterID] {
			a.out.Primary.Buckets = maps.Clone(a.out.Primary.Buckets)
		}
		if a.out.Primary.Buckets == nil {
			a.out.Primary.Buckets = map[string]map[string][]string{}
		}
		a.copied[clusterID] = true
		return a.out.Primary.Buckets
	}
	c := a.out.Logical[clusterID]
	if !a.copied[clusterID] {
		c.Buckets = maps.Clone(c.Buckets)
	}
	if c.Buckets == nil {
		c.Buckets = map[string]map[string][]string{}
	}
	a.copied[clusterID] = true
	a.out.Logical[clusterID] = c
	return c.Buckets
}

// mutable returns the buckets of template t of a holder, copied once.
func (a *applier) mutable(clusterID, t string) map[string][]string {
	buckets := a.holderOf(clusterID)
	k := tkey{clusterID, t}
	if !a.touched[k] {
		a.touched[k] = true
		buckets[t] = maps.Clone(buckets[t])
	}
	if buckets[t] == nil {
		buckets[t] = map[string][]string{}
	}
	return buckets[t]
}

// purge drops the purged dead nodes from the node table and marks them to
// leave the primary's undivided bucket, where the plan's moves must have
// left them (rebuildAll takes them out).
func (a *applier) purge(p Plan) error {
	if len(p.Purge) == 0 {
		return nil
	}
	edit := &batchEdit{} // the purged table is changed in place, the input's never
	a.purged = map[string][]string{}
	for _, pn := range p.Purge {
		id := pn.Node
		n, ok := a.out.Nodes.Get(id)
		if !ok || n.Alive {
			return mismatch("purge %s: not a dead node", id)
		}
		if !a.endsInPrimary(id, n.Template) {
			return mismatch("purge %s: not in the primary's undivided bucket", id)
		}
		a.out.Nodes = a.out.Nodes.del(id, edit)
	}
	return nil
}

// endsInPrimary reports whether the plan's moves leave node id, of template
// t, in the primary's undivided bucket, and marks it purged there.
func (a *applier) endsInPrimary(id, t string) bool {
	if i, moved := a.idx[id]; moved {
		n := &a.nodes[i]
		n.purged = true
		return a.to(*n) == Place{PrimaryID, Undivided} && a.template(*n) == t
	}
	if _, found := slices.BinarySearch(bucket(a.out.Primary, t, Undivided), id); !found {
		return false
	}
	a.purged[t] = append(a.purged[t], id)
	return true
}

// removes deletes the removed clusters, which must be empty by now.
func (a *applier) removes(p Plan) error {
	out := a.out
	for _, r := range p.Removes {
		id := r.Cluster
		c, ok := out.Cluster(id)
		if !ok {
			continue // a stored record of a cluster the state does not hold
		}
		if c.Kind == Primary {
			return mismatch("remove %s: the primary cannot be removed", id)
		}
		if len(out.Members(id)) > 0 {
			return mismatch("remove %s: it still holds nodes", id)
		}
		if c.Kind == Job {
			delete(out.Jobs, id)
			continue
		}
		for jid := range out.Jobs {
			if p, _, _ := SplitJobID(jid); p == id {
				return mismatch("remove %s: job cluster %s remains", id, jid)
			}
		}
		delete(out.Logical, id)
	}
	return nil
}

// revisions sets the new revisions and zero templates.
func (a *applier) revisions(p Plan) error {
	for _, r := range p.Revisions {
		m := a.out.Logical
		switch {
		case r.Cluster == PrimaryID:
			return mismatch("revision %s: the primary has no revision to set", r.Cluster)
		case IsJobID(r.Cluster):
			m = a.out.Jobs
		}
		c, ok := m[r.Cluster]
		if !ok {
			return mismatch("revision %s: no such cluster", r.Cluster)
		}
		c.Revision, c.ZeroTemplates = r.Revision, slices.Clone(r.ZeroTemplates)
		m[r.Cluster] = c
	}
	return nil
}

// rebuild returns the ascending ids without the removed ones and with the
// added ones, in ascending order, as a new slice: one merge, with no lookup
// per id. ids is shared and never modified; removed and added belong to the
// caller, which rebuild sorts in place.
func rebuild(ids, removed, added []string) []string {
	slices.Sort(removed)
	slices.Sort(added)
	out := make([]string, 0, max(0, len(ids)+len(added)-len(removed)))
	r, i := 0, 0
	for _, id := range ids {
		for r < len(removed) && removed[r] < id {
			r++
		}
		if r < len(removed) && removed[r] == id {
			continue
		}
		for i < len(added) && added[i] < id {
			out = append(out, added[i])
			i++
		}
		out = append(out, id)
	}
	out = append(out, added[i:]...)
	return slices.Compact(out)
}

// prune deletes bucket b from byBucket when it is empty.
func prune(byBucket map[string][]string, b string) {
	if len(byBucket[b]) == 0 {
		delete(byBucket, b)
	}
}

// addRank orders nodes for additions: alive before dead, idle before
// busy, then by id.
func addRank(n Node) int {
	switch {
	case !n.Alive:
		return 2
	case n.Busy:
		return 1
	}
	return 0
}

// removeRank orders nodes for removals: dead, then idle, then busy.
func removeRank(n Node) int {
	switch {
	case !n.Alive:
		return 0
	case !n.Busy:
		return 1
	}
	return 2
}

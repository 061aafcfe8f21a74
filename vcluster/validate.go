package vcluster

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks that s is a well-formed hierarchy: every node in exactly
// one leaf bucket under its own template, buckets sorted, job buckets matching
// job clusters one to one, kinds and ids consistent, counts not negative.
// Every planning function runs it first, so a hand-built or corrupted state
// is refused, naming every fault, instead of producing a wrong plan or a
// panic. Field paths start at "state", as in the planners' inputs.
func (s State) Validate() error {
	return invalidInput(s.validate(statePath))
}

// pathFn builds a field path when a check fails, and only then: every
// planner validates the whole state, so a path built per node would cost
// thousands of allocations on valid input (see BenchmarkReplenish10k).
type pathFn func() *field.Path

func statePath() *field.Path { return field.NewPath("state") }

// validate returns every fault of s, in a stable order, one step per part of
// the state.
func (s State) validate(p pathFn) field.ErrorList { return s.validateScan(p, nil) }

// validateScan is validate, and when sc is not nil and s is valid it also
// fills sc with what the membership check saw of every listed node.
//
// The membership check runs first, without a report: when every node of the
// table is listed exactly once and each listed node is well formed, no node
// is faulty and the walk of the whole table that names faulty nodes is
// skipped. Otherwise both report in full.
func (s State) validateScan(p pathFn, sc *scan) field.ErrorList {
	holds := s.membershipHolds(sc)
	errs := s.validatePrimary(func() *field.Path { return p().Child("primary") })
	if !holds {
		errs = append(errs, s.validateNodes(func() *field.Path { return p().Child("nodes") })...)
	}
	errs = append(errs, s.validateLogical(func() *field.Path { return p().Child("logical") })...)
	errs = append(errs, s.validateJobs(func() *field.Path { return p().Child("jobs") })...)
	if !holds {
		errs = append(errs, s.validateMembership(p)...)
	}
	return errs
}

// scan is what validating a state's membership learns of its buckets on the
// way, so that a planner reading liveness need not look every member up in
// the node table again: the members of each bucket that are not alive and
// idle (dead or busy), in ascending order. A bucket absent from odd holds
// only alive idle nodes.
type scan struct {
	odd   map[bkey][2]int // where in nodes each bucket's dead and busy members are
	nodes []*tableEntry   // the dead and busy members, bucket after bucket
	dead  int             // the dead members
}

// oddOf returns the dead and busy members of bucket b of template t of
// holder h, ascending.
func (sc *scan) oddOf(h, t, b string) []*tableEntry {
	span, ok := sc.odd[bkey{h, t, b}]
	if !ok {
		return nil
	}
	return sc.nodes[span[0]:span[1]]
}

func (s State) validatePrimary(p pathFn) field.ErrorList {
	if s.Primary.ID != PrimaryID || s.Primary.Kind != Primary {
		return field.ErrorList{invalid(p(), s.Primary.ID, "Invalid state, the primary must have id %s and kind %s, not %q and %q.", PrimaryID, Primary, s.Primary.ID, s.Primary.Kind)}
	}
	return nil
}

func (s State) validateNodes(p pathFn) field.ErrorList {
	// The table walks in hash order: find the faulty nodes, then report
	// them in id order.
	var bad []string
	for id, n := range s.Nodes.All() {
		if n.ID != id || n.ID == "" || n.Template == "" || (!n.Alive && n.Busy) {
			bad = append(bad, id)
		}
	}
	slices.Sort(bad)
	var errs field.ErrorList
	for _, id := range bad {
		n := s.Nodes.Node(id)
		if n.ID != id {
			errs = append(errs, invalid(p().Key(id).Child("id"), n.ID, "Invalid state, node key %q holds node %q.", id, n.ID))
			continue
		}
		errs = append(errs, validNode(p().Key(id), n)...)
	}
	return errs
}

func (s State) validateLogical(p pathFn) field.ErrorList {
	var errs field.ErrorList
	for _, id := range sortedClusterIDs(s.Logical) {
		c := s.Logical[id]
		fp := func() *field.Path { return p().Key(id) }
		switch {
		case c.ID != id:
			errs = append(errs, invalid(fp().Child("id"), c.ID, "Invalid state, logical key %q holds cluster %q.", id, c.ID))
		case id == "" || id == PrimaryID || IsJobID(id):
			errs = append(errs, invalid(fp().Child("id"), id, "Invalid state, %q is not a logical cluster id.", id))
		case c.Kind != Divisible && c.Kind != Indivisible:
			errs = append(errs, invalid(fp().Child("kind"), c.Kind, "Invalid state, logical cluster %s has kind %q.", id, c.Kind))
		}
		errs = append(errs, validDetached(fp, c)...)
	}
	return errs
}

func (s State) validateJobs(p pathFn) field.ErrorList {
	var errs field.ErrorList
	for _, id := range sortedClusterIDs(s.Jobs) {
		c := s.Jobs[id]
		fp := func() *field.Path { return p().Key(id) }
		parent, job, _ := SplitJobID(id)
		par, ok := s.Cluster(parent)
		switch {
		case c.ID != id:
			errs = append(errs, invalid(fp().Child("id"), c.ID, "Invalid state, job key %q holds cluster %q.", id, c.ID))
		case !IsJobID(id) || job == "":
			errs = append(errs, invalid(fp().Child("id"), id, "Invalid state, %q is not a job cluster id.", id))
		case c.Kind != Job:
			errs = append(errs, invalid(fp().Child("kind"), c.Kind, "Invalid state, job cluster %s has kind %q.", id, c.Kind))
		case !ok || !par.Kind.divisible():
			errs = append(errs, invalid(fp().Child("id"), id, "Invalid state, job cluster %s has no divisible parent.", id))
		case len(c.Buckets) > 0:
			errs = append(errs, invalid(fp().Child("buckets"), len(c.Buckets), "Invalid state, job cluster %s holds buckets of its own; its nodes are its parent's bucket.", id))
		}
		errs = append(errs, validDetached(fp, c)...)
	}
	return errs
}

func validDetached(p pathFn, c Cluster) field.ErrorList {
	if c.Detached < 0 {
		return field.ErrorList{invalid(p().Child("detached"), c.Detached, "Invalid state, cluster %s has Detached %d.", c.ID, c.Detached)}
	}
	return nil
}

// validateMembership checks that every node is in exactly one bucket of
// the primary or a logical cluster, under its own template.
func (s State) validateMembership(p pathFn) field.ErrorList {
	seen := make(map[string]bool, s.Nodes.Len())
	errs := s.validateBuckets(func() *field.Path { return p().Child("primary", "buckets") }, s.Primary, seen)
	for _, id := range sortedClusterIDs(s.Logical) {
		errs = append(errs, s.validateBuckets(func() *field.Path { return p().Child("logical").Key(id).Child("buckets") }, s.Logical[id], seen)...)
	}
	if len(seen) != s.Nodes.Len() {
		for _, id := range s.Nodes.IDs() {
			if !seen[id] {
				errs = append(errs, invalid(p().Child("nodes").Key(id), id, "Invalid state, node %s is in no bucket.", id))
			}
		}
	}
	return errs
}

// membershipHolds is validateMembership's check without its report: every
// planner validates the whole state, so the valid case walks the buckets
// once, in map order, building no paths and sorting nothing, and marks each
// listed node by its rank in the node table in a bit set (a map of 10,000
// ids was a third of the check). When it finds a fault, validateMembership
// walks again in a stable order to name every one. It also checks each
// listed node as validateNodes does (so that, when it holds, no node is
// faulty), and records the dead and busy members of each bucket in sc, when
// sc is not nil.
func (s State) membershipHolds(sc *scan) bool {
	m := membership{s: s, seen: make([]uint64, (s.Nodes.Len()+63)/64), sc: sc}
	if !m.holds(PrimaryID, s.Primary) {
		return false
	}
	for id, c := range s.Logical {
		if !m.holds(id, c) {
			return false
		}
	}
	return m.listed == s.Nodes.Len()
}

// membership carries membershipHolds' walk: the ranks of the nodes listed
// so far and their number.
type membership struct {
	s      State
	seen   []uint64
	listed int
	sc     *scan
}

// holds checks the buckets of holder c, stored under id.
func (m *membership) holds(id string, c Cluster) bool {
	for t, byBucket := range c.Buckets {
		for b, ids := range byBucket {
			if b != Undivided && !m.s.jobBucketHolds(c, b) {
				return false
			}
			first := 0
			if m.sc != nil {
				first = len(m.sc.nodes)
			}
			for i, nid := range ids {
				if i > 0 && ids[i-1] >= nid {
					return false
				}
				e, rank := m.s.Nodes.entry(nid)
				if e == nil || e.node.Template != t || !wellFormed(e) {
					return false
				}
				w, bit := rank>>6, uint64(1)<<(rank&63)
				if m.seen[w]&bit != 0 {
					return false
				}
				m.seen[w] |= bit
				if n := e.node; m.sc != nil && (!n.Alive || n.Busy) {
					m.sc.nodes = append(m.sc.nodes, e)
					m.sc.dead += b2i(!n.Alive)
				}
			}
			m.listed += len(ids)
			if m.sc != nil && len(m.sc.nodes) > first {
				if m.sc.odd == nil {
					m.sc.odd = map[bkey][2]int{}
				}
				m.sc.odd[bkey{id, t, b}] = [2]int{first, len(m.sc.nodes)}
			}
		}
	}
	return true
}

// wellFormed is validateNodes' check of one node without its report.
func wellFormed(e *tableEntry) bool {
	n := e.node
	return n.ID == e.id && n.ID != "" && n.Template != "" && (n.Alive || !n.Busy)
}

// jobBucketHolds says whether b names a job cluster of c, as
// validateJobBucket checks.
func (s State) jobBucketHolds(c Cluster, b string) bool {
	parent, _, _ := SplitJobID(b)
	_, ok := s.Jobs[b]
	return c.Kind.divisible() && parent == c.ID && ok
}

// validateBuckets checks the buckets of c, marking each listed node in seen.
func (s State) validateBuckets(p pathFn, c Cluster, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for _, t := range templates(c) {
		byBucket := c.Buckets[t]
		for _, b := range slices.Sorted(maps.Keys(byBucket)) {
			bp := func() *field.Path { return p().Key(t).Key(b) }
			if b != Undivided {
				errs = append(errs, s.validateJobBucket(bp, c, b)...)
			}
			errs = append(errs, s.validateBucketNodes(bp, c, t, b, byBucket[b], seen)...)
		}
	}
	return errs
}

func (s State) validateJobBucket(p pathFn, c Cluster, b string) field.ErrorList {
	parent, _, _ := SplitJobID(b)
	_, ok := s.Jobs[b]
	switch {
	case !c.Kind.divisible():
		return field.ErrorList{invalid(p(), b, "Invalid state, indivisible cluster %s has bucket %s.", c.ID, b)}
	case parent != c.ID:
		return field.ErrorList{invalid(p(), b, "Invalid state, cluster %s has bucket %s of another parent.", c.ID, b)}
	case !ok:
		return field.ErrorList{invalid(p(), b, "Invalid state, cluster %s has bucket %s but no such job cluster.", c.ID, b)}
	}
	return nil
}

func (s State) validateBucketNodes(p pathFn, c Cluster, t, b string, ids []string, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for i, id := range ids {
		if i > 0 && ids[i-1] >= id {
			errs = append(errs, invalid(p().Index(i), id, "Invalid state, bucket %s/%s of template %s is not strictly ascending at %s.", c.ID, b, t, id))
			continue
		}
		n, ok := s.Nodes.Get(id)
		switch {
		case !ok:
			errs = append(errs, invalid(p().Index(i), id, "Invalid state, node %s of %s/%s is not in the node table.", id, c.ID, b))
		case n.Template != t:
			errs = append(errs, invalid(p().Index(i), id, "Invalid state, node %s of template %s is listed under template %s in %s.", id, n.Template, t, c.ID))
		case seen[id]:
			errs = append(errs, invalid(p().Index(i), id, "Invalid state, node %s is in more than one bucket.", id))
		}
		seen[id] = true
	}
	return errs
}

// pick returns up to k ids of the ascending list ids whose node is eligible:
// first the ids of prefer in the caller's order, then the rest by rank (lower
// first) and id. It runs in O(len(ids) × ranks) without sorting.
func pick(nodes NodeTable, ids []string, k int, eligible func(Node) bool, rank func(Node) int, prefer []string) []string {
	if k <= 0 {
		return nil
	}
	var out []string
	var taken map[string]bool
	for _, id := range prefer {
		if len(out) == k {
			return out
		}
		if _, in := slices.BinarySearch(ids, id); !in || taken[id] || !eligible(nodes.Node(id)) {
			continue
		}
		if taken == nil {
			taken = map[string]bool{}
		}
		taken[id] = true
		out = append(out, id)
	}
	for r := 0; r <= 2 && len(out) < k; r++ {
		for _, id := range ids {
			n := nodes.Node(id)
			if rank(n) != r || taken[id] || !eligible(n) {
				continue
			}
			out = append(out, id)
			if len(out) == k {
				break
			}
		}
	}
	return out
}

func alive(n Node) bool    { return n.Alive }
func anyNode(Node) bool    { return true }
func idleNode(n Node) bool { return n.Idle() }

// satAdd returns a+b for non-negative counts, saturating at the largest int
// instead of wrapping.
func satAdd(a, b int) int {
	if b > 0 && a > maxInt-b {
		return maxInt
	}
	return a + b
}

const maxInt = int(^uint(0) >> 1)

// maxReplicas is the largest count a replica set may hold: the anchor's
// replica counts are 32-bit.
const maxReplicas = 1<<31 - 1

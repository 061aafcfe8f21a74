package vcluster

import (
	"slices"
)

// Validate checks that s is a well-formed hierarchy: every node in exactly
// one leaf bucket under its own template, buckets sorted, job buckets matching
// job clusters one to one, kinds and ids consistent. Every planning function
// calls it first, so a hand-built or corrupted state is refused with an
// InvalidArgument naming the fault instead of producing a wrong plan or a
// panic.
func (s State) Validate() error {
	bad := func(format string, args ...any) error {
		return newError(InvalidArgument, "state", "Invalid state, "+format, args...)
	}
	if s.Primary.ID != PrimaryID || s.Primary.Kind != Primary {
		return bad("the primary must have id %s and kind %s, not %q and %q.", PrimaryID, Primary, s.Primary.ID, s.Primary.Kind)
	}
	for id, n := range s.Nodes {
		if n.ID != id {
			return bad("node key %q holds node %q.", id, n.ID)
		}
		if err := validNode(n, 0); err != nil {
			return bad("%s", err.(*Error).Message)
		}
	}
	for _, id := range sortedClusterIDs(s.Logical) {
		c := s.Logical[id]
		switch {
		case c.ID != id:
			return bad("logical key %q holds cluster %q.", id, c.ID)
		case id == "" || id == PrimaryID || IsJobID(id):
			return bad("%q is not a logical cluster id.", id)
		case c.Kind != Divisible && c.Kind != Indivisible:
			return bad("logical cluster %s has kind %q.", id, c.Kind)
		case c.Detached < 0:
			return bad("cluster %s has Detached %d.", id, c.Detached)
		}
	}
	for _, id := range sortedClusterIDs(s.Jobs) {
		c := s.Jobs[id]
		parent, job, _ := SplitJobID(id)
		p, ok := s.Cluster(parent)
		switch {
		case c.ID != id:
			return bad("job key %q holds cluster %q.", id, c.ID)
		case !IsJobID(id) || job == "":
			return bad("%q is not a job cluster id.", id)
		case c.Kind != Job:
			return bad("job cluster %s has kind %q.", id, c.Kind)
		case !ok || !p.Kind.divisible():
			return bad("job cluster %s has no divisible parent.", id)
		case len(c.Buckets) > 0:
			return bad("job cluster %s holds buckets of its own; its nodes are its parent's bucket.", id)
		case c.Detached < 0:
			return bad("cluster %s has Detached %d.", id, c.Detached)
		}
	}
	seen := make(map[string]bool, len(s.Nodes))
	check := func(c Cluster) error {
		for t, byBucket := range c.Buckets {
			for b, ids := range byBucket {
				if b != Undivided {
					if !c.Kind.divisible() {
						return bad("indivisible cluster %s has bucket %s.", c.ID, b)
					}
					if parent, _, _ := SplitJobID(b); parent != c.ID {
						return bad("cluster %s has bucket %s of another parent.", c.ID, b)
					}
					if _, ok := s.Jobs[b]; !ok {
						return bad("cluster %s has bucket %s but no such job cluster.", c.ID, b)
					}
				}
				for i, id := range ids {
					if i > 0 && ids[i-1] >= id {
						return bad("bucket %s/%s of template %s is not strictly ascending at %s.", c.ID, b, t, id)
					}
					n, ok := s.Nodes[id]
					if !ok {
						return bad("node %s of %s/%s is not in the node table.", id, c.ID, b)
					}
					if n.Template != t {
						return bad("node %s of template %s is listed under template %s in %s.", id, n.Template, t, c.ID)
					}
					if seen[id] {
						return bad("node %s is in more than one bucket.", id)
					}
					seen[id] = true
				}
			}
		}
		return nil
	}
	if err := check(s.Primary); err != nil {
		return err
	}
	for _, id := range sortedClusterIDs(s.Logical) {
		if err := check(s.Logical[id]); err != nil {
			return err
		}
	}
	if len(seen) != len(s.Nodes) {
		for _, id := range sortedNodeIDs(s.Nodes) {
			if !seen[id] {
				return bad("node %s is in no bucket.", id)
			}
		}
	}
	return nil
}

func sortedNodeIDs(m map[string]Node) []string {
	out := make([]string, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// pick returns up to k ids of the ascending list ids whose node is eligible:
// first the ids of prefer in the caller's order, then the rest by rank (lower
// first) and id. It runs in O(len(ids) × ranks) without sorting.
func pick(nodes map[string]Node, ids []string, k int, eligible func(Node) bool, rank func(Node) int, prefer []string) []string {
	if k <= 0 {
		return nil
	}
	var out []string
	var taken map[string]bool
	for _, id := range prefer {
		if len(out) == k {
			return out
		}
		if _, in := slices.BinarySearch(ids, id); !in || taken[id] || !eligible(nodes[id]) {
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
			n := nodes[id]
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

package vcluster

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Join returns s with node n registered: it joins the primary's undivided
// bucket, as every new node does. A node id is never reused, so an id
// already in the node table is invalid input. Node events cause no flush
// and no publish.
func (s State) Join(n Node) (State, error) {
	p := field.NewPath("node")
	errs := validNode(p, n)
	if s.Nodes.Has(n.ID) && n.ID != "" {
		errs = append(errs, invalid(p.Child("id"), n.ID, "Invalid request, node %s already exists; node ids are never reused.", n.ID))
	}
	if err := invalidInput(errs); err != nil {
		return State{}, err
	}
	out := s
	out.Nodes = s.Nodes.Set(n.ID, n)
	out.Primary.Buckets = maps.Clone(s.Primary.Buckets)
	if out.Primary.Buckets == nil {
		out.Primary.Buckets = map[string]map[string][]string{}
	}
	byBucket := maps.Clone(out.Primary.Buckets[n.Template])
	if byBucket == nil {
		byBucket = map[string][]string{}
	}
	byBucket[Undivided] = rebuild(byBucket[Undivided], nil, []string{n.ID})
	out.Primary.Buckets[n.Template] = byBucket
	return out, nil
}

// SetNode returns s with node id's liveness and busyness changed. A dead node
// stays in its bucket and keeps counting in replica sets; it never comes
// back alive (a restarted worker registers under a new id), and a dead node
// is never busy. Its cost does not grow with the node table: the new State
// shares all but O(log n) of the table with s. Use SetNodes for many nodes
// at once.
func (s State) SetNode(id string, alive, busy bool) (State, error) {
	if errs := s.nodeChangeErrors(nil, NodeChange{ID: id, Alive: alive, Busy: busy}); len(errs) > 0 {
		return State{}, invalidInput(errs)
	}
	n := s.Nodes.Node(id)
	n.Alive, n.Busy = alive, busy && alive
	out := s
	out.Nodes = s.Nodes.Set(id, n)
	return out, nil
}

// NodeChange is one node's new liveness and busyness, for SetNodes.
type NodeChange struct {
	ID    string `json:"id"`
	Alive bool   `json:"alive"`
	Busy  bool   `json:"busy"`
}

// SetNodes returns s with every change applied, as SetNode would one at a
// time, in one pass (the node events of a heartbeat sweep, 25,000 nodes
// marked dead at once). The changes are validated together first: every
// unknown id, dead node coming back alive and id changed twice is reported
// at once, each under its path (changes[3].id, changes[5].alive), in an
// error wrapping ErrNotFound when every problem is an unknown node, else
// ErrInvalidInput; then nothing is changed. s itself never changes.
func (s State) SetNodes(changes []NodeChange) (State, error) {
	p := field.NewPath("changes")
	var errs field.ErrorList
	seen := make(map[string]int, len(changes))
	for i, c := range changes {
		if j, dup := seen[c.ID]; dup {
			errs = append(errs, invalid(p.Index(i).Child("id"), c.ID, "Invalid request, node %s is also changed by changes[%d].", c.ID, j))
			continue
		}
		seen[c.ID] = i
		errs = append(errs, s.nodeChangeErrors(p.Index(i), c)...)
	}
	if err := invalidInput(errs); err != nil {
		return State{}, err
	}
	edit := &batchEdit{} // nodes copied by this batch change in place; s's never
	nodes := s.Nodes
	for _, c := range changes {
		n := nodes.Node(c.ID)
		n.Alive, n.Busy = c.Alive, c.Busy && c.Alive
		nodes = nodes.set(c.ID, n, edit)
	}
	out := s
	out.Nodes = nodes
	return out, nil
}

// nodeChangeErrors returns the faults of change c under path p (nil: the
// fields at the top level, as SetNode names them).
func (s State) nodeChangeErrors(p *field.Path, c NodeChange) field.ErrorList {
	child := func(name string) *field.Path {
		if p == nil {
			return field.NewPath(name)
		}
		return p.Child(name)
	}
	n, ok := s.Nodes.Get(c.ID)
	switch {
	case !ok:
		return field.ErrorList{notFound(child("id"), c.ID, "The node %s does not exist.", c.ID)}
	case c.Alive && !n.Alive:
		return field.ErrorList{invalid(child("alive"), c.Alive, "Invalid request, node %s is dead and can not come back alive.", c.ID)}
	}
	return nil
}

// SetDetached returns s with the detached-object count of indivisible or job
// cluster id set to count.
func (s State) SetDetached(id string, count int) (State, error) {
	c, ok := s.Cluster(id)
	switch {
	case !ok:
		return State{}, invalidInput(field.ErrorList{notFound(field.NewPath("id"), id, "The virtual cluster %s does not exist.", id)})
	case c.Kind.divisible():
		return State{}, invalidInput(field.ErrorList{invalid(field.NewPath("id"), id, "Invalid request, divisible cluster %s holds no detached objects.", id)})
	case count < 0:
		return State{}, invalidInput(field.ErrorList{invalid(field.NewPath("count"), count, "Invalid request, detached(%d) must >= 0, virtual_cluster_id: %s", count, id)})
	}
	c.Detached = count
	return s.withCluster(c), nil
}

// SetJobDead returns s with job cluster id's JobDead flag set to dead.
func (s State) SetJobDead(id string, dead bool) (State, error) {
	c, ok := s.Jobs[id]
	if !ok {
		return State{}, invalidInput(field.ErrorList{notFound(field.NewPath("id"), id, "The job cluster %s does not exist.", id)})
	}
	c.JobDead = dead
	return s.withCluster(c), nil
}

func (s State) withCluster(c Cluster) State {
	out := s
	if c.Kind == Job {
		out.Jobs = maps.Clone(s.Jobs)
		out.Jobs[c.ID] = c
	} else {
		out.Logical = maps.Clone(s.Logical)
		out.Logical[c.ID] = c
	}
	return out
}

// Clone returns a deep copy of s: nothing in it is shared with s but the
// node table, which never changes.
func (s State) Clone() State {
	out := State{Nodes: s.Nodes, Primary: cloneCluster(s.Primary)}
	if s.Logical != nil {
		out.Logical = make(map[string]Cluster, len(s.Logical))
		for id, c := range s.Logical {
			out.Logical[id] = cloneCluster(c)
		}
	}
	if s.Jobs != nil {
		out.Jobs = make(map[string]Cluster, len(s.Jobs))
		for id, c := range s.Jobs {
			out.Jobs[id] = cloneCluster(c)
		}
	}
	return out
}

func cloneCluster(c Cluster) Cluster {
	c.ZeroTemplates = slices.Clone(c.ZeroTemplates)
	if c.Buckets != nil {
		b := make(map[string]map[string][]string, len(c.Buckets))
		for t, byBucket := range c.Buckets {
			nb := make(map[string][]string, len(byBucket))
			for k, ids := range byBucket {
				nb[k] = slices.Clone(ids)
			}
			b[t] = nb
		}
		c.Buckets = b
	}
	return c
}

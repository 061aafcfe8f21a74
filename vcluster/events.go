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
	if _, dup := s.Nodes[n.ID]; dup && n.ID != "" {
		errs = append(errs, invalid(p.Child("id"), n.ID, "Invalid request, node %s already exists; node ids are never reused.", n.ID))
	}
	if err := invalidInput(errs); err != nil {
		return State{}, err
	}
	out := s
	out.Nodes = maps.Clone(s.Nodes)
	if out.Nodes == nil {
		out.Nodes = map[string]Node{}
	}
	out.Nodes[n.ID] = n
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
// is never busy.
func (s State) SetNode(id string, alive, busy bool) (State, error) {
	n, ok := s.Nodes[id]
	switch {
	case !ok:
		return State{}, invalidInput(field.ErrorList{notFound(field.NewPath("id"), id, "The node %s does not exist.", id)})
	case alive && !n.Alive:
		return State{}, invalidInput(field.ErrorList{invalid(field.NewPath("alive"), alive, "Invalid request, node %s is dead and can not come back alive.", id)})
	}
	n.Alive, n.Busy = alive, busy && alive
	out := s
	out.Nodes = maps.Clone(s.Nodes)
	out.Nodes[id] = n
	return out, nil
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

// Clone returns a deep copy of s: nothing in it is shared with s.
func (s State) Clone() State {
	out := State{Nodes: maps.Clone(s.Nodes), Primary: cloneCluster(s.Primary)}
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

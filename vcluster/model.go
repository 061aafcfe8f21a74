package vcluster

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PrimaryID is the id of the primary cluster, spelled as in the anchor.
const PrimaryID = "kPrimaryClusterID"

// Undivided is the bucket id of a cluster's undivided nodes (the anchor's NIL
// bucket). Every other bucket id is a job cluster id, which always contains
// JobSeparator, so the two can never collide.
const Undivided = "NIL"

// JobSeparator joins a parent cluster id and a job name into a job cluster id.
const JobSeparator = "##"

// Kind says what a cluster is and so which rules apply to it.
type Kind string

const (
	// Primary is the root cluster: it holds every node not handed to a logical
	// cluster, and it is divisible.
	Primary Kind = "primary"
	// Divisible is a logical cluster that lends nodes to job clusters and never
	// schedules work itself.
	Divisible Kind = "divisible"
	// Indivisible is a logical cluster that schedules work and cannot be divided.
	Indivisible Kind = "indivisible"
	// Job is an indivisible cluster divided from a divisible one for one job.
	Job Kind = "job"
)

// divisible reports whether clusters of kind k hold job buckets.
func (k Kind) divisible() bool { return k == Primary || k == Divisible }

// ReplicaSet maps a template (node type) to a node count.
type ReplicaSet map[string]int

// Node is one node instance. Liveness and busyness live only here; clusters
// hold node ids.
type Node struct {
	// ID is the node id; ids are never reused, and a dead node never comes back.
	ID string
	// Hostname is carried into records for workers.
	Hostname string
	// Template is the node type (RAY_NODE_TYPE_NAME in the anchor).
	Template string
	// Alive is false once the node is dead.
	Alive bool
	// Busy is the anchor's "not idle": the node is alive and runs normal tasks
	// or has any resource in use. The caller computes it from its resource view.
	Busy bool
}

// Idle reports whether n may leave an indivisible cluster: it is dead, or alive
// and not busy.
func (n Node) Idle() bool { return !n.Alive || !n.Busy }

// Cluster is the primary, a logical cluster or a job cluster.
//
// A job cluster's membership is its parent's bucket named after it, so a job
// Cluster carries only its own attributes and its Buckets is nil.
type Cluster struct {
	// ID is PrimaryID, a logical id, or parent + JobSeparator + job name.
	ID string
	// Kind is fixed at creation.
	Kind Kind
	// Revision is the caller-supplied revision of the last create or update.
	Revision uint64
	// Buckets maps template → bucket id (Undivided or a job cluster id) →
	// node ids in ascending order. Empty buckets and templates are absent.
	// Values reachable from a State are shared and must be treated as
	// immutable.
	Buckets map[string]map[string][]string
	// ZeroTemplates are templates a create named with count 0 and that still
	// have no node; they stay visible in the replica set as {t: 0}.
	ZeroTemplates []string
	// Detached counts live detached actors and placement groups (indivisible
	// and job clusters only); a positive count makes the cluster in use.
	Detached int
	// JobDead is set by the caller when a job cluster's job has finished.
	JobDead bool
}

// State is the whole hierarchy: one node table and the clusters.
//
// States are values. Planning functions and Apply never modify one; Apply
// returns a new State that shares every cluster the plan does not touch.
type State struct {
	// Nodes is the node table, id → node. Every node is in exactly one leaf
	// bucket. It is immutable: updates derive a new table that shares the
	// rest with the old one.
	Nodes NodeTable
	// Primary is the primary cluster (Kind Primary, ID PrimaryID).
	Primary Cluster
	// Logical maps id → logical cluster (Kind Divisible or Indivisible).
	Logical map[string]Cluster
	// Jobs maps job cluster id → job cluster (Kind Job).
	Jobs map[string]Cluster
}

// JobID returns the id of the job cluster of job in parent.
func JobID(parent, job string) string { return parent + JobSeparator + job }

// SplitJobID splits a job cluster id at its first JobSeparator. ok is false
// for an id that is not a job id.
func SplitJobID(id string) (parent, job string, ok bool) {
	return strings.Cut(id, JobSeparator)
}

// IsJobID reports whether id names a job cluster.
func IsJobID(id string) bool { return strings.Contains(id, JobSeparator) }

// NewState returns a state whose primary holds every given node in its
// undivided bucket, as after the anchor's node-table replay. It refuses, in
// an error wrapping ErrInvalidInput, every empty id or template, dead busy
// node and duplicate id.
func NewState(nodes []Node) (State, error) {
	s := State{
		Primary: Cluster{ID: PrimaryID, Kind: Primary, Buckets: map[string]map[string][]string{}},
		Logical: map[string]Cluster{},
		Jobs:    map[string]Cluster{},
	}
	var errs field.ErrorList
	p := field.NewPath("nodes")
	edit := &batchEdit{}
	for i, n := range nodes {
		if e := validNode(p.Index(i), n); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		if s.Nodes.Has(n.ID) {
			errs = append(errs, field.Duplicate(p.Index(i).Child("id"), n.ID))
			continue
		}
		s.Nodes = s.Nodes.set(n.ID, n, edit)
	}
	if err := invalidInput(errs); err != nil {
		return State{}, err
	}
	for _, id := range s.Nodes.IDs() {
		t := s.Nodes.Node(id).Template
		if s.Primary.Buckets[t] == nil {
			s.Primary.Buckets[t] = map[string][]string{}
		}
		s.Primary.Buckets[t][Undivided] = append(s.Primary.Buckets[t][Undivided], id)
	}
	return s, nil
}

// validNode returns the faults of node n at path p.
func validNode(p *field.Path, n Node) field.ErrorList {
	var errs field.ErrorList
	if n.ID == "" {
		errs = append(errs, field.Required(p.Child("id"), "Invalid request, the node id is empty."))
	}
	if n.Template == "" {
		errs = append(errs, field.Required(p.Child("template"), "Invalid request, node "+n.ID+" has an empty template."))
	}
	if !n.Alive && n.Busy {
		errs = append(errs, invalid(p.Child("busy"), n.Busy, "Invalid request, node %s is dead and busy.", n.ID))
	}
	return errs
}

// Cluster returns the cluster with id: the primary, a logical cluster or a
// job cluster.
func (s State) Cluster(id string) (Cluster, bool) {
	if id == PrimaryID {
		return s.Primary, s.Primary.ID == PrimaryID
	}
	if IsJobID(id) {
		c, ok := s.Jobs[id]
		return c, ok
	}
	c, ok := s.Logical[id]
	return c, ok
}

// holder returns the cluster whose Buckets hold id's nodes and the bucket id:
// a job cluster's nodes are its parent's bucket named after it.
func (s State) holder(id string) (Cluster, string, bool) {
	if IsJobID(id) {
		if _, ok := s.Jobs[id]; !ok {
			return Cluster{}, "", false
		}
		parent, _, _ := SplitJobID(id)
		p, ok := s.Cluster(parent)
		return p, id, ok
	}
	c, ok := s.Cluster(id)
	return c, "", ok
}

// Members returns every node id of cluster id, all buckets flattened, in
// ascending order. A job cluster's members are its parent's bucket of that
// name.
func (s State) Members(id string) []string {
	c, bucket, ok := s.holder(id)
	if !ok {
		return nil
	}
	var out []string
	for _, byBucket := range c.Buckets {
		for b, ids := range byBucket {
			if bucket == "" || b == bucket {
				out = append(out, ids...)
			}
		}
	}
	slices.Sort(out)
	return out
}

// ReplicaSet returns the node count per template of cluster id over all of
// its buckets, dead nodes included, plus {t: 0} for its ZeroTemplates. It is
// nil for an unknown id.
func (s State) ReplicaSet(id string) ReplicaSet {
	c, bucket, ok := s.holder(id)
	if !ok {
		return nil
	}
	rs := ReplicaSet{}
	for t, byBucket := range c.Buckets {
		for b, ids := range byBucket {
			if (bucket == "" || b == bucket) && len(ids) > 0 {
				rs[t] += len(ids)
			}
		}
	}
	if bucket == "" {
		for _, t := range c.ZeroTemplates {
			if _, ok := rs[t]; !ok {
				rs[t] = 0
			}
		}
	}
	return rs
}

// InUse reports whether cluster id may not be removed. A divisible cluster is
// in use while it has any job cluster, a dead one not yet collected included.
// An indivisible or job cluster is in use while it holds detached objects or
// any alive busy node; dead nodes count as idle. The anchor reads busyness
// from a lagging resource view; the core trusts its input.
func (s State) InUse(id string) bool {
	c, ok := s.Cluster(id)
	if !ok {
		return false
	}
	if c.Kind.divisible() {
		for _, byBucket := range c.Buckets {
			for b, ids := range byBucket {
				if b != Undivided && len(ids) > 0 {
					return true
				}
			}
		}
		for jid := range s.Jobs {
			if p, _, _ := SplitJobID(jid); p == id {
				return true
			}
		}
		return false
	}
	if c.Detached > 0 {
		return true
	}
	for _, nid := range s.Members(id) {
		if n := s.Nodes.Node(nid); n.Alive && n.Busy {
			return true
		}
	}
	return false
}

// bucket returns the ids of cluster c's bucket b of template t.
func bucket(c Cluster, t, b string) []string { return c.Buckets[t][b] }

// templates returns the templates of c in ascending order.
func templates(c Cluster) []string { return sortedKeys(c.Buckets) }

// sortedClusterIDs returns the keys of m in ascending order.
func sortedClusterIDs(m map[string]Cluster) []string { return sortedKeys(m) }

// sortedKeys returns the keys of m in ascending order, in one allocation
// (slices.Sorted(maps.Keys(m)) grows its slice as it goes; planners sort the
// templates of every cluster they visit).
func sortedKeys[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

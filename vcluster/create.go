package vcluster

import (
	"maps"
	"slices"
)

// Request asks to create or update a logical cluster.
type Request struct {
	// ID is the logical cluster id: non-empty, not PrimaryID, without
	// JobSeparator.
	ID string
	// Divisible is the kind of a new cluster; it cannot change afterwards.
	Divisible bool
	// ReplicaSets is the wanted node count per template. A template missing
	// from it means 0, so an empty map empties the cluster.
	ReplicaSets ReplicaSet
	// Revision must equal the cluster's current revision on update (optimistic
	// concurrency); it is ignored on create, where clients send 0.
	Revision uint64
	// Prefer lists node ids to pick first, in this order, when nodes are
	// added or removed; the rest follow the default order. Ids that are not
	// eligible are skipped.
	Prefer []string
	// Limits, when set, refuse counts outside the cluster's bounds
	// (InvalidArgument) and keep the primary's MinFree reserve: an addition
	// that would dip into it is OutOfResource, and the recommendation
	// respects it. The zero value limits nothing.
	Limits Limits
}

const (
	msgScaleDownShort = "No enough nodes to remove from the virtual cluster. The replica sets that gcs can remove at most are shown below. Use it as a suggestion to adjust your request or cluster."
	msgScaleUpShort   = "No enough nodes to add to the virtual cluster. The replica sets that gcs can add at most are shown below. Use it as a suggestion to adjust your request or cluster."
)

// checkLogicalID runs the id pre-checks of create/update.
func checkLogicalID(id string) error {
	switch {
	case id == "":
		return newError(InvalidArgument, "id", "Invalid request, the virtual cluster id is empty.")
	case id == PrimaryID:
		return newError(InvalidArgument, "id", "Invalid request, kPrimaryClusterID can not be created or updated.")
	case IsJobID(id):
		// The anchor accepts a##b and then reloads its record as a job
		// cluster of a after a restart (spec §2.6).
		return newError(InvalidArgument, "id", "Invalid request, the virtual cluster id %s must not contain \"##\".", id)
	}
	return nil
}

// checkReplicaSets checks every entry in template order (the anchor uses map
// order, so which bad entry it reports first varies).
func checkReplicaSets(id string, rs ReplicaSet) error {
	for _, t := range slices.Sorted(maps.Keys(rs)) {
		if rs[t] < 0 {
			return newError(InvalidArgument, "replica_sets["+t+"]", "Invalid request, replicas(%d) must >= 0, virtual_cluster_id: %s", rs[t], id)
		}
		if t == "" {
			return newError(InvalidArgument, "replica_sets", "Invalid request, template_id is empty, virtual_cluster_id: %s", id)
		}
	}
	return nil
}

// nextRevision is the revision a successful create or update assigns:
// strictly above the current one even when the caller's clock is behind.
func nextRevision(rev, current uint64) uint64 { return max(rev, current+1) }

// PlanCreateOrUpdate plans creating logical cluster req.ID, or resizing it
// when it exists, to exactly req.ReplicaSets.
//
// A scale-down takes nodes from the cluster's undivided bucket only: dead
// nodes first (the anchor may keep dead nodes and hand back alive ones; spec
// §2.2), then idle ones, then (divisible clusters only) busy ones, by
// ascending id; an indivisible cluster gives back idle nodes only. A
// scale-up takes alive nodes from the primary's undivided bucket, idle before
// busy, by ascending id (the anchor picks in hash order; §2.1). Every template
// is evaluated; if any falls short nothing moves, and the *Error recommends,
// per template of the delta, what could be found. The removal side is checked
// first and a short removal skips the addition side, as in the anchor.
//
// On success the cluster gets revision max(rev, current+1), is flushed, and
// is published when indivisible.
func PlanCreateOrUpdate(s State, req Request, rev uint64) (Plan, error) {
	if err := s.Validate(); err != nil {
		return Plan{}, err
	}
	if err := checkLogicalID(req.ID); err != nil {
		return Plan{}, err
	}
	if err := checkReplicaSets(req.ID, req.ReplicaSets); err != nil {
		return Plan{}, err
	}
	cur, exists := s.Logical[req.ID]
	if exists {
		if req.Revision != cur.Revision {
			return Plan{}, newError(InvalidArgument, "revision", "The revision (%d) is expired, the latest revision of the virtual cluster %s is %d", req.Revision, req.ID, cur.Revision)
		}
		if req.Divisible != (cur.Kind == Divisible) {
			return Plan{}, newError(InvalidArgument, "divisible", "The requested attributes are incompatible with virtual cluster %s. expect: (%d), actual: (%d).", req.ID, b2i(cur.Kind == Divisible), b2i(req.Divisible))
		}
	} else {
		cur = Cluster{ID: req.ID, Kind: Indivisible}
		if req.Divisible {
			cur.Kind = Divisible
		}
	}
	if err := req.Limits.Validate(); err != nil {
		return Plan{}, err
	}
	if err := req.Limits.checkBounds(req.ID, req.ReplicaSets); err != nil {
		return Plan{}, err
	}
	current := s.ReplicaSet(req.ID)

	var moves []Move
	remove := ReplicaSet{}
	for _, t := range slices.Sorted(maps.Keys(current)) {
		if n := current[t] - req.ReplicaSets[t]; n > 0 {
			remove[t] = n
		}
	}
	eligible := anyNode
	if cur.Kind == Indivisible {
		eligible = idleNode
	}
	found, short := ReplicaSet{}, false
	for _, t := range slices.Sorted(maps.Keys(remove)) {
		ids := pick(s.Nodes, bucket(cur, t, Undivided), remove[t], eligible, removeRank, req.Prefer)
		found[t] = len(ids)
		short = short || len(ids) < remove[t]
		for _, id := range ids {
			moves = append(moves, Move{Node: id, Template: t, From: Place{req.ID, Undivided}, To: Place{PrimaryID, Undivided}})
		}
	}
	if short {
		return Plan{}, &Error{Code: UnsafeToRemove, Field: "replica_sets", Message: msgScaleDownShort, Recommend: found}
	}
	found = ReplicaSet{}
	for _, t := range slices.Sorted(maps.Keys(req.ReplicaSets)) {
		need := req.ReplicaSets[t] - current[t]
		if need <= 0 {
			continue
		}
		ids := pick(s.Nodes, bucket(s.Primary, t, Undivided), need+req.Limits.MinFree[t], alive, addRank, req.Prefer)
		// The reserve stays in the primary: only what lies above it may go.
		ids = ids[:min(need, max(0, len(ids)-req.Limits.MinFree[t]))]
		found[t] = len(ids)
		short = short || len(ids) < need
		for _, id := range ids {
			moves = append(moves, Move{Node: id, Template: t, From: Place{PrimaryID, Undivided}, To: Place{req.ID, Undivided}})
		}
	}
	if short {
		return Plan{}, &Error{Code: OutOfResource, Field: "replica_sets", Message: msgScaleUpShort, Recommend: found}
	}

	p := Plan{Moves: moves, Flush: []string{req.ID}}
	newRev := nextRevision(rev, cur.Revision)
	var zero []string
	for _, t := range slices.Sorted(maps.Keys(req.ReplicaSets)) {
		// Only a create makes {t: 0} visible; an update keeps the entries a
		// create made as long as it still names them with 0.
		if req.ReplicaSets[t] == 0 && (!exists || slices.Contains(cur.ZeroTemplates, t)) {
			zero = append(zero, t)
		}
	}
	if exists {
		p.Revisions = []Revision{{Cluster: req.ID, Revision: newRev, ZeroTemplates: zero}}
	} else {
		p.Creates = []Cluster{{ID: req.ID, Kind: cur.Kind, Revision: newRev, ZeroTemplates: zero}}
	}
	if cur.Kind == Indivisible {
		p.Publish = []string{req.ID}
	}
	return p, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

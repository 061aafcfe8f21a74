package vcluster

import (
	"maps"
	"slices"
)

// JobRequest asks for a job cluster divided from a divisible cluster.
type JobRequest struct {
	// Parent is PrimaryID or a logical divisible cluster.
	Parent string
	// Job is the job name (the anchor uses the job's submission id); the job
	// cluster's id is JobID(Parent, Job).
	Job string
	// ReplicaSets is the node count per template the job needs.
	ReplicaSets ReplicaSet
	// Prefer lists node ids to pick first, in this order.
	Prefer []string
}

// PlanCreateJobCluster plans dividing job cluster JobID(req.Parent, req.Job)
// from its parent: alive nodes of the parent's undivided bucket (idle before
// busy, by id) move to the parent's bucket named after the job. The job
// cluster is created with revision rev, flushed and published; the parent's
// record is unchanged (records flatten buckets), so it is not flushed.
//
// The anchor skips negative counts silently and accepts an empty job name;
// both are InvalidArgument here (spec §2.10).
func PlanCreateJobCluster(s State, req JobRequest, rev uint64) (Plan, error) {
	if err := s.Validate(); err != nil {
		return Plan{}, err
	}
	id := JobID(req.Parent, req.Job)
	if req.Job == "" {
		return Plan{}, newError(InvalidArgument, "job", "Invalid request, the job name is empty, virtual_cluster_id: %s", req.Parent)
	}
	if err := checkReplicaSets(id, req.ReplicaSets); err != nil {
		return Plan{}, err
	}
	parent, ok := s.Cluster(req.Parent)
	if !ok || IsJobID(req.Parent) {
		return Plan{}, newError(NotFound, "parent", "virtual cluster not exists: %s", req.Parent)
	}
	if !parent.Kind.divisible() {
		return Plan{}, newError(InvalidArgument, "parent", " virtual cluster is not exclusive: %s", req.Parent)
	}
	if _, dup := s.Jobs[id]; dup {
		return Plan{}, newError(InvalidArgument, "job", "The job cluster %s already exists.", id)
	}
	var moves []Move
	found, short := ReplicaSet{}, false
	for _, t := range slices.Sorted(maps.Keys(req.ReplicaSets)) {
		need := req.ReplicaSets[t]
		if need == 0 {
			continue
		}
		ids := pick(s.Nodes, bucket(parent, t, Undivided), need, alive, addRank, req.Prefer)
		found[t] = len(ids)
		short = short || len(ids) < need
		for _, n := range ids {
			moves = append(moves, Move{Node: n, Template: t, From: Place{req.Parent, Undivided}, To: Place{req.Parent, id}})
		}
	}
	if short {
		return Plan{}, &Error{Code: OutOfResource, Field: "replica_sets", Message: "No enough node instances to create the job cluster " + id, Recommend: found}
	}
	return Plan{
		Creates: []Cluster{{ID: id, Kind: Job, Revision: rev}},
		Moves:   moves,
		Flush:   []string{id},
		Publish: []string{id},
	}, nil
}

// PlanRemove plans removing cluster id: a logical cluster, or a job cluster
// when id contains JobSeparator. Every node, dead ones included, returns to
// where it came from: a logical cluster's to the primary's undivided bucket,
// a job cluster's to its parent's undivided bucket. The removed cluster is
// flushed as deleted, and the removal is published unless the cluster was
// divisible.
//
// A cluster in use (State.InUse) is refused with UnsafeToRemove; for a job
// cluster the anchor returns a generic Invalid status instead.
func PlanRemove(s State, id string) (Plan, error) {
	if err := s.Validate(); err != nil {
		return Plan{}, err
	}
	switch {
	case id == "":
		return Plan{}, newError(InvalidArgument, "id", "Invalid request, the virtual cluster id is empty.")
	case id == PrimaryID:
		return Plan{}, newError(InvalidArgument, "id", "Invalid request, kPrimaryClusterID can not be removed.")
	}
	if IsJobID(id) {
		parentID, _, _ := SplitJobID(id)
		parent, ok := s.Cluster(parentID)
		if !ok {
			return Plan{}, newError(NotFound, "id", "Failed to remove virtual cluster, parent cluster not exists, virtual cluster id: %s", id)
		}
		if !parent.Kind.divisible() {
			return Plan{}, newError(InvalidArgument, "id", "Failed to remove virtual cluster, parent cluster is not divisible, virtual cluster id: %s", id)
		}
		if s.InUse(id) {
			return Plan{}, newError(UnsafeToRemove, "id", "Failed to remove virtual cluster, job cluster is in use, virtual cluster id: %s", id)
		}
		if _, ok := s.Jobs[id]; !ok {
			return Plan{}, newError(NotFound, "id", "The job cluster %s does not exist.", id)
		}
		return removeJob(parent, id), nil
	}
	c, ok := s.Logical[id]
	if !ok {
		return Plan{}, newError(NotFound, "id", "The logical cluster %s does not exist.", id)
	}
	if s.InUse(id) {
		return Plan{}, newError(UnsafeToRemove, "id", "The virtual cluster %s can not be removed as it is still in use. ", id)
	}
	p := Plan{Removes: []string{id}, Flush: []string{id}}
	for _, t := range templates(c) {
		for _, n := range bucket(c, t, Undivided) {
			p.Moves = append(p.Moves, Move{Node: n, Template: t, From: Place{id, Undivided}, To: Place{PrimaryID, Undivided}})
		}
	}
	if c.Kind == Indivisible {
		p.Publish = []string{id}
	}
	return p, nil
}

// removeJob returns the plan removing job cluster id of parent: its bucket
// goes back to the parent's undivided bucket.
func removeJob(parent Cluster, id string) Plan {
	p := Plan{Removes: []string{id}, Flush: []string{id}, Publish: []string{id}}
	for _, t := range templates(parent) {
		for _, n := range bucket(parent, t, id) {
			p.Moves = append(p.Moves, Move{Node: n, Template: t, From: Place{parent.ID, id}, To: Place{parent.ID, Undivided}})
		}
	}
	return p
}

// PlanGC plans removing every job cluster whose job is dead (JobDead) and
// which is not in use, in the primary and in every logical divisible
// cluster, in job id order. A job cluster that still holds detached objects
// or busy nodes is kept and collected by a later call (the anchor's lazy
// destruction). Revisions never change.
func PlanGC(s State) (Plan, error) {
	if err := s.Validate(); err != nil {
		return Plan{}, err
	}
	var out Plan
	for _, id := range sortedClusterIDs(s.Jobs) {
		if !s.Jobs[id].JobDead || s.InUse(id) {
			continue
		}
		parentID, _, _ := SplitJobID(id)
		parent, _ := s.Cluster(parentID)
		p := removeJob(parent, id)
		out.Moves = append(out.Moves, p.Moves...)
		out.Removes = append(out.Removes, id)
		out.Flush = append(out.Flush, id)
		out.Publish = append(out.Publish, id)
	}
	return out, nil
}

// PlanRemoveNodes plans removing the given nodes from logical cluster id and
// returning them to the primary's undivided bucket (anchor PRs #557, #599).
// Every node must be in the cluster's undivided bucket and idle (dead nodes
// are idle); otherwise nothing moves and the UnsafeToRemove error lists
// FailedNodes, with BusyNodes the subset to drain and retry. Duplicate ids
// count once.
//
// The anchor also scans job buckets, so a node could leave the parent while
// its job cluster still lists it, landing in the primary under the job's
// bucket id; it did not bump the revision and dereferenced null for a missing
// cluster (spec §2.7). Here only undivided nodes are eligible, the cluster
// gets revision max(rev, current+1), and a missing or job id is NotFound.
func PlanRemoveNodes(s State, id string, nodeIDs []string, rev uint64) (Plan, error) {
	if err := s.Validate(); err != nil {
		return Plan{}, err
	}
	switch {
	case id == "":
		return Plan{}, newError(InvalidArgument, "id", "Invalid request, the virtual cluster id is empty.")
	case id == PrimaryID:
		return Plan{}, newError(InvalidArgument, "id", "Invalid request, kPrimaryClusterID should not be updated via this API.")
	}
	c, ok := s.Logical[id]
	if !ok {
		return Plan{}, newError(NotFound, "id", "The logical cluster %s does not exist.", id)
	}
	if len(nodeIDs) == 0 {
		return Plan{}, newError(InvalidArgument, "node_ids", "Invalid request, no node to remove from the virtual cluster %s.", id)
	}
	ids := slices.Compact(slices.Sorted(slices.Values(nodeIDs)))
	var failed, busy []string
	for _, n := range ids {
		node, known := s.Nodes[n]
		if _, in := slices.BinarySearch(bucket(c, node.Template, Undivided), n); !known || !in {
			failed = append(failed, n)
			continue
		}
		if !node.Idle() {
			failed = append(failed, n)
			busy = append(busy, n)
		}
	}
	if len(failed) > 0 {
		return Plan{}, &Error{
			Code:        UnsafeToRemove,
			Field:       "node_ids",
			Message:     "Failed to remove some of the nodes because they are not idle nor found in the virtual cluster. These nodes with failure are shown below.",
			FailedNodes: failed,
			BusyNodes:   busy,
		}
	}
	p := Plan{
		Revisions: []Revision{{Cluster: id, Revision: nextRevision(rev, c.Revision), ZeroTemplates: slices.Clone(c.ZeroTemplates)}},
		Flush:     []string{id},
	}
	for _, n := range ids {
		p.Moves = append(p.Moves, Move{Node: n, Template: s.Nodes[n].Template, From: Place{id, Undivided}, To: Place{PrimaryID, Undivided}})
	}
	if c.Kind == Indivisible {
		p.Publish = []string{id}
	}
	return p, nil
}

package vcluster

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
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

// CreateJobClusterInput is everything PlanCreateJobCluster reads.
type CreateJobClusterInput struct {
	// State is the current hierarchy.
	State State
	// Request is the job cluster asked for.
	Request JobRequest
	// Revision is the new job cluster's revision.
	Revision uint64
}

// Validate reports every fault of the input, in an error wrapping
// ErrInvalidInput (ErrNotFound when only a missing parent is at fault).
func (in CreateJobClusterInput) Validate() error { return invalidInput(in.validate()) }

func (in CreateJobClusterInput) validate() field.ErrorList {
	errs := in.State.validate(statePath)
	p := field.NewPath("request")
	req, s := in.Request, in.State
	id := JobID(req.Parent, req.Job)
	if req.Job == "" {
		errs = append(errs, field.Required(p.Child("job"), fmt.Sprintf("Invalid request, the job name is empty, virtual_cluster_id: %s", req.Parent)))
	}
	errs = append(errs, checkReplicaSets(p.Child("replicaSets"), id, req.ReplicaSets)...)
	parent, ok := s.Cluster(req.Parent)
	switch {
	case !ok || IsJobID(req.Parent):
		errs = append(errs, notFound(p.Child("parent"), req.Parent, "virtual cluster not exists: %s", req.Parent))
	case !parent.Kind.divisible():
		errs = append(errs, invalid(p.Child("parent"), req.Parent, " virtual cluster is not exclusive: %s", req.Parent))
	}
	if _, dup := s.Jobs[id]; dup && req.Job != "" {
		errs = append(errs, invalid(p.Child("job"), req.Job, "The job cluster %s already exists.", id))
	}
	return errs
}

// PlanCreateJobCluster plans dividing job cluster JobID(Parent, Job) from
// its parent: alive nodes of the parent's undivided bucket (idle before
// busy, by id) move to the parent's bucket named after the job. The job
// cluster is created with in.Revision, flushed and published; the parent's
// record is unchanged (records flatten buckets), so it is not flushed. Too
// few nodes is a Refusal with ReasonOutOfResource and the recommendation.
//
// The anchor skips negative counts silently and accepts an empty job name;
// both are invalid input here.
func PlanCreateJobCluster(in CreateJobClusterInput) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	s, req := in.State, in.Request
	id := JobID(req.Parent, req.Job)
	parent, _ := s.Cluster(req.Parent)
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
			moves = append(moves, Move{Node: n, Template: t, From: Place{req.Parent, Undivided}, To: Place{req.Parent, id},
				Reason: withMessage(Reason{Code: ReasonDivideJob, Facts: ReasonFacts{Cluster: id, Template: t, Count: need}})})
		}
	}
	if short {
		p := refused(ReasonOutOfResource, field.NewPath("request", "replicaSets"), "No enough node instances to create the job cluster "+id)
		p.Refusal.Recommend, p.After = found, s
		return p, nil
	}
	return finish(s, Plan{
		Creates: []Creation{{Cluster: Cluster{ID: id, Kind: Job, Revision: in.Revision},
			Reason: withMessage(Reason{Code: ReasonDivideJob, Facts: ReasonFacts{Cluster: id, Parent: req.Parent, ReplicaSets: req.ReplicaSets}})}},
		Moves:   moves,
		Flush:   []string{id},
		Publish: []string{id},
	})
}

// RemoveInput is everything PlanRemove reads.
type RemoveInput struct {
	// State is the current hierarchy.
	State State
	// ID is the logical or job cluster to remove.
	ID string
}

// Validate reports every fault of the input, in an error wrapping
// ErrInvalidInput (ErrNotFound when only a missing cluster is at fault).
func (in RemoveInput) Validate() error { return invalidInput(in.validate()) }

func (in RemoveInput) validate() field.ErrorList {
	errs := in.State.validate(statePath)
	p, id, s := field.NewPath("id"), in.ID, in.State
	switch {
	case id == "":
		return append(errs, field.Required(p, "Invalid request, the virtual cluster id is empty."))
	case id == PrimaryID:
		return append(errs, invalid(p, id, "Invalid request, kPrimaryClusterID can not be removed."))
	case !IsJobID(id):
		if _, ok := s.Logical[id]; !ok {
			errs = append(errs, notFound(p, id, "The logical cluster %s does not exist.", id))
		}
		return errs
	}
	parentID, _, _ := SplitJobID(id)
	parent, ok := s.Cluster(parentID)
	_, exists := s.Jobs[id]
	switch {
	case !ok:
		errs = append(errs, notFound(p, id, "Failed to remove virtual cluster, parent cluster not exists, virtual cluster id: %s", id))
	case !parent.Kind.divisible():
		errs = append(errs, invalid(p, id, "Failed to remove virtual cluster, parent cluster is not divisible, virtual cluster id: %s", id))
	case !exists:
		errs = append(errs, notFound(p, id, "The job cluster %s does not exist.", id))
	}
	return errs
}

// PlanRemove plans removing cluster in.ID: a logical cluster, or a job
// cluster when the id contains JobSeparator. Every node, dead ones included,
// returns to where it came from: a logical cluster's to the primary's
// undivided bucket, a job cluster's to its parent's undivided bucket. The
// removed cluster is flushed as deleted, and the removal is published unless
// the cluster was divisible.
//
// A cluster in use (State.InUse) is a Refusal with ReasonUnsafeToRemove; for
// a job cluster the anchor returns a generic Invalid status instead.
func PlanRemove(in RemoveInput) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	s, id := in.State, in.ID
	if IsJobID(id) {
		if s.InUse(id) {
			p := refused(ReasonUnsafeToRemove, field.NewPath("id"), "Failed to remove virtual cluster, job cluster is in use, virtual cluster id: "+id)
			p.After = s
			return p, nil
		}
		parentID, _, _ := SplitJobID(id)
		parent, _ := s.Cluster(parentID)
		return finish(s, removeJob(parent, id, ReasonClusterRemoved))
	}
	c := s.Logical[id]
	if s.InUse(id) {
		p := refused(ReasonUnsafeToRemove, field.NewPath("id"), fmt.Sprintf("The virtual cluster %s can not be removed as it is still in use. ", id))
		p.After = s
		return p, nil
	}
	p := Plan{Removes: []Removal{{Cluster: id, Reason: Reason{Code: ReasonClusterRemoved, Message: "virtual cluster " + id + " is removed"}}}, Flush: []string{id}}
	for _, t := range templates(c) {
		for _, n := range bucket(c, t, Undivided) {
			p.Moves = append(p.Moves, Move{Node: n, Template: t, From: Place{id, Undivided}, To: Place{PrimaryID, Undivided},
				Reason: Reason{Code: ReasonClusterRemoved, Message: "virtual cluster " + id + " is removed"}})
		}
	}
	if c.Kind == Indivisible {
		p.Publish = []string{id}
	}
	return finish(s, p)
}

// removeJob returns the plan removing job cluster id of parent: its bucket
// goes back to the parent's undivided bucket.
func removeJob(parent Cluster, id string, code ReasonCode) Plan {
	msg := "job cluster " + id + " is removed"
	if code == ReasonJobFinished {
		msg = "the job of job cluster " + id + " has finished"
	}
	p := Plan{Removes: []Removal{{Cluster: id, Reason: Reason{Code: code, Message: msg}}}, Flush: []string{id}, Publish: []string{id}}
	for _, t := range templates(parent) {
		for _, n := range bucket(parent, t, id) {
			p.Moves = append(p.Moves, Move{Node: n, Template: t, From: Place{parent.ID, id}, To: Place{parent.ID, Undivided},
				Reason: Reason{Code: code, Message: msg}})
		}
	}
	return p
}

// GCInput is everything PlanGC reads.
type GCInput struct {
	// State is the current hierarchy.
	State State
}

// Validate reports every fault of the state, in an error wrapping
// ErrInvalidInput.
func (in GCInput) Validate() error { return in.State.Validate() }

// PlanGC plans removing every job cluster whose job is dead (JobDead) and
// which is not in use, in the primary and in every logical divisible
// cluster, in job id order. A job cluster that still holds detached objects
// or busy nodes is kept and collected by a later call (the anchor's lazy
// destruction). Revisions never change.
func PlanGC(in GCInput) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	s := in.State
	var out Plan
	for _, id := range sortedClusterIDs(s.Jobs) {
		if !s.Jobs[id].JobDead || s.InUse(id) {
			continue
		}
		parentID, _, _ := SplitJobID(id)
		parent, _ := s.Cluster(parentID)
		p := removeJob(parent, id, ReasonJobFinished)
		out.Moves = append(out.Moves, p.Moves...)
		out.Removes = append(out.Removes, p.Removes...)
		out.Flush = append(out.Flush, id)
		out.Publish = append(out.Publish, id)
	}
	return finish(s, out)
}

// RemoveNodesInput is everything PlanRemoveNodes reads.
type RemoveNodesInput struct {
	// State is the current hierarchy.
	State State
	// ID is the logical cluster to take the nodes from.
	ID string
	// Nodes are the ids of the nodes to remove; duplicates count once.
	Nodes []string
	// Revision is the caller's revision for this change; the cluster gets
	// max(Revision, current+1).
	Revision uint64
}

// Validate reports every fault of the input, in an error wrapping
// ErrInvalidInput (ErrNotFound when only a missing cluster is at fault).
func (in RemoveNodesInput) Validate() error { return invalidInput(in.validate()) }

func (in RemoveNodesInput) validate() field.ErrorList {
	errs := in.State.validate(statePath)
	p, id := field.NewPath("id"), in.ID
	switch c, ok := in.State.Logical[id]; {
	case id == "":
		errs = append(errs, field.Required(p, "Invalid request, the virtual cluster id is empty."))
	case id == PrimaryID:
		errs = append(errs, invalid(p, id, "Invalid request, kPrimaryClusterID should not be updated via this API."))
	case !ok:
		errs = append(errs, notFound(p, id, "The logical cluster %s does not exist.", id))
	default:
		errs = append(errs, checkRevisionLeft(field.NewPath("revision"), c)...)
	}
	if len(in.Nodes) == 0 {
		errs = append(errs, field.Required(field.NewPath("nodes"), fmt.Sprintf("Invalid request, no node to remove from the virtual cluster %s.", id)))
	}
	return errs
}

// PlanRemoveNodes plans removing the given nodes from logical cluster in.ID
// and returning them to the primary's undivided bucket (anchor PRs #557,
// #599). Every node must be in the cluster's undivided bucket and idle (dead
// nodes are idle); otherwise nothing moves and the plan is a Refusal with
// ReasonUnsafeToRemove whose FailedNodes lists them, with BusyNodes the
// subset to drain and retry. Duplicate ids count once.
//
// The anchor also scans job buckets, so a node could leave the parent while
// its job cluster still lists it, landing in the primary under the job's
// bucket id; it did not bump the revision and dereferenced null for a missing
// cluster. Here only undivided nodes are eligible, the cluster gets revision
// max(in.Revision, current+1), and a missing or job id is ErrNotFound.
func PlanRemoveNodes(in RemoveNodesInput) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	s, id := in.State, in.ID
	c := s.Logical[id]
	ids := slices.Compact(slices.Sorted(slices.Values(in.Nodes)))
	var failed, busy []string
	for _, n := range ids {
		node, known := s.Nodes.Get(n)
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
		p := refused(ReasonUnsafeToRemove, field.NewPath("nodes"), "Failed to remove some of the nodes because they are not idle nor found in the virtual cluster. These nodes with failure are shown below.")
		p.Refusal.FailedNodes, p.Refusal.BusyNodes, p.After = failed, busy, s
		return p, nil
	}
	p := Plan{
		Revisions: []Revision{{Cluster: id, Revision: nextRevision(in.Revision, c.Revision), ZeroTemplates: slices.Clone(c.ZeroTemplates),
			Reason: withMessage(Reason{Code: ReasonNodeRemoved, Facts: ReasonFacts{Cluster: id, Count: len(ids)}})}},
		Flush: []string{id},
	}
	for _, n := range ids {
		p.Moves = append(p.Moves, Move{Node: n, Template: s.Nodes.Node(n).Template, From: Place{id, Undivided}, To: Place{PrimaryID, Undivided},
			Reason: Reason{Code: ReasonNodeRemoved, Message: "node removed from virtual cluster " + id}})
	}
	if c.Kind == Indivisible {
		p.Publish = []string{id}
	}
	return finish(s, p)
}

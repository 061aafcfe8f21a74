package vcluster

import (
	"maps"
	"math"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
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
	// Limits, when set, refuse counts outside the cluster's bounds (invalid
	// input) and keep the primary's MinFree reserve: an addition that would
	// dip into it is refused with ReasonOutOfResource, and the
	// recommendation respects it. The zero value limits nothing.
	Limits Limits
}

// CreateOrUpdateInput is everything PlanCreateOrUpdate reads.
type CreateOrUpdateInput struct {
	// State is the current hierarchy.
	State State
	// Request is the cluster asked for.
	Request Request
	// Revision is the caller's revision for this change (the anchor uses the
	// current time); the cluster gets max(Revision, current+1).
	Revision uint64
}

// Validate reports every fault of the input, in an error wrapping
// ErrInvalidInput (ErrNotFound when only missing clusters are at fault).
func (in CreateOrUpdateInput) Validate() error { return invalidInput(in.validate()) }

func (in CreateOrUpdateInput) validate() field.ErrorList {
	errs := in.State.validate(statePath)
	p := field.NewPath("request")
	req := in.Request
	errs = append(errs, checkLogicalID(p.Child("id"), req.ID)...)
	errs = append(errs, checkReplicaSets(p.Child("replicaSets"), req.ID, req.ReplicaSets)...)
	limitErrs := req.Limits.validate(p.Child("limits"))
	errs = append(errs, limitErrs...)
	if cur, exists := in.State.Logical[req.ID]; exists {
		errs = append(errs, checkUpdate(p, req, cur)...)
	}
	if len(limitErrs) > 0 {
		return errs // bounds that are themselves wrong say nothing about the counts
	}
	return append(errs, req.Limits.checkBounds(p.Child("replicaSets"), req.ID, req.ReplicaSets)...)
}

// checkUpdate runs the checks of an update of cur: the revision is current
// and not exhausted, and the kind is unchanged.
func checkUpdate(p *field.Path, req Request, cur Cluster) field.ErrorList {
	var errs field.ErrorList
	if req.Revision != cur.Revision {
		errs = append(errs, invalid(p.Child("revision"), revisionValue(req.Revision), "The revision (%d) is expired, the latest revision of the virtual cluster %s is %d", req.Revision, req.ID, cur.Revision))
	}
	errs = append(errs, checkRevisionLeft(p.Child("revision"), cur)...)
	if req.Divisible != (cur.Kind == Divisible) {
		errs = append(errs, invalid(p.Child("divisible"), req.Divisible, "The requested attributes are incompatible with virtual cluster %s. expect: (%d), actual: (%d).", req.ID, b2i(cur.Kind == Divisible), b2i(req.Divisible)))
	}
	return errs
}

// checkRevisionLeft refuses to change a cluster whose revision is already the
// largest one: no later revision exists, and wrapping to 0 would reorder it
// behind every older one.
func checkRevisionLeft(p *field.Path, cur Cluster) field.ErrorList {
	if cur.Revision == math.MaxUint64 {
		return field.ErrorList{invalid(p, revisionValue(cur.Revision), "The revision of the virtual cluster %s is %d, the largest; it can not be updated any more.", cur.ID, cur.Revision)}
	}
	return nil
}

const (
	msgScaleDownShort = "No enough nodes to remove from the virtual cluster. The replica sets that gcs can remove at most are shown below. Use it as a suggestion to adjust your request or cluster."
	msgScaleUpShort   = "No enough nodes to add to the virtual cluster. The replica sets that gcs can add at most are shown below. Use it as a suggestion to adjust your request or cluster."
)

// checkLogicalID runs the id pre-checks of create/update.
func checkLogicalID(p *field.Path, id string) field.ErrorList {
	switch {
	case id == "":
		return field.ErrorList{field.Required(p, "Invalid request, the virtual cluster id is empty.")}
	case id == PrimaryID:
		return field.ErrorList{invalid(p, id, "Invalid request, kPrimaryClusterID can not be created or updated.")}
	case IsJobID(id):
		// The anchor accepts a##b and then reloads its record as a job
		// cluster of a after a restart.
		return field.ErrorList{invalid(p, id, "Invalid request, the virtual cluster id %s must not contain \"##\".", id)}
	}
	return nil
}

// checkReplicaSets checks every entry in template order (the anchor uses map
// order, so which bad entry it reports first varies) and reports them all.
func checkReplicaSets(p *field.Path, id string, rs ReplicaSet) field.ErrorList {
	var errs field.ErrorList
	for _, t := range slices.Sorted(maps.Keys(rs)) {
		switch {
		case rs[t] < 0:
			errs = append(errs, invalid(p.Key(t), rs[t], "Invalid request, replicas(%d) must >= 0, virtual_cluster_id: %s", rs[t], id))
		case rs[t] > maxReplicas:
			errs = append(errs, invalid(p.Key(t), rs[t], "Invalid request, replicas(%d) must <= %d, virtual_cluster_id: %s", rs[t], maxReplicas, id))
		}
		if t == "" {
			errs = append(errs, invalid(p, "", "Invalid request, template_id is empty, virtual_cluster_id: %s", id))
		}
	}
	return errs
}

// nextRevision is the revision a successful create or update assigns:
// strictly above the current one even when the caller's clock is behind.
// Validation refuses a current revision of MaxUint64, so current+1 never
// wraps.
func nextRevision(rev, current uint64) uint64 { return max(rev, current+1) }

// PlanCreateOrUpdate plans creating logical cluster in.Request.ID, or
// resizing it when it exists, to exactly in.Request.ReplicaSets.
//
// A scale-down takes nodes from the cluster's undivided bucket only: dead
// nodes first (the anchor may keep dead nodes and hand back alive ones),
// then idle ones, then (divisible clusters only) busy ones, by ascending id;
// an indivisible cluster gives back idle nodes only. A scale-up takes alive
// nodes from the primary's undivided bucket, idle before busy, by ascending
// id (the anchor picks in hash order). Every template is evaluated; if any
// falls short nothing moves, and the plan is a Refusal (ReasonUnsafeToRemove
// or ReasonOutOfResource) that recommends, per template of the delta, what
// could be found. The removal side is checked first and a short removal
// skips the addition side, as in the anchor.
//
// On success the cluster gets revision max(in.Revision, current+1), is
// flushed, and is published when indivisible. Invalid input (the anchor's
// InvalidArgument) is an error wrapping ErrInvalidInput; o is not read by
// this planner but validated.
func PlanCreateOrUpdate(in CreateOrUpdateInput) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	s, req := in.State, in.Request
	cur, exists := s.Logical[req.ID]
	if !exists {
		cur = Cluster{ID: req.ID, Kind: Indivisible}
		if req.Divisible {
			cur.Kind = Divisible
		}
	}
	moves, refusal := resizeMoves(s, cur, req)
	if refusal != nil {
		return Plan{Refusal: refusal, After: s}, nil
	}
	p := Plan{Moves: moves, Flush: []string{req.ID}}
	newRev := nextRevision(in.Revision, cur.Revision)
	zero := zeroTemplates(req, cur, exists)
	if exists {
		p.Revisions = []Revision{{Cluster: req.ID, Revision: newRev, ZeroTemplates: zero,
			Reason: withMessage(Reason{Code: ReasonClusterUpdated, Facts: ReasonFacts{Cluster: req.ID, ReplicaSets: req.ReplicaSets}})}}
	} else {
		p.Creates = []Creation{{Cluster: Cluster{ID: req.ID, Kind: cur.Kind, Revision: newRev, ZeroTemplates: zero},
			Reason: withMessage(Reason{Code: ReasonClusterCreated, Facts: ReasonFacts{Cluster: req.ID, ReplicaSets: req.ReplicaSets}})}}
	}
	if cur.Kind == Indivisible {
		p.Publish = []string{req.ID}
	}
	return finish(s, p)
}

// resizeMoves returns the moves that bring cluster cur (in s, or new) to
// req.ReplicaSets, or the refusal when some template falls short.
func resizeMoves(s State, cur Cluster, req Request) ([]Move, *Refusal) {
	current := s.ReplicaSet(req.ID)
	down, found, short := shrinkMoves(s, cur, req, current)
	if short {
		return nil, &Refusal{Reason: Reason{Code: ReasonUnsafeToRemove, Message: msgScaleDownShort}, Field: "request.replicaSets", Recommend: found}
	}
	up, found, short := growMoves(s, req, current)
	if short {
		return nil, &Refusal{Reason: Reason{Code: ReasonOutOfResource, Message: msgScaleUpShort}, Field: "request.replicaSets", Recommend: found}
	}
	return append(down, up...), nil
}

// shrinkMoves picks, per template the request lowers, the nodes that leave
// cur's undivided bucket for the primary.
func shrinkMoves(s State, cur Cluster, req Request, current ReplicaSet) ([]Move, ReplicaSet, bool) {
	eligible := anyNode
	if cur.Kind == Indivisible {
		eligible = idleNode
	}
	var moves []Move
	found, short := ReplicaSet{}, false
	for _, t := range slices.Sorted(maps.Keys(current)) {
		n := current[t] - req.ReplicaSets[t]
		if n <= 0 {
			continue
		}
		ids := pick(s.Nodes, bucket(cur, t, Undivided), n, eligible, removeRank, req.Prefer)
		found[t] = len(ids)
		short = short || len(ids) < n
		for _, id := range ids {
			moves = append(moves, Move{Node: id, Template: t, From: Place{req.ID, Undivided}, To: Place{PrimaryID, Undivided},
				Reason: withMessage(Reason{Code: ReasonScaleDown, Facts: ReasonFacts{Cluster: req.ID, Template: t, Count: req.ReplicaSets[t]}})})
		}
	}
	return moves, found, short
}

// growMoves picks, per template the request raises, the alive nodes that
// leave the primary's undivided bucket, above its MinFree reserve.
func growMoves(s State, req Request, current ReplicaSet) ([]Move, ReplicaSet, bool) {
	var moves []Move
	found, short := ReplicaSet{}, false
	for _, t := range slices.Sorted(maps.Keys(req.ReplicaSets)) {
		need := req.ReplicaSets[t] - current[t]
		if need <= 0 {
			continue
		}
		reserve := req.Limits.MinFree[t]
		ids := pick(s.Nodes, bucket(s.Primary, t, Undivided), satAdd(need, reserve), alive, addRank, req.Prefer)
		// The reserve stays in the primary: only what lies above it may go.
		ids = ids[:min(need, max(0, len(ids)-reserve))]
		found[t] = len(ids)
		short = short || len(ids) < need
		for _, id := range ids {
			moves = append(moves, Move{Node: id, Template: t, From: Place{PrimaryID, Undivided}, To: Place{req.ID, Undivided},
				Reason: withMessage(Reason{Code: ReasonScaleUp, Facts: ReasonFacts{Cluster: req.ID, Template: t, Count: req.ReplicaSets[t]}})})
		}
	}
	return moves, found, short
}

// zeroTemplates returns the {t: 0} entries the cluster keeps visible: only a
// create makes them; an update keeps the entries a create made as long as
// it still names them with 0.
func zeroTemplates(req Request, cur Cluster, exists bool) []string {
	var zero []string
	for _, t := range slices.Sorted(maps.Keys(req.ReplicaSets)) {
		if req.ReplicaSets[t] == 0 && (!exists || slices.Contains(cur.ZeroTemplates, t)) {
			zero = append(zero, t)
		}
	}
	return zero
}

// finish sets p.After to the state p leads to from s. A planner's plan
// always fits the state it was made from; a mismatch is a bug reported as an
// error wrapping ErrPlanMismatch.
func finish(s State, p Plan) (Plan, error) {
	after, err := s.next(p, true)
	if err != nil {
		return Plan{}, err
	}
	p.After = after
	return p, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

package vcluster

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plancore/plancore"
)

var (
	// ErrInvalidInput is wrapped by every error that refuses an input: a
	// malformed, stale or incompatible request or state (the anchor's
	// InvalidArgument) and a missing cluster or node (ErrNotFound). The error
	// is a *plancore.InvalidError that names every field at fault.
	ErrInvalidInput = errors.New("vcluster: invalid input")
	// ErrInvalidOptions is wrapped by every error Options.Validate returns.
	ErrInvalidOptions = errors.New("vcluster: invalid options")
	// ErrNotFound is the kind of an invalid-input error whose every problem is
	// a cluster or node that does not exist (the anchor's NotFound). It wraps
	// ErrInvalidInput, so errors.Is(err, ErrInvalidInput) holds too.
	ErrNotFound = fmt.Errorf("%w: not found", ErrInvalidInput)
	// ErrNilExecutor is returned by Apply when it is given no executor.
	ErrNilExecutor = plancore.SubError("vcluster: nil executor", ErrInvalidInput)
	// ErrRefusedPlan is returned by Apply for a refused plan: a refusal is an
	// answer to act on (retry with Refusal.Recommend, drain the busy nodes),
	// not a plan to write.
	ErrRefusedPlan = errors.New("vcluster: the plan is a refusal")
	// ErrPlanMismatch is returned by State.Next when a plan does not fit the
	// state it is applied to (a node is not where a move says it is): the
	// plan was made from a different state. Apply returns it for a plan that
	// no planning function made.
	ErrPlanMismatch = errors.New("vcluster: plan does not fit the state")
	// ErrBadRecord is wrapped by UnmarshalRecord for undecodable input.
	ErrBadRecord = errors.New("vcluster: bad record")
)

// ReasonCode says, in one word, why a plan moves a node or refuses to act.
// The codes are part of the API: match on them, never on Message.
type ReasonCode string

const (
	// ReasonOutOfResource refuses an addition: not enough alive undivided
	// nodes (the anchor's OutOfResource status).
	ReasonOutOfResource ReasonCode = "OutOfResource"
	// ReasonUnsafeToRemove refuses a removal: not enough idle nodes to give
	// back, or the cluster is in use (the anchor's UnsafeToRemove status).
	ReasonUnsafeToRemove ReasonCode = "UnsafeToRemove"

	// ReasonClusterCreated creates a logical cluster.
	ReasonClusterCreated ReasonCode = "ClusterCreated"
	// ReasonClusterUpdated sets the new revision of a resized cluster.
	ReasonClusterUpdated ReasonCode = "ClusterUpdated"
	// ReasonDeadNodePurged drops a dead node of the primary from the model:
	// replay after a restart would not bring it back either.
	ReasonDeadNodePurged ReasonCode = "DeadNodePurged"
	// ReasonRecordDropped deletes a stored record PlanRecover did not keep.
	ReasonRecordDropped ReasonCode = "RecordDropped"

	// ReasonScaleUp moves a node from the primary into a cluster that grows.
	ReasonScaleUp ReasonCode = "ScaleUp"
	// ReasonScaleDown moves a node out of a cluster that shrinks.
	ReasonScaleDown ReasonCode = "ScaleDown"
	// ReasonDivideJob creates a job cluster and moves a node into its bucket.
	ReasonDivideJob ReasonCode = "DivideJob"
	// ReasonClusterRemoved removes a cluster and returns its nodes to where
	// they came from.
	ReasonClusterRemoved ReasonCode = "ClusterRemoved"
	// ReasonNodeRemoved returns a node named by PlanRemoveNodes to the
	// primary, and sets the cluster's new revision.
	ReasonNodeRemoved ReasonCode = "NodeRemoved"
	// ReasonReplaceDeadNode moves an alive node into a dead node's bucket.
	ReasonReplaceDeadNode ReasonCode = "ReplaceDeadNode"
	// ReasonReturnDeadNode moves the dead node it replaces to the provider.
	ReasonReturnDeadNode ReasonCode = "ReturnDeadNode"
	// ReasonJobFinished removes a finished job cluster and returns its nodes
	// to its parent (PlanGC).
	ReasonJobFinished ReasonCode = "JobFinished"
)

// Reason is the code and the human-readable explanation of one move or one
// refusal. Message carries the anchor's text byte for byte where it has one.
// The facts the message states are fields beside it, so a program never
// parses Message; each message is rendered from them.
type Reason = plancore.Reason[ReasonCode, ReasonFacts]

// ReasonFacts are the facts a Reason states; zero where its code states none.
type ReasonFacts struct {
	// Cluster is the virtual cluster concerned: the one created, resized,
	// divided or shrunk, or the consumer whose dead node is replaced.
	Cluster string `json:"cluster,omitempty"`
	// Parent is the cluster a job cluster is divided from (DivideJob).
	Parent string `json:"parent,omitempty"`
	// ReplicaSets is the request's replica sets (ClusterCreated,
	// ClusterUpdated, and DivideJob on the create).
	ReplicaSets ReplicaSet `json:"replicaSets,omitempty"`
	// Template and Count are the template and the node count a move works
	// towards (ScaleUp, ScaleDown: the target; DivideJob: the nodes taken);
	// Count alone is the nodes removed (NodeRemoved).
	Template string `json:"template,omitempty"`
	Count    int    `json:"count,omitempty"`
	// Node is the other node of a swap: the dead node replaced
	// (ReplaceDeadNode) or the node replacing it (ReturnDeadNode).
	Node string `json:"node,omitempty"`
}

// withMessage renders r's message from its fields: the one place the
// messages of moves, creations and revisions are written. The messages of
// moves, rendered once per moved node, are concatenated
// rather than formatted: a replenish of 1,000 dead nodes renders 2,000.
func withMessage(r Reason) Reason {
	switch {
	case r.Code == ReasonClusterUpdated:
		r.Message = fmt.Sprintf("virtual cluster %s resized to %s", r.Facts.Cluster, r.Facts.ReplicaSets)
	case r.Code == ReasonClusterCreated:
		r.Message = fmt.Sprintf("virtual cluster %s created with %s", r.Facts.Cluster, r.Facts.ReplicaSets)
	case r.Code == ReasonScaleDown:
		r.Message = r.Facts.Cluster + " shrinks to " + strconv.Itoa(r.Facts.Count) + " " + r.Facts.Template + " node(s)"
	case r.Code == ReasonScaleUp:
		r.Message = r.Facts.Cluster + " grows to " + strconv.Itoa(r.Facts.Count) + " " + r.Facts.Template + " node(s)"
	case r.Code == ReasonDivideJob && r.Facts.Parent != "":
		r.Message = fmt.Sprintf("job cluster %s divided from %s with %s", r.Facts.Cluster, r.Facts.Parent, r.Facts.ReplicaSets)
	case r.Code == ReasonDivideJob:
		r.Message = "job cluster " + r.Facts.Cluster + " takes " + strconv.Itoa(r.Facts.Count) + " " + r.Facts.Template + " node(s)"
	case r.Code == ReasonNodeRemoved:
		r.Message = fmt.Sprintf("%d node(s) removed from virtual cluster %s", r.Facts.Count, r.Facts.Cluster)
	case r.Code == ReasonReplaceDeadNode || r.Code == ReasonReturnDeadNode:
		w := swapWords(r)
		r.Message = w[0] + w[1] + w[2] + w[3]
	}
	return r
}

// Refusal is a planning call that cannot act now: the input is valid, but
// there are not enough nodes to add or the nodes or cluster cannot be given
// back safely. A refused plan moves nothing (all-or-nothing), and Apply
// refuses it (ErrRefusedPlan) so that it is never taken for an empty one.
//
// A refusal carries no wake-up: the planners read no clock, and what lifts a
// refusal is a change of the state (a node joins or turns idle, a job
// ends), which the caller sees as an event and plans again on.
type Refusal struct {
	// Reason is ReasonOutOfResource or ReasonUnsafeToRemove, with the
	// anchor's message.
	Reason Reason `json:"reason"`
	// Field is the path of the input the refusal is about
	// ("request.replicaSets", "request.id", "request.nodes").
	Field string `json:"field"`
	// Recommend holds, for a refused replica-set request, the count per
	// template of the requested delta that could be found (at most the
	// amount asked; 0 entries included): the request to retry with.
	Recommend ReplicaSet `json:"recommend,omitempty"`
	// FailedNodes are the requested nodes that could not be removed, sorted.
	FailedNodes []string `json:"failedNodes,omitempty"`
	// BusyNodes is the subset of FailedNodes that are in the cluster but
	// busy: drain them and retry.
	BusyNodes []string `json:"busyNodes,omitempty"`
}

// String renders the code, the field and the message, then any
// recommendation and failed nodes, in a stable order.
func (r Refusal) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", r.Reason.Code)
	if r.Field != "" {
		fmt.Fprintf(&b, " (%s)", r.Field)
	}
	fmt.Fprintf(&b, ": %s", r.Reason.Message)
	if r.Recommend != nil {
		fmt.Fprintf(&b, " recommend %s", r.Recommend)
	}
	if len(r.FailedNodes) > 0 {
		fmt.Fprintf(&b, " failed_nodes %v", r.FailedNodes)
	}
	if len(r.BusyNodes) > 0 {
		fmt.Fprintf(&b, " busy_nodes %v", r.BusyNodes)
	}
	return b.String()
}

// refused returns the plan that refuses with code, field and message.
func refused(code ReasonCode, fld *field.Path, msg string) Plan {
	return Plan{Refusal: &Refusal{Reason: Reason{Code: code, Message: msg}, Field: fld.String()}}
}

// String renders rs as {a: 1, b: 2} in template order.
func (rs ReplicaSet) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, t := range slices.Sorted(maps.Keys(rs)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", t, rs[t])
	}
	b.WriteByte('}')
	return b.String()
}

// invalid returns a field error of type Invalid whose detail is the anchor's
// message.
func invalid(p *field.Path, value any, format string, args ...any) *field.Error {
	return field.Invalid(p, value, fmt.Sprintf(format, args...))
}

// revisionValue is a revision as a field error's bad value: a decimal
// number (uint64 values would render in hexadecimal).
func revisionValue(r uint64) any {
	if r <= math.MaxInt64 {
		return int64(r)
	}
	return strconv.FormatUint(r, 10)
}

// notFound returns a field error of type NotFound whose detail is the
// anchor's message.
func notFound(p *field.Path, value any, format string, args ...any) *field.Error {
	return &field.Error{Type: field.ErrorTypeNotFound, Field: p.String(), BadValue: value, Detail: fmt.Sprintf(format, args...)}
}

// invalidInput wraps errs: in ErrNotFound when every problem is a missing
// cluster or node, in ErrInvalidInput otherwise; nil when errs is empty.
func invalidInput(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	kind := ErrNotFound
	for _, e := range errs {
		if e.Type != field.ErrorTypeNotFound {
			kind = ErrInvalidInput
			break
		}
	}
	return plancore.Invalid(kind, errs)
}

// swapWords returns the message of a swap's move (ReplaceDeadNode or
// ReturnDeadNode) in four parts, words and facts, for withMessage and for
// PlanReplenish, which writes a whole plan's messages into one string.
func swapWords(r Reason) [4]string {
	if r.Code == ReasonReturnDeadNode {
		return [4]string{"dead node of ", r.Facts.Cluster, " replaced by ", r.Facts.Node}
	}
	return [4]string{"replaces dead node ", r.Facts.Node, " of ", r.Facts.Cluster}
}

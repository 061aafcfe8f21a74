package vcluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Code classifies a refused planning call, with the anchor's status codes.
type Code string

const (
	// InvalidArgument: the request or the state is malformed, stale or
	// incompatible.
	InvalidArgument Code = "InvalidArgument"
	// OutOfResource: not enough alive undivided nodes to add.
	OutOfResource Code = "OutOfResource"
	// UnsafeToRemove: not enough idle nodes to remove, or the cluster is in use.
	UnsafeToRemove Code = "UnsafeToRemove"
	// NotFound: the named cluster does not exist.
	NotFound Code = "NotFound"
)

var (
	// ErrInvalidArgument is wrapped by every *Error with Code InvalidArgument.
	ErrInvalidArgument = errors.New("vcluster: invalid argument")
	// ErrOutOfResource is wrapped by every *Error with Code OutOfResource.
	ErrOutOfResource = errors.New("vcluster: out of resource")
	// ErrUnsafeToRemove is wrapped by every *Error with Code UnsafeToRemove.
	ErrUnsafeToRemove = errors.New("vcluster: unsafe to remove")
	// ErrNotFound is wrapped by every *Error with Code NotFound.
	ErrNotFound = errors.New("vcluster: not found")
	// ErrPlanMismatch is returned by State.Apply when a plan does not fit the
	// state it is applied to (a node is not where a move says it is): the
	// plan was made from a different state.
	ErrPlanMismatch = errors.New("vcluster: plan does not fit the state")
	// ErrBadRecord is wrapped by UnmarshalRecord for undecodable input.
	ErrBadRecord = errors.New("vcluster: bad record")
)

// Error is a refused planning call. A call that returns an *Error returns an
// empty plan: nothing moves (all-or-nothing).
type Error struct {
	// Code is one of the four codes.
	Code Code
	// Field names the input at fault ("id", "replica_sets[4c8g]",
	// "revision", "divisible", "node_ids", ...).
	Field string
	// Message is the anchor's message, byte for byte where the anchor has one.
	Message string
	// Recommend holds, for OutOfResource and UnsafeToRemove on a replica-set
	// request, the count per template of the requested delta that could be
	// found (at most the amount asked; 0 entries included).
	Recommend ReplicaSet
	// FailedNodes are the requested nodes that could not be removed, sorted.
	FailedNodes []string
	// BusyNodes is the subset of FailedNodes that are in the cluster but busy:
	// drain them and retry.
	BusyNodes []string
}

// Error renders the code, the field and the message, then any recommendation
// and failed nodes, in a stable order.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "vcluster: %s", e.Code)
	if e.Field != "" {
		fmt.Fprintf(&b, " (%s)", e.Field)
	}
	fmt.Fprintf(&b, ": %s", e.Message)
	if e.Recommend != nil {
		fmt.Fprintf(&b, " recommend %s", e.Recommend)
	}
	if len(e.FailedNodes) > 0 {
		fmt.Fprintf(&b, " failed_nodes %v", e.FailedNodes)
	}
	if len(e.BusyNodes) > 0 {
		fmt.Fprintf(&b, " busy_nodes %v", e.BusyNodes)
	}
	return b.String()
}

// Unwrap returns the sentinel of e's code, so errors.Is(err, ErrNotFound)
// works.
func (e *Error) Unwrap() error {
	switch e.Code {
	case OutOfResource:
		return ErrOutOfResource
	case UnsafeToRemove:
		return ErrUnsafeToRemove
	case NotFound:
		return ErrNotFound
	default:
		return ErrInvalidArgument
	}
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

func newError(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

package reconcile

import "errors"

// ErrInvalidInput is wrapped by every error about a Snapshot (or a Cluster, or
// a Plan handed to Apply) that cannot be planned or applied: the error is a
// *plancore.InvalidError naming each bad field, its path and value.
var ErrInvalidInput = errors.New("reconcile: invalid input")

// ErrInvalidOptions is wrapped by Options.Validate, inside a
// *plancore.InvalidError naming each bad option.
var ErrInvalidOptions = errors.New("reconcile: invalid options")

// ErrInvalidPlan is wrapped by Apply when a plan is malformed (an action
// without its payload, a plan whose cluster has no UID while expectations are
// recorded). It wraps ErrInvalidInput.
var ErrInvalidPlan error = &finerError{msg: "reconcile: invalid plan", kind: ErrInvalidInput}

// ErrNilExecutor is returned by Apply for a nil Executor. It wraps
// ErrInvalidInput.
var ErrNilExecutor error = &finerError{msg: "reconcile: nil executor", kind: ErrInvalidInput}

// ErrExpectation is wrapped when Apply cannot record or conclude an
// expectation: the action is then a failure, because an unrecorded create is
// repeated by the next pass on a lagging cache.
var ErrExpectation = errors.New("reconcile: recording an expectation failed")

// ErrHash is wrapped when the spec hash cannot be computed.
var ErrHash = errors.New("reconcile: cannot hash spec")

// ErrPodBuilder is wrapped when Options.PodBuilder fails.
var ErrPodBuilder = errors.New("reconcile: pod builder failed")

// finerError is a sentinel that is also its kind (errors.Is(ErrInvalidPlan,
// ErrInvalidInput) holds) while keeping its own message.
type finerError struct {
	msg  string
	kind error
}

func (e *finerError) Error() string { return e.msg }
func (e *finerError) Unwrap() error { return e.kind }

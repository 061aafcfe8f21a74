package dag

import (
	"errors"

	"github.com/plancore/plancore"
)

// ErrInvalidInput is wrapped by every error about unusable input: a snapshot
// Decide refuses (zero Now, a previous phase that is no workflow phase, two
// observed jobs with one name), a spec Check refuses, or a nil executor. The
// error is a *plancore.InvalidError that names every offending field path and
// value.
var ErrInvalidInput = errors.New("dag: invalid input")

// ErrInvalidOptions is wrapped by Options.Validate, inside a
// *plancore.InvalidError naming every offending option.
var ErrInvalidOptions = errors.New("dag: invalid options")

// ErrNilExecutor is returned (wrapped with ErrInvalidInput) by Apply when it
// is given no executor.
var ErrNilExecutor = plancore.SubError("dag: nil executor", ErrInvalidInput)

// ErrSyntax is wrapped by every error of ParseDepends.
var ErrSyntax = errors.New("dag: depends expression syntax error")

// ErrAlreadyExists may be returned (wrapped) by Executor.CreateJob; Apply
// counts it as created, as Volcano does.
var ErrAlreadyExists = errors.New("dag: job already exists")

// ErrNotFound may be returned (wrapped) by Executor.DeleteJob; Apply counts
// it as deleted, except for retention deletes in the Volcano preset, where
// the anchor aborts on it.
var ErrNotFound = errors.New("dag: job not found")

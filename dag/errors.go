package dag

import "errors"

// ErrInvalidSpec is wrapped by every validation error: the workflow spec has
// cycles, unknown targets, duplicate or invalid names, or malformed
// extensions. The error lists every offender.
var ErrInvalidSpec = errors.New("dag: invalid workflow spec")

// ErrInvalidPhase is wrapped when the previous status holds a phase that is
// not a workflow phase (Volcano: "jobflow <name> state <phase> is invalid").
var ErrInvalidPhase = errors.New("dag: invalid workflow phase")

// ErrInvalidSnapshot is wrapped when the snapshot itself is unusable, e.g. two
// observed jobs share a name.
var ErrInvalidSnapshot = errors.New("dag: invalid snapshot")

// ErrInvalidOptions is wrapped by Options.Validate.
var ErrInvalidOptions = errors.New("dag: invalid options")

// ErrSyntax is wrapped by every error of ParseDepends.
var ErrSyntax = errors.New("dag: depends expression syntax error")

// ErrAlreadyExists may be returned (wrapped) by Executor.CreateJob; Apply
// counts it as created, as Volcano does.
var ErrAlreadyExists = errors.New("dag: job already exists")

// ErrNotFound may be returned (wrapped) by Executor.DeleteJob; Apply counts
// it as deleted, except for retention deletes in the Volcano preset, where
// the anchor aborts on it.
var ErrNotFound = errors.New("dag: job not found")

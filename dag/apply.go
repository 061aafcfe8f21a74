package dag

import (
	"context"
	"errors"
	"fmt"

	"github.com/plancore/plancore"
)

// Executor turns a plan into calls against a cluster. Methods MUST be
// idempotent: CreateJob returns nil or ErrAlreadyExists (wrapped) when the
// job exists, DeleteJob returns nil or ErrNotFound (wrapped) when it is gone.
type Executor interface {
	// CreateJob materialises the job from a deep copy of its template,
	// merges the patch, and creates it. A Volcano-compatible executor emits
	// the Normal event Created, "create a job named <name>!", on success.
	CreateJob(ctx context.Context, job CreateJob) error
	// DeleteJob deletes the job, with the UID as a precondition when set.
	DeleteJob(ctx context.Context, job DeleteJob) error
	// UpdateStatus writes the workflow's complete status.
	UpdateStatus(ctx context.Context, namespace, name string, status Status) error
}

// ActionKind names an applied action.
type ActionKind string

// Action kinds.
const (
	ActionDelete ActionKind = "Delete"
	ActionCreate ActionKind = "Create"
	ActionStatus ActionKind = "Status"
)

// ActionResult is what happened to one action.
type ActionResult struct {
	Kind ActionKind
	Name string
	// Err is nil for success (already-exists and not-found included, where
	// they count as success); Skipped is set when an earlier error stopped
	// Apply before this action.
	Err     error
	Skipped bool
}

// Report lists every action of a plan in the order Apply took them.
type Report struct {
	Actions []ActionResult
}

// Apply walks the plan: deletes (retry deletes and retention), then creates,
// in plan order, then the status write if the plan asks for one. The first
// failure stops it: the remaining actions and the status write are skipped,
// as in the anchor, whose sync is then retried with rate limiting; the
// caller re-plans from a fresh snapshot. ErrAlreadyExists on create and
// ErrNotFound on delete count as success, except a retention delete under
// Plan.StrictDelete (Volcano aborts on NotFound). Apply never re-plans. The
// error wraps the executor's; a nil executor is an error wrapping
// ErrNilExecutor and ErrInvalidInput, and nothing is done.
func Apply(ctx context.Context, plan Plan, exec Executor) (Report, error) {
	var rep Report
	if plancore.IsNil(exec) {
		return rep, ErrNilExecutor
	}
	var first error
	step := func(kind ActionKind, name string, do func() error) {
		if first != nil {
			rep.Actions = append(rep.Actions, ActionResult{Kind: kind, Name: name, Skipped: true})
			return
		}
		if err := ctx.Err(); err != nil {
			first = err
			rep.Actions = append(rep.Actions, ActionResult{Kind: kind, Name: name, Err: err})
			return
		}
		err := do()
		if err != nil {
			first = fmt.Errorf("%s %s: %w", kind, name, err)
		}
		rep.Actions = append(rep.Actions, ActionResult{Kind: kind, Name: name, Err: err})
	}
	for _, d := range plan.Delete {
		step(ActionDelete, d.Name, func() error {
			err := exec.DeleteJob(ctx, d)
			if errors.Is(err, ErrNotFound) && !(plan.StrictDelete && d.Reason.Code == ReasonRetention) {
				return nil
			}
			return err
		})
	}
	for _, c := range plan.Create {
		step(ActionCreate, c.Name, func() error {
			err := exec.CreateJob(ctx, c)
			if errors.Is(err, ErrAlreadyExists) {
				return nil
			}
			return err
		})
	}
	if plan.WriteStatus {
		step(ActionStatus, plan.Namespace+"/"+plan.Name, func() error {
			return exec.UpdateStatus(ctx, plan.Namespace, plan.Name, plan.Status)
		})
	}
	return rep, first
}

package vcluster

import (
	"context"
	"fmt"
	"slices"
)

// Executor writes plans out: records to storage and to every worker. Each
// method must be idempotent: flushing the same record twice leaves the same
// stored value, and deleting an absent record succeeds.
type Executor interface {
	// FlushRecord writes r as the stored record of r.ID, replacing any
	// previous one.
	FlushRecord(ctx context.Context, r Record) error
	// DeleteRecord deletes the stored record of id.
	DeleteRecord(ctx context.Context, id string) error
	// PublishRecord sends r to every worker. A record with Removed set
	// announces that the cluster is gone.
	PublishRecord(ctx context.Context, r Record) error
}

// Report says what Apply did, in call order.
type Report struct {
	Flushed   []string
	Deleted   []string
	Published []string
}

// Apply writes plan out through exec. after is the state the plan leads to
// (State.Apply of the plan on the state it was made from; for PlanRecover,
// the state it returned).
//
// For each id of plan.Flush in order, Apply writes RecordOf(after, id), or
// deletes the record when after has no such cluster, and then, only if that
// write succeeded and id is in plan.Publish, publishes the record (a removal
// record for a deleted cluster). It stops at the first error and returns it
// with the report of what succeeded; every call is idempotent, so the caller
// retries by applying the same plan with the same state again. Apply never
// re-plans.
func Apply(ctx context.Context, plan Plan, after State, exec Executor) (Report, error) {
	var rep Report
	for _, id := range plan.Flush {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if id == PrimaryID {
			return rep, fmt.Errorf("%w: the primary is never flushed", ErrPlanMismatch)
		}
		rec, ok := RecordOf(after, id)
		if ok {
			if err := exec.FlushRecord(ctx, rec); err != nil {
				return rep, fmt.Errorf("vcluster: flush %s: %w", id, err)
			}
			rep.Flushed = append(rep.Flushed, id)
		} else {
			rec = Record{ID: id, Removed: true, Nodes: map[string]RecordNode{}}
			if err := exec.DeleteRecord(ctx, id); err != nil {
				return rep, fmt.Errorf("vcluster: delete %s: %w", id, err)
			}
			rep.Deleted = append(rep.Deleted, id)
		}
		if !slices.Contains(plan.Publish, id) {
			continue
		}
		if rec.Divisible {
			return rep, fmt.Errorf("%w: divisible cluster %s is never published", ErrPlanMismatch, id)
		}
		if err := exec.PublishRecord(ctx, rec); err != nil {
			return rep, fmt.Errorf("vcluster: publish %s: %w", id, err)
		}
		rep.Published = append(rep.Published, id)
	}
	return rep, nil
}
